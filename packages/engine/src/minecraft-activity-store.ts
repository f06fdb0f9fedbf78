/**
 * The port that keeps a Minecraft instance's recent activity across restarts: its mod's last `log` lines and its last
 * ended actions with their outcomes. The orchestrator writes them (lines in batches, an action when it ends) and its
 * activity route reads them back after a restart. Implemented by `@ccagent/store` (SQLite) and
 * `@ccagent/store-postgres`; one contract suite (`runMinecraftActivityStoreContract`) runs against both.
 */

/** One `log` line of an instance. `seq` numbers an instance's lines from 1 and only grows. */
export interface McLogRecord {
  instanceId: string;
  seq: number;
  at: number;
  /** The mod's text, untrusted (no NUL characters: PostgreSQL text cannot hold them). */
  message: string;
}

/** One ended action of an instance with its outcome: `code` and `error` on failure, `result` (a preview) on success. */
export interface McActionRecord {
  instanceId: string;
  actionId: string;
  type: string;
  taskId: string | null;
  startedAt: number;
  endedAt: number;
  ok: boolean;
  code?: string;
  error?: string;
  result?: string;
}

/** What is kept per instance: the last `logs` lines (by `seq`) and the last `actions` (by start time). */
export interface McActivityLimits {
  logs: number;
  actions: number;
}

/** The store's side of a Minecraft instance's activity. Writes resolve once durable. */
export interface MinecraftActivityStore {
  /**
   * Add `lines` (any instances; a line whose instance and `seq` are stored already is ignored), then delete each
   * touched instance's lines beyond the last `keep` by `seq`.
   */
  appendMinecraftLogs(lines: McLogRecord[], keep: number): Promise<void>;
  /** Add or replace `action` (by instance and action id), then delete the instance's actions beyond the last `keep`. */
  saveMinecraftAction(action: McActionRecord, keep: number): Promise<void>;
  /** An instance's last lines and actions within `limits`, oldest first (lines by `seq`, actions by start time). */
  readMinecraftActivity(
    instanceId: string,
    limits: McActivityLimits,
  ): Promise<{ logs: McLogRecord[]; actions: McActionRecord[] }>;
  /** The highest stored `seq` of every instance with stored lines (a new line of the instance continues after it). */
  lastMinecraftLogSeqs(): Promise<Map<string, number>>;
}
