/**
 * A player's computers that work together (issue 35): they may create tasks for each other and follow and steer
 * each other's tasks without `server.crossClientAccess`, which would open every task to every computer. Two sources,
 * both set by the operator in `server.groups`: named groups of client ids, and (with `byOperatorKey`) the computers
 * that connect with the same operator key (the shared token or one operator key standing in for them) — connected
 * now, or offline and last connected with it (remembered on disk with the client, so a pocket can start a job on a
 * host that is rebooting, or before the orchestrator saw it again after a restart; the task waits for it). A
 * computer with its own key is in no key group (its key is its own): put it in a named group.
 */
import type { Principal } from '@ccagent/security';

/** The `server.groups` settings. */
export interface ComputerGroupsConfig {
  /** Group name → client ids. */
  named: Record<string, string[]>;
  /** Computers connected with the same operator key are one group. */
  byOperatorKey: boolean;
}

/** See the module comment. */
export class ComputerGroups {
  /** client id → names of its groups. */
  private readonly groupsOf = new Map<string, Set<string>>();

  /**
   * @param keyOf the key the client's open connection authenticated with (`Principal.actor`), or, offline, the one its
   *   last hello did; undefined for a client never seen or one with its own key.
   */
  constructor(
    private readonly o: ComputerGroupsConfig,
    private readonly keyOf: (clientId: string) => string | undefined,
  ) {
    for (const [name, members] of Object.entries(o.named)) {
      for (const id of members) {
        const set = this.groupsOf.get(id) ?? new Set<string>();
        set.add(name);
        this.groupsOf.set(id, set);
      }
    }
  }

  /** Whether any group is configured (the replay then also looks for tasks a client created for others). */
  get enabled(): boolean {
    return this.o.byOperatorKey || this.groupsOf.size > 0;
  }

  /** Whether `a` and `b` are two computers of one group (a computer is not its own peer). */
  together(a: string, b: string, aKey: string | undefined = this.keyOf(a)): boolean {
    if (a === b) return false;
    const mine = this.groupsOf.get(a);
    const theirs = this.groupsOf.get(b);
    if (mine && theirs) for (const g of mine) if (theirs.has(g)) return true;
    if (!this.o.byOperatorKey || aKey === undefined) return false;
    return this.keyOf(b) === aKey;
  }

  /** The peer test of the client behind `principal` (its key is the one of this very connection). */
  peerOf(
    clientId: string,
    principal: Pick<Principal, 'actor' | 'role'> | undefined,
  ): (other: string) => boolean {
    const key = principal?.role === 'computer' ? principal.actor : undefined;
    return (other) => this.together(clientId, other, key);
  }

  /**
   * The peer test of an HTTP caller (a computer key: its client id and key), or undefined when no group is configured
   * or the caller is not a computer (operators and viewers are decided by their role).
   */
  peerOfCaller(who: Principal | undefined): ((other: string) => boolean) | undefined {
    if (!this.enabled || who?.role !== 'computer' || who.clientId === undefined) return undefined;
    return this.peerOf(who.clientId, who);
  }
}
