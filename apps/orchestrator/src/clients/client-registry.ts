import type { Clock, CommandDescriptor, TimerHandle } from '@ccagent/engine';
import type { Connection } from '../ws/connection.js';

/** Live state of one client id (connected or within its reconnect grace). */
export interface ClientEntry {
  clientId: string;
  /** The current socket, when connected and welcomed. */
  connection: Connection | undefined;
  /** Commands from the latest `hello`, by name. */
  commands: Map<string, CommandDescriptor>;
  clientVersion?: string;
  /** When the client went away (ms); undefined while connected. */
  offlineSince: number | undefined;
  /** True while a disconnected client may still come back and keep its calls. */
  inGrace: boolean;
  graceTimer: TimerHandle | undefined;
  /** Tasks this client subscribed to (kept across reconnects within this process). */
  subscriptions: Set<string>;
  /** While it is away: since when task events did not reach it (replayed when it is back). */
  missedSince: number | undefined;
}

/** Events of {@link ClientRegistry}, by name. */
export interface RegistryEvents {
  /**
   * A client was welcomed (first connection or reconnect). `missedSince`: since when events for it were not
   * delivered (undefined when it was connected all along, e.g. a second `hello` on the same socket).
   */
  online(entry: ClientEntry, missedSince: number | undefined): void;
  /** A client stayed away for the whole grace period. */
  graceExpired(entry: ClientEntry): void;
}

/**
 * Which clients are connected, which are within their reconnect grace period, and what commands each offers.
 * After a restart every client starts "in grace" (counted from startup), so tasks waiting on a command keep their
 * call for a client that reconnects in time. Used by the WebSocket side (handshake, routing of calls, subscriptions)
 * and the HTTP side (`/api/clients`, `/health`); it knows nothing of either. Those that react to a client coming
 * back or staying away subscribe with {@link ClientRegistry.on} when they are built; listeners run in the order they
 * subscribed (the composition root builds the tool executor, which re-sends calls, before the event relay).
 */
export class ClientRegistry {
  private readonly entries = new Map<string, ClientEntry>();
  private readonly startedAt: number;
  private readonly onlineListeners: Array<RegistryEvents['online']> = [];
  private readonly graceListeners: Array<RegistryEvents['graceExpired']> = [];

  constructor(
    private readonly graceMs: number,
    private readonly clock: Clock,
  ) {
    this.startedAt = clock.now();
  }

  private now(): number {
    return this.clock.now();
  }

  /** Subscribe to a registry event (for the life of the process: subscribers are built once, at startup). */
  on<E extends keyof RegistryEvents>(event: E, listener: RegistryEvents[E]): void {
    if (event === 'online') this.onlineListeners.push(listener as RegistryEvents['online']);
    else this.graceListeners.push(listener as RegistryEvents['graceExpired']);
  }

  /**
   * Remember a client known from the database (after a restart): offline, in grace since startup. `missedSince`:
   * since when it may have missed task events (default: the start of this process).
   */
  restore(
    clientId: string,
    commands: CommandDescriptor[],
    clientVersion?: string,
    missedSince: number = this.startedAt,
  ): void {
    if (this.entries.has(clientId)) return;
    const entry = this.blank(clientId);
    entry.commands = new Map(commands.map((c) => [c.name, c]));
    if (clientVersion !== undefined) entry.clientVersion = clientVersion;
    entry.offlineSince = this.startedAt;
    entry.missedSince = missedSince;
    this.startGrace(entry, this.graceMs);
    this.entries.set(clientId, entry);
  }

  /** The entry of a client id, if known in this process. */
  get(clientId: string): ClientEntry | undefined {
    return this.entries.get(clientId);
  }

  /** The open connection of a client, if connected. */
  connection(clientId: string): Connection | undefined {
    const c = this.entries.get(clientId)?.connection;
    return c?.open ? c : undefined;
  }

  /** Every entry (connected or in grace). */
  all(): ClientEntry[] {
    return [...this.entries.values()];
  }

  /** Number of connected clients. */
  connectedCount(): number {
    let n = 0;
    for (const e of this.entries.values()) if (e.connection) n++;
    return n;
  }

  /**
   * Whether a call for this client should wait for it: connected, within grace after a disconnect, or (never seen
   * in this process) within the grace period after startup.
   */
  mayComeBack(clientId: string): boolean {
    const e = this.entries.get(clientId);
    if (e) return e.connection !== undefined || e.inGrace;
    return this.now() - this.startedAt < this.graceMs;
  }

  /** Milliseconds until a never-seen client's startup grace ends (0 when over). */
  startupGraceLeft(): number {
    return Math.max(0, this.graceMs - (this.now() - this.startedAt));
  }

  /**
   * Bind a welcomed connection to its client id. Returns the connection it replaces, if any (the caller closes it
   * and tells it why).
   */
  attach(
    conn: Connection,
    commands: CommandDescriptor[],
    clientVersion: string | undefined,
  ): Connection | undefined {
    const clientId = conn.clientId as string;
    let entry = this.entries.get(clientId);
    let missedSince: number | undefined;
    if (!entry) {
      // Never seen by this process: anything since it started (tasks created for it over HTTP, say).
      missedSince = this.startedAt;
      entry = this.blank(clientId);
      this.entries.set(clientId, entry);
    } else if (entry.connection === undefined) {
      missedSince = entry.missedSince ?? entry.offlineSince ?? this.startedAt;
    } else if (entry.connection !== conn) {
      // Replacing a socket that may have been dead for a while: events since we last heard from it may be lost.
      missedSince = entry.connection.lastRxAt;
    }
    const previous = entry.connection !== conn ? entry.connection : undefined;
    entry.connection = conn;
    entry.commands = new Map(commands.map((c) => [c.name, c]));
    if (clientVersion !== undefined) entry.clientVersion = clientVersion;
    entry.offlineSince = undefined;
    entry.missedSince = undefined;
    entry.inGrace = false;
    if (entry.graceTimer !== undefined) this.clock.clearTimeout(entry.graceTimer);
    entry.graceTimer = undefined;
    for (const l of this.onlineListeners) l(entry, missedSince);
    return previous;
  }

  /**
   * A connection closed. If it was its client's current connection, the client goes offline and its grace period
   * starts; returns the entry in that case.
   */
  detach(conn: Connection): ClientEntry | undefined {
    const clientId = conn.clientId;
    if (clientId === undefined) return undefined;
    const entry = this.entries.get(clientId);
    if (!entry || entry.connection !== conn) return undefined;
    entry.connection = undefined;
    entry.offlineSince = this.now();
    // The last thing this socket certainly received is older than its last frame from the client.
    entry.missedSince = Math.min(this.now(), conn.lastRxAt);
    this.startGrace(entry, this.graceMs);
    return entry;
  }

  /** Clients currently offering a command, connected first (for tasks bound to no client). */
  clientsOffering(command: string): ClientEntry[] {
    const out: ClientEntry[] = [];
    for (const e of this.entries.values()) if (e.commands.has(command)) out.push(e);
    return out.sort((a, b) => Number(b.connection !== undefined) - Number(a.connection !== undefined));
  }

  /** Stop every grace timer (shutdown). */
  dispose(): void {
    for (const e of this.entries.values()) {
      if (e.graceTimer !== undefined) this.clock.clearTimeout(e.graceTimer);
      e.graceTimer = undefined;
    }
  }

  private blank(clientId: string): ClientEntry {
    return {
      clientId,
      connection: undefined,
      commands: new Map(),
      offlineSince: undefined,
      inGrace: false,
      graceTimer: undefined,
      subscriptions: new Set(),
      missedSince: undefined,
    };
  }

  private startGrace(entry: ClientEntry, ms: number): void {
    if (entry.graceTimer !== undefined) this.clock.clearTimeout(entry.graceTimer);
    entry.inGrace = true;
    entry.graceTimer = this.clock.setTimeout(() => {
      entry.graceTimer = undefined;
      entry.inGrace = false;
      if (entry.connection === undefined) for (const l of this.graceListeners) l(entry);
    }, ms);
  }
}
