import type { CommandDescriptor, Task, TaskStatus } from '@ccagent/engine';
import type { StoreErrorCode } from './store-error.js';

/** Query of {@link SqliteStore.listTasksPage}; all fields optional and ANDed. */
export interface TaskPageQuery {
  status?: TaskStatus | TaskStatus[];
  kind?: string;
  clientId?: string;
  /** Tasks whose id starts with this text, or whose prompt contains it (case-insensitive for ASCII letters). */
  search?: string;
  /** Page size, 1..1000 (default 50). */
  limit?: number;
  /** Rows to skip (default 0). */
  offset?: number;
  /** By creation time (then id): `newest` first (default) or `oldest` first. */
  order?: 'newest' | 'oldest';
}

/** One page of tasks and the number of tasks matching the query overall. */
export interface TaskPage {
  tasks: Task[];
  total: number;
}

/** Input of {@link SqliteStore.upsertClient}: what a client said in its hello. Times are epoch ms. */
export interface ClientUpsert {
  clientId: string;
  commands: CommandDescriptor[];
  connected: boolean;
  seenAt: number;
  /** Omitted: keep the version stored before, if any. */
  clientVersion?: string;
  /**
   * The credential its hello authenticated with (a key id, `token` for the shared token, `open`): the key group of a
   * computer that is offline (`server.groups.byOperatorKey`). Omitted: keep the one stored before, if any.
   */
  connectedWith?: string;
}

/** A CC client the orchestrator has seen. */
export interface ClientRecord {
  clientId: string;
  commands: CommandDescriptor[];
  connected: boolean;
  clientVersion?: string;
  /** The credential its last hello authenticated with (see {@link ClientUpsert.connectedWith}). */
  connectedWith?: string;
  firstSeenAt: number;
  lastSeenAt: number;
}

/** Lifecycle state of a model-written tool on a client. */
export type ModelToolStatus = 'draft' | 'test' | 'active' | 'retired';

/** Every {@link ModelToolStatus}. */
export const MODEL_TOOL_STATUSES: readonly ModelToolStatus[] = ['draft', 'test', 'active', 'retired'];

/** One model-written tool as a client reports it in `tools_update`. */
export interface ModelToolInfo {
  name: string;
  status: ModelToolStatus;
  /** Version number the client assigns (integer ≥ 0); editing an active tool bumps it. */
  version: number;
  description?: string;
  /** Path of the tool's file on the client. */
  file?: string;
  /** When the client says the tool last changed (epoch ms). */
  updatedAt?: number;
}

/** A model-written tool as stored: the reported info plus the client it lives on and when it was recorded. */
export interface ModelToolRecord extends ModelToolInfo {
  clientId: string;
  recordedAt: number;
}

/** Filter of {@link SqliteStore.listTools}. */
export interface ToolFilter {
  clientId?: string;
  /** One of {@link ModelToolStatus}; any other string matches nothing. */
  status?: string;
}

/**
 * Result of {@link SqliteStore.checkHealth}: `error` is meant for people (what is wrong, what to do); `code` says
 * which condition it is (`locked`, `disk_full`, `io_error`, `closed`, `sqlite_error`).
 */
export type StoreHealth = { ok: true } | { ok: false; error: string; code: StoreErrorCode };
