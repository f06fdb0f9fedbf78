/**
 * Keeps each Minecraft instance's recent activity in the database, so its page (`#/minecraft/<id>` and
 * `GET /api/minecraft/instances/:id/activity`) shows it again after a restart: the last {@link McActivityKeep.logLines}
 * `log` lines and the last {@link McActivityKeep.actions} ended actions per instance.
 *
 * The write path is built so a log flood never competes with task writes: lines are buffered and written in one batch
 * at most every {@link McActivityKeep.flushMs} (through the store's own write queue, group-committed with the task
 * writes), and the buffer holds at most the last `logLines` lines of each instance (older ones would be trimmed
 * anyway), so a flood of any size costs one bounded batch a window. An action is written when it ends (a state change
 * the user sees). A crash loses at most the lines of the last flush window and the actions whose write had not
 * committed; nothing else depends on them. Text is kept as data; a NUL character (PostgreSQL text cannot hold it) is
 * kept as U+FFFD. On PostgreSQL the writes are fenced: a process that does not hold the lease records nothing.
 */
import type { Logger, McActionRecord, McLogRecord, MinecraftActivityStore } from '@ccagent/engine';
import type { McActivity, MinecraftEndpoint, ModActionRecord } from '@ccagent/minecraft';
import { actionToWire } from './http/routes/minecraft-activity.js';

/** How much is kept per instance, and how often buffered lines are written. */
export interface McActivityKeep {
  /** Ended actions kept per instance (default 100). */
  actions: number;
  /** Log lines kept per instance (default 200). */
  logLines: number;
  /** Longest time a line waits in memory before its batch is written; at most one batch per window (ms, default 500). */
  flushMs: number;
}

export const MC_ACTIVITY_KEEP: McActivityKeep = { actions: 100, logLines: 200, flushMs: 500 };

const clean = (s: string): string => s.replaceAll('\u0000', '\uFFFD');

/** An ended action as stored: the wire form's previews (error and result already cut). */
function toRecord(instanceId: string, a: ModActionRecord): McActionRecord | undefined {
  const w = actionToWire(instanceId, a);
  if (w.ended_at === null || w.ok === null) return undefined;
  const r: McActionRecord = {
    instanceId,
    actionId: clean(w.action_id),
    type: clean(w.type),
    taskId: w.task_id,
    startedAt: w.started_at,
    endedAt: w.ended_at,
    ok: w.ok,
  };
  if (w.code !== undefined) r.code = clean(w.code);
  if (w.error !== undefined) r.error = clean(w.error);
  if (w.result !== undefined) r.result = clean(w.result);
  return r;
}

/** Records the endpoint's activity in `store` (see the file comment). */
export class McActivityRecorder {
  readonly keep: McActivityKeep;
  /** Line batches written (or tried) since start: a flood costs one per flush window. */
  batches = 0;
  private lastSeqs = new Map<string, number>();
  private pending = new Map<string, McLogRecord[]>();
  private pendingCount = 0;
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> | undefined;
  private readonly writes = new Set<Promise<void>>();
  private closed = false;

  constructor(
    private readonly store: MinecraftActivityStore,
    private readonly logger: Pick<Logger, 'warn'>,
    keep: Partial<McActivityKeep> = {},
  ) {
    this.keep = { ...MC_ACTIVITY_KEEP, ...keep };
  }

  /** Read where each instance's line numbering stopped (before the endpoint accepts a mod). */
  async load(): Promise<void> {
    this.lastSeqs = await this.store.lastMinecraftLogSeqs();
  }

  /** The last line number stored for `instanceId` (the endpoint's `lastLogSeq`). */
  lastLogSeq(instanceId: string): number {
    return this.lastSeqs.get(instanceId) ?? 0;
  }

  /** Follow `endpoint`'s activity; returns the function that stops following it. */
  attach(endpoint: MinecraftEndpoint): () => void {
    return endpoint.onActivity((a) => this.note(a));
  }

  /** One activity record: a line is buffered, an ended action written now. */
  note(a: McActivity): void {
    if (this.closed) return;
    if (a.kind === 'log') return this.buffer(a.instanceId, a.line);
    const r = toRecord(a.instanceId, a.action);
    if (r === undefined) return;
    this.track(
      this.store.saveMinecraftAction(r, this.keep.actions).catch((err: unknown) => {
        this.logger.warn(
          { err: (err as Error).message, instance_id: r.instanceId, action_id: r.actionId },
          'minecraft activity: an ended action was not stored',
        );
      }),
    );
  }

  /** An instance's stored activity (the last `keep` of each), oldest first. */
  read(instanceId: string): Promise<{ logs: McLogRecord[]; actions: McActionRecord[] }> {
    return this.store.readMinecraftActivity(instanceId, {
      logs: this.keep.logLines,
      actions: this.keep.actions,
    });
  }

  /** Write the buffered lines now and wait for every write started so far. */
  async flush(): Promise<void> {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    while (this.flushing !== undefined || this.pendingCount > 0 || this.writes.size > 0) {
      if (this.flushing === undefined && this.pendingCount > 0) this.writeBatch();
      await Promise.all([this.flushing, ...this.writes]);
    }
  }

  /** Stop taking records and write what is buffered. */
  async close(): Promise<void> {
    await this.flush();
    this.closed = true;
  }

  private buffer(instanceId: string, line: { seq: number; at: number; message: string }): void {
    if (line.seq > (this.lastSeqs.get(instanceId) ?? 0)) this.lastSeqs.set(instanceId, line.seq);
    let lines = this.pending.get(instanceId);
    if (lines === undefined) this.pending.set(instanceId, (lines = []));
    lines.push({ instanceId, seq: line.seq, at: line.at, message: clean(line.message) });
    this.pendingCount++;
    // Only the last `logLines` of an instance can survive its trim: the buffer never holds more.
    if (lines.length > this.keep.logLines) {
      lines.shift();
      this.pendingCount--;
    }
    this.schedule();
  }

  private schedule(): void {
    if (this.timer !== undefined || this.flushing !== undefined || this.pendingCount === 0) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.writeBatch();
    }, this.keep.flushMs);
    this.timer.unref();
  }

  private writeBatch(): void {
    const lines = [...this.pending.values()].flat();
    this.pending = new Map();
    this.pendingCount = 0;
    if (lines.length === 0) return;
    this.batches++;
    this.flushing = this.store
      .appendMinecraftLogs(lines, this.keep.logLines)
      .catch((err: unknown) => {
        this.logger.warn(
          { err: (err as Error).message, lines: lines.length },
          'minecraft activity: a batch of log lines was not stored',
        );
      })
      .finally(() => {
        this.flushing = undefined;
        // Lines that came while it was written wait for the next window.
        this.schedule();
      });
  }

  private track(p: Promise<void>): void {
    this.writes.add(p);
    void p.finally(() => this.writes.delete(p));
  }
}
