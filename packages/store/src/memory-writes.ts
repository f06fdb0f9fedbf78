import { memoryJson, type JsonValue } from '@ccagent/engine';

/** Most tasks whose stored memory is remembered; past it the oldest entries are forgotten (a forgotten one is rewritten). */
export const MEMORY_WRITES_CAP = 4096;

/** An entry the open transaction must remove from the committed map (a terminal task, or a write rolled back). */
const FORGET: unique symbol = Symbol('forget');
type Staged = JsonValue | typeof FORGET;

/**
 * Which memory each task's `task_memory` row holds, as this connection last wrote it, so that a commit writes the
 * row only when the task's memory changed (a command round trip commits a task twice, and the first commit carries
 * the memory object of the previous one unchanged). Memories are immutable by the ports' contract, so the object a
 * commit carries identifies the text; a different object is compared by its JSON text (`memoryJson`, which the
 * write needs anyway).
 *
 * The committed map changes only once a transaction has COMMITTED. Within a transaction, what a write stages is kept
 * apart until its savepoint is released; a write rolled back alone makes its tasks forgotten when the transaction
 * commits, and a transaction rolled back (or lost, or a failed COMMIT) forgets every task it touched. Forgetting is
 * always safe: it costs one rewrite of the row. Terminal tasks are forgotten too, and the map is capped at
 * {@link MEMORY_WRITES_CAP} entries (the oldest go first).
 *
 * It assumes this connection is the only writer of the file (as the orchestrator is); another process rewriting a
 * task's memory would go unseen.
 */
export class MemoryWrites {
  /** What the committed rows hold, by task. */
  private readonly rows = new Map<string, JsonValue>();
  /** Entries of the writes of the open transaction whose savepoints were released. */
  private readonly staged = new Map<string, Staged>();
  /** Entries of the write that is running (its savepoint may still be rolled back). */
  private readonly current = new Map<string, Staged>();

  constructor(private readonly cap = MEMORY_WRITES_CAP) {}

  /**
   * The JSON text to write into the row of `taskId` for `memory`, or `undefined` when the row already holds it (the
   * same object, or an equal text) as seen by the open transaction. Call {@link wrote} once the row is written.
   */
  textToWrite(taskId: string, memory: JsonValue): string | undefined {
    const last = this.lookup(taskId);
    if (last === memory) return undefined;
    const text = memoryJson(memory);
    if (last !== FORGET && typeof last === 'object' && last !== null && memoryJson(last) === text) {
      // Equal text, another object: the row holds it; remember the new object so the next check is by identity.
      this.current.set(taskId, memory);
      return undefined;
    }
    return text;
  }

  /** The running write left `memory` in the row of `taskId`; `terminal` tasks are forgotten instead. */
  wrote(taskId: string, memory: JsonValue, terminal: boolean): void {
    this.current.set(taskId, terminal ? FORGET : memory);
  }

  /** The running write ended: its savepoint was released (`kept`) or rolled back (its tasks are forgotten). */
  writeEnded(kept: boolean): void {
    if (this.current.size === 0) return;
    for (const [taskId, entry] of this.current) this.staged.set(taskId, kept ? entry : FORGET);
    this.current.clear();
  }

  /** The transaction committed: what it staged becomes what the rows hold. */
  committed(): void {
    for (const [taskId, entry] of this.staged) {
      if (entry === FORGET) {
        this.rows.delete(taskId);
        continue;
      }
      if (!this.rows.has(taskId) && this.rows.size >= this.cap) {
        const oldest = this.rows.keys().next();
        if (!oldest.done) this.rows.delete(oldest.value);
      }
      this.rows.set(taskId, entry);
    }
    this.staged.clear();
  }

  /** The transaction was rolled back (or its outcome is unknown): every task it touched is forgotten. */
  rolledBack(): void {
    for (const taskId of this.staged.keys()) this.rows.delete(taskId);
    for (const taskId of this.current.keys()) this.rows.delete(taskId);
    this.staged.clear();
    this.current.clear();
  }

  /** Tasks whose stored memory is remembered (for tests and diagnostics). */
  get size(): number {
    return this.rows.size;
  }

  /** Whether the stored memory of `taskId` is remembered as committed (for tests). */
  remembers(taskId: string): boolean {
    return this.rows.has(taskId);
  }

  private lookup(taskId: string): Staged {
    if (this.current.size > 0 && this.current.has(taskId)) return this.current.get(taskId) as Staged;
    if (this.staged.size > 0 && this.staged.has(taskId)) return this.staged.get(taskId) as Staged;
    const row = this.rows.get(taskId);
    return row === undefined ? FORGET : row;
  }
}
