import type pg from 'pg';
import type { RowsStatement } from './sql.js';

/** One table's rows of the running write batch, sent as one statement. */
interface Group {
  /** Prepared-statement name (stands for `statement.text` only). */
  name: string;
  statement: RowsStatement;
  /** Rows in the order added; keyed ones (at most one row per key in a statement) replace their earlier row. */
  rows: Map<string | number, unknown[]>;
  keyed: boolean;
}

/**
 * The rows a write batch's commits add, grouped by table: at a flush every group with rows goes out as ONE statement
 * (an `unnest` of one array per column, see `RowsStatement`), in the order the groups were declared, instead of a
 * statement per row per write. Rows of one flush land together or not at all (a statement's error aborts the
 * transaction). A keyed group holds the last row added per key (a later write of the same task row or call replaces
 * the earlier one in its place: the rows' every column is written, so the last one is what the statements in order
 * would leave).
 *
 * The flush order is the writes' order only per table; so a write that sends statements of its own, or reads, must
 * flush first (see `PostgresStore`), and the queue flushes before COMMIT, or after each write when it runs a batch
 * with savepoints. Writes must add their rows synchronously and only once nothing can refuse them (as `Sent` writes).
 */
export class RowGroups<Name extends string> {
  private readonly groups: Map<Name, Group>;
  private waiting:
    { promise: Promise<void>; resolve: () => void; reject: (err: unknown) => void } | undefined;
  private serial = 0;

  /** `groups` in flush order; `keyed` ones keep one row per key. */
  constructor(groups: ReadonlyArray<{ name: Name; statement: RowsStatement; keyed?: boolean }>) {
    this.groups = new Map(
      groups.map((g) => [
        g.name,
        { name: `rows_${g.name}`, statement: g.statement, rows: new Map(), keyed: g.keyed ?? false },
      ]),
    );
  }

  /** Rows waiting for the next flush. */
  get size(): number {
    let n = 0;
    for (const g of this.groups.values()) n += g.rows.size;
    return n;
  }

  /**
   * Add `row` (values in the statement's `keys` order) to group `name`, replacing the row of the same `key` in a
   * keyed group. Settles once the statement that carries it answered (after the next {@link flush}), or rejects with
   * its error or the reason given to {@link discard}.
   */
  add(name: Name, row: unknown[], key?: string): Promise<void> {
    const g = this.groups.get(name) as Group;
    if (g.keyed) {
      if (key === undefined) throw new Error(`row group ${name} needs a key`);
      // A replaced row keeps its place (the first one's: an identity column numbers a new row where it was first
      // written) and takes the later values, which statements in order would have left.
      g.rows.set(key, row);
    } else g.rows.set(this.serial++, row);
    if (this.waiting === undefined) {
      let resolve!: () => void;
      let reject!: (err: unknown) => void;
      const promise = new Promise<void>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      promise.catch(() => undefined); // every adder gets it
      this.waiting = { promise, resolve, reject };
    }
    return this.waiting.promise;
  }

  /** Send one statement per group with rows (without waiting for their answers); the adders settle with them. */
  flush(c: pg.ClientBase): void {
    const w = this.waiting;
    if (w === undefined) return;
    this.waiting = undefined;
    const answers: Array<Promise<unknown>> = [];
    for (const g of this.groups.values()) {
      if (g.rows.size === 0) continue;
      const columns: unknown[][] = g.statement.keys.map(() => []);
      for (const row of g.rows.values()) {
        for (let k = 0; k < columns.length; k++) (columns[k] as unknown[]).push(row[k]);
      }
      g.rows.clear();
      answers.push(c.query({ name: g.name, text: g.statement.text, values: columns }));
    }
    this.serial = 0;
    Promise.all(answers).then(() => w.resolve(), w.reject);
  }

  /** Drop every row not sent yet; their adders reject with `reason`. */
  discard(reason: unknown): void {
    const w = this.waiting;
    this.waiting = undefined;
    for (const g of this.groups.values()) g.rows.clear();
    this.serial = 0;
    w?.reject(reason);
  }
}
