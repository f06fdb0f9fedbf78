/**
 * The step log: each step record a row of `steps`, a model step's input stored packed (its messages once, in the
 * content-addressed `step_messages` table, see step-messages.ts), and pages of it read back with every packed input
 * rebuilt exactly, two batched lookups per page.
 */
import { normalizeStepQuery, type StepQuery, type StepRecord, type StoredStep } from '@ccagent/engine';
import { chunkHashes, packedHashes, packedStepToRow, rowToStep } from '@ccagent/store-core';
import type * as schema from '../schema.js';
import type { SqliteConnection } from './connection.js';

/** See the module comment. */
export class SqliteStepLog {
  constructor(private readonly c: SqliteConnection) {}

  /**
   * Step log of a task in `seq` order, or one page of it (`afterSeq`, `limit`): a range scan of the steps primary key
   * `(task_id, seq)`, so reading the newest records of a long task costs what reading them from a short one does.
   */
  getSteps(taskId: string, query?: StepQuery): Promise<StoredStep[]> {
    return this.c.read(() => {
      const { afterSeq, limit } = normalizeStepQuery(query);
      // SQLite reads LIMIT -1 as "no limit".
      return this.rowsToSteps(this.c.r.getSteps.all({ taskId, afterSeq, limit: limit ?? -1 }));
    });
  }

  /**
   * Insert one step row inside the running write: a packed model input's new messages and chunks first (INSERT OR
   * IGNORE, skipping the ones known to be stored), so the step never references a row its transaction did not see;
   * a rolled-back write takes both back, and they are forgotten as stored.
   */
  insertStep(taskId: string, seq: number, record: StepRecord & { step: number; at: number }): void {
    const { row, messages } = packedStepToRow(taskId, seq, record, this.c.messageHashes.hash);
    if (messages.length > 0) {
      const insert = this.c.w.insertMessage;
      for (const m of messages) {
        if (this.c.storedMessages.get(m.hash) !== undefined) continue;
        insert.run(m.hash, m.body);
        this.c.storedMessages.set(m.hash, true);
      }
    }
    this.c.w.insertStep.run(row);
  }

  /**
   * Stored steps of step rows, their packed inputs rebuilt: the chunks every packed row of the page references are read
   * in one query, then the messages those chunks list in another (distinct hashes, as one JSON array parameter), not
   * one query per step or message.
   */
  private rowsToSteps(rows: Array<typeof schema.steps.$inferSelect>): StoredStep[] {
    let chunks: Set<string> | undefined;
    for (const r of rows) {
      if (r.input === null && r.inputPacked !== null) {
        chunks ??= new Set();
        for (const h of packedHashes(r.inputPacked)) chunks.add(h);
      }
    }
    if (chunks === undefined) return rows.map((r) => rowToStep(r));
    const bodies = new Map<string, string>();
    this.readMessages(chunks, bodies);
    const messages = new Set<string>();
    for (const h of chunks) {
      const body = bodies.get(h);
      if (body === undefined) continue; // missing: rowToStep names the step
      for (const m of chunkHashes(body)) if (!bodies.has(m)) messages.add(m);
    }
    if (messages.size > 0) this.readMessages(messages, bodies);
    return rows.map((r) => rowToStep(r, bodies));
  }

  /** Read the `step_messages` rows of `hashes` into `into` (one query). */
  private readMessages(hashes: Set<string>, into: Map<string, string>): void {
    const found = this.c.r.getMessages.all(JSON.stringify([...hashes])) as Array<{
      hash: string;
      body: string;
    }>;
    for (const m of found) into.set(m.hash, m.body);
  }
}
