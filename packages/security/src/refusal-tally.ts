/**
 * Bounds the audit rows that callers nobody authenticated can cause. A refused pairing request, a refused enrollment
 * code or pairing collect, and a throttled address each wrote one row per attempt, so anyone able to reach the server
 * could grow the audit table without bound (from as many addresses as they have). The tally writes the first refusal
 * of a kind (action and reason, not the caller: a spray of addresses must not buy rows) and then at most one row per
 * window, which says how many refusals of that kind it stands for.
 */

/** A refusal that is due a row: write it with `count` (this one and those folded into it since the last row). */
export interface TallyRow {
  count: number;
}

interface Kind {
  writtenAt: number;
  folded: number;
}

/** See the module comment. In memory: a restart forgets, which costs at most one row per kind. */
export class RefusalTally {
  private readonly kinds = new Map<string, Kind>();

  /**
   * @param windowMs at most one row per kind in this many milliseconds.
   * @param maxKinds kinds remembered at most (the oldest forgotten first); they are few (actions × reasons).
   */
  constructor(
    private readonly windowMs = 60_000,
    private readonly maxKinds = 256,
  ) {}

  /** Count one refusal of `kind` at `now`; a row to write when one is due, else undefined (it was counted). */
  refused(kind: string, now: number): TallyRow | undefined {
    const k = this.kinds.get(kind);
    if (k !== undefined && now - k.writtenAt < this.windowMs) {
      k.folded++;
      return undefined;
    }
    const count = (k?.folded ?? 0) + 1;
    this.kinds.delete(kind);
    this.kinds.set(kind, { writtenAt: now, folded: 0 });
    if (this.kinds.size > this.maxKinds) {
      const oldest = this.kinds.keys().next().value;
      if (oldest !== undefined) this.kinds.delete(oldest);
    }
    return { count };
  }
}
