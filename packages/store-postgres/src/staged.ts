/** An entry the transaction must remove from the committed map (a terminal task, or a write rolled back). */
const FORGET: unique symbol = Symbol('forget');

/**
 * A value per task that follows what is COMMITTED by this store's writer, so it can stand in for a read: what a write
 * sets is kept apart until the write ends (kept or rolled back), and becomes committed only when its transaction
 * commits; a rolled-back transaction forgets every task it touched. Forgetting is always safe (the next write reads
 * the row). Valid while this process is the only writer of the database — which the leader lease guarantees for an
 * orchestrator (a new leader starts with nothing remembered). Bounded: the oldest entries go first.
 */
export class Staged<V> {
  private readonly rows = new Map<string, V>();
  private readonly staged = new Map<string, V | typeof FORGET>();
  private readonly current = new Map<string, V | typeof FORGET>();

  constructor(private readonly cap = 16_384) {}

  /** The value as the running write sees it. */
  get(key: string): V | undefined {
    const e = this.current.has(key)
      ? this.current.get(key)
      : this.staged.has(key)
        ? this.staged.get(key)
        : this.rows.get(key);
    return e === FORGET ? undefined : e;
  }

  set(key: string, value: V): void {
    this.current.set(key, value);
  }

  forget(key: string): void {
    this.current.set(key, FORGET);
  }

  /** The running write ended: kept, or rolled back alone (its keys are forgotten). */
  writeEnded(kept: boolean): void {
    for (const [k, e] of this.current) this.staged.set(k, kept ? e : FORGET);
    this.current.clear();
  }

  committed(): void {
    for (const [k, e] of this.staged) {
      if (e === FORGET) {
        this.rows.delete(k);
        continue;
      }
      if (!this.rows.has(k) && this.rows.size >= this.cap) {
        const oldest = this.rows.keys().next();
        if (!oldest.done) this.rows.delete(oldest.value);
      }
      this.rows.set(k, e);
    }
    this.staged.clear();
  }

  rolledBack(): void {
    for (const k of this.staged.keys()) this.rows.delete(k);
    for (const k of this.current.keys()) this.rows.delete(k);
    this.staged.clear();
    this.current.clear();
  }
}
