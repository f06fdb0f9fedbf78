/**
 * What the orchestrator remembers about CC clients (their commands, whether they are connected, their
 * model-written tools) — a port with a SQLite implementation (over `@ccagent/store`) and an in-memory one for
 * embedding without a database.
 */
import type { CommandDescriptor } from '@ccagent/engine';

/** Lifecycle stage of a model-written tool. */
export type ToolStatus = 'draft' | 'test' | 'active' | 'retired';

/** One model-written tool as a client reports it. */
export interface ToolInfo {
  name: string;
  status: ToolStatus;
  version: number;
  description?: string;
  file?: string;
  updatedAt?: number;
}

/** A remembered client. */
export interface KnownClient {
  clientId: string;
  commands: CommandDescriptor[];
  connected: boolean;
  clientVersion?: string;
  /** The credential its last hello authenticated with (a key id, `token`, `open`): its key group while offline. */
  connectedWith?: string;
  firstSeenAt?: number;
  lastSeenAt: number;
}

/** A stored tool with its client. */
export interface KnownTool extends ToolInfo {
  clientId: string;
  recordedAt?: number;
}

/** Storage of client facts. Every method's effect is durable when its promise resolves. */
export interface ClientPersistence {
  /** A client said hello: remember its commands (and version) and that it is connected. */
  clientSeen(input: {
    clientId: string;
    commands: CommandDescriptor[];
    clientVersion?: string;
    connectedWith?: string;
    at: number;
  }): Promise<void>;
  /** The client's socket is gone (or it was never back after a restart). */
  clientDisconnected(clientId: string, at: number): Promise<void>;
  /** Replace the client's model-written tool list with this snapshot. */
  replaceTools(clientId: string, tools: ToolInfo[], at: number): Promise<void>;
  /** Every remembered client. */
  listClients(): Promise<KnownClient[]>;
  /** Tools, optionally of one client and/or status. */
  listTools(filter?: { clientId?: string; status?: string }): Promise<KnownTool[]>;
}

/** {@link ClientPersistence} in process memory (lost on exit). */
export class InMemoryClientPersistence implements ClientPersistence {
  private readonly clients = new Map<string, KnownClient>();
  private readonly tools = new Map<string, KnownTool[]>();

  clientSeen(input: {
    clientId: string;
    commands: CommandDescriptor[];
    clientVersion?: string;
    connectedWith?: string;
    at: number;
  }): Promise<void> {
    const prev = this.clients.get(input.clientId);
    const rec: KnownClient = {
      clientId: input.clientId,
      commands: structuredClone(input.commands),
      connected: true,
      firstSeenAt: prev?.firstSeenAt ?? input.at,
      lastSeenAt: input.at,
    };
    const version = input.clientVersion ?? prev?.clientVersion;
    if (version !== undefined) rec.clientVersion = version;
    const key = input.connectedWith ?? prev?.connectedWith;
    if (key !== undefined) rec.connectedWith = key;
    this.clients.set(input.clientId, rec);
    return Promise.resolve();
  }

  clientDisconnected(clientId: string, at: number): Promise<void> {
    const prev = this.clients.get(clientId);
    if (prev)
      this.clients.set(clientId, { ...prev, connected: false, lastSeenAt: Math.max(prev.lastSeenAt, at) });
    return Promise.resolve();
  }

  replaceTools(clientId: string, tools: ToolInfo[], at: number): Promise<void> {
    this.tools.set(
      clientId,
      tools.map((t) => ({ ...structuredClone(t), clientId, recordedAt: at })),
    );
    return Promise.resolve();
  }

  listClients(): Promise<KnownClient[]> {
    return Promise.resolve(
      [...this.clients.values()]
        .sort((a, b) => a.clientId.localeCompare(b.clientId))
        .map((c) => structuredClone(c)),
    );
  }

  listTools(filter: { clientId?: string; status?: string } = {}): Promise<KnownTool[]> {
    const out: KnownTool[] = [];
    for (const [clientId, list] of [...this.tools.entries()].sort((a, b) => a[0].localeCompare(b[0]))) {
      if (filter.clientId !== undefined && filter.clientId !== clientId) continue;
      for (const t of list)
        if (filter.status === undefined || t.status === filter.status) out.push(structuredClone(t));
    }
    return Promise.resolve(out);
  }
}

/** The part of a durable store (`SqliteStore`, `PostgresStore`) that {@link DurableClientPersistence} uses. */
export interface ClientStore {
  upsertClient(c: {
    clientId: string;
    commands: CommandDescriptor[];
    connected: boolean;
    seenAt: number;
    clientVersion?: string;
    connectedWith?: string;
  }): Promise<void>;
  setClientConnected(clientId: string, connected: boolean, at: number): Promise<void>;
  listClients(): Promise<
    Array<{
      clientId: string;
      commands: CommandDescriptor[];
      connected: boolean;
      clientVersion?: string;
      connectedWith?: string;
      firstSeenAt: number;
      lastSeenAt: number;
    }>
  >;
  replaceClientTools(clientId: string, tools: ToolInfo[], at: number): Promise<void>;
  listTools(filter?: { clientId?: string; status?: string }): Promise<KnownTool[]>;
}

/** {@link ClientPersistence} on the durable store (SQLite or PostgreSQL). */
export class DurableClientPersistence implements ClientPersistence {
  constructor(private readonly store: ClientStore) {}

  clientSeen(input: {
    clientId: string;
    commands: CommandDescriptor[];
    clientVersion?: string;
    connectedWith?: string;
    at: number;
  }): Promise<void> {
    return this.store.upsertClient({
      clientId: input.clientId,
      commands: input.commands,
      connected: true,
      seenAt: input.at,
      ...(input.clientVersion !== undefined ? { clientVersion: input.clientVersion } : {}),
      ...(input.connectedWith !== undefined ? { connectedWith: input.connectedWith } : {}),
    });
  }

  clientDisconnected(clientId: string, at: number): Promise<void> {
    return this.store.setClientConnected(clientId, false, at);
  }

  replaceTools(clientId: string, tools: ToolInfo[], at: number): Promise<void> {
    return this.store.replaceClientTools(clientId, tools, at);
  }

  listClients(): Promise<KnownClient[]> {
    return this.store.listClients();
  }

  listTools(filter?: { clientId?: string; status?: string }): Promise<KnownTool[]> {
    return this.store.listTools(filter);
  }
}
