import { memoryJson, type JsonValue } from '@ccagent/engine';
import type { TransactionListener } from './write-queue.js';

/**
 * Most tasks a {@link CommittedState} remembers (an entry is a task id and a number or a small object, ~100-200
 * bytes); past it the oldest entries are forgotten, and a forgotten task is simply read (or rewritten) again.
 */
export const MEMORY_WRITES_CAP = 16_384;

/** An entry the open transaction must remove from the committed map (a terminal task, or a write rolled back). */
const FORGET: unique symbol = Symbol('forget');
/** What identifies a memory: a number per memory object, the JSON text of a primitive one. */
type MemoryKey = number | string;

/** A number per memory object, held weakly: the map below keeps no memory (nor its text) alive. */
const objectKeys = new WeakMap<object, number>();
let lastObjectKey = 0;

function memoryKey(memory: JsonValue): MemoryKey {
  if (typeof memory !== 'object' || memory === null) return memoryJson(memory);
  let key = objectKeys.get(memory);
  if (key === undefined) {
    key = ++lastObjectKey;
    objectKeys.set(memory, key);
  }
  return key;
}

/**
 * A value per task (what this connection last wrote into its rows) that follows what is really COMMITTED, so it can
 * stand in for a read. The committed map changes only once a transaction has committed. Within a transaction, what a
 * write stages is kept apart until its savepoint is released; a write rolled back alone makes its tasks forgotten
 * when the transaction commits, and a transaction rolled back (or lost, or a failed COMMIT) forgets every task it
 * touched. Forgetting is always safe: the next write reads (or rewrites) what the database holds. The map is capped
 * (the oldest entries go first).
 *
 * It is the queue's {@link TransactionListener}: it assumes this connection is the only writer of the file (as the
 * orchestrator is); another process changing a task's rows would go unseen.
 */
export class CommittedState<V> implements TransactionListener {
  /** The value of each task as committed. */
  private readonly rows = new Map<string, V>();
  /** Entries of the writes of the open transaction whose savepoints were released. */
  private readonly staged = new Map<string, V | typeof FORGET>();
  /** Entries of the write that is running (its savepoint may still be rolled back). */
  private readonly current = new Map<string, V | typeof FORGET>();

  constructor(private readonly cap = MEMORY_WRITES_CAP) {}

  /** The value of `taskId` as the running write sees it (its own writes, the transaction's, then committed). */
  get(taskId: string): V | undefined {
    const entry = this.lookup(taskId);
    return entry === FORGET ? undefined : entry;
  }

  /** The running write left the rows of `taskId` holding `value`. */
  set(taskId: string, value: V): void {
    this.current.set(taskId, value);
  }

  /** The running write changed the rows of `taskId` in a way not kept: forgotten once it commits. */
  forget(taskId: string): void {
    this.current.set(taskId, FORGET);
  }

  /** The running write ended: its savepoint was released (`kept`) or rolled back (its tasks are forgotten). */
  writeEnded(kept: boolean): void {
    if (this.current.size === 0) return;
    for (const [taskId, entry] of this.current) this.staged.set(taskId, kept ? entry : FORGET);
    this.current.clear();
  }

  /** The transaction committed: what it staged becomes what the rows hold. */
  committed(): void {
    if (this.staged.size === 0) return;
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

  /** Tasks whose value is remembered as committed (for tests and diagnostics). */
  get size(): number {
    return this.rows.size;
  }

  /** Whether the value of `taskId` is remembered as committed (for tests). */
  remembers(taskId: string): boolean {
    return this.rows.has(taskId);
  }

  private lookup(taskId: string): V | typeof FORGET | undefined {
    if (this.current.size > 0 && this.current.has(taskId)) return this.current.get(taskId);
    if (this.staged.size > 0 && this.staged.has(taskId)) return this.staged.get(taskId);
    return this.rows.get(taskId);
  }
}

/**
 * Which memory each task's `task_memory` row holds, as this connection last wrote it, so that a commit writes the
 * row only when the task's memory changed (a command round trip commits a task twice, and the first commit carries
 * the memory object of the previous one unchanged). Memories are immutable by the ports' contract, so a memory object
 * is identified by itself: the map keeps a number per object (from a WeakMap), not the object or its text. Holding
 * each task's latest memory (object or text) from a long-lived map made V8 run more old-space collections, which cost
 * more CPU per round trip than the skipped row write saved. A different object with equal JSON is written again.
 * Follows commits and rollbacks as {@link CommittedState} does; terminal tasks are forgotten.
 */
export class MemoryWrites extends CommittedState<MemoryKey> {
  /**
   * The JSON text of `memory` when the row of `taskId` must be written with it, or `undefined` when the row already
   * holds this memory as seen by the open transaction. Call {@link wrote} once the row is written (or found current).
   */
  textToWrite(taskId: string, memory: JsonValue): string | undefined {
    return this.get(taskId) === memoryKey(memory) ? undefined : memoryJson(memory);
  }

  /** The running write left the row of `taskId` holding `memory`; `terminal` tasks are forgotten instead. */
  wrote(taskId: string, memory: JsonValue, terminal: boolean): void {
    if (terminal) this.forget(taskId);
    else this.set(taskId, memoryKey(memory));
  }
}
