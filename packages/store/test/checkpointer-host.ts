/**
 * Process-level host for `checkpointer-process.test.ts` (run with `node --import tsx`): a writer with
 * `wal_autocheckpoint = 0` and a running checkpointer writes ~1 KB rows, printing `COMMITTED <n>` after each commit
 * and `CHECKPOINTS <k>` when the worker has checkpointed. HOST_ROWS > 0: stop writing after that many rows and
 * return without stopping the checkpointer (the process must still exit by itself); 0: write until killed.
 */
import Database from 'better-sqlite3';
import { startCheckpointer } from '../src/checkpointer.js';

const file = process.env.HOST_DB ?? '';
const rows = Number(process.env.HOST_ROWS ?? 0);
const db = new Database(file);
db.pragma('journal_mode = WAL');
db.pragma('synchronous = NORMAL');
db.exec('CREATE TABLE IF NOT EXISTS rows (id INTEGER PRIMARY KEY, body TEXT NOT NULL)');
const checkpointer = startCheckpointer({ path: file, writer: db, walPagesThreshold: 100, intervalMs: 5 });
if (!(await checkpointer.ready)) throw new Error('checkpointer did not start');
const insert = db.prepare('INSERT INTO rows (body) VALUES (?)');
let reported = 0;
for (let i = 1; rows === 0 || i <= rows; i++) {
  insert.run(`row ${i} `.padEnd(1000, 'x'));
  checkpointer.nudge();
  process.stdout.write(`COMMITTED ${i}\n`);
  const done = checkpointer.stats().checkpoints;
  if (done !== reported) {
    reported = done;
    process.stdout.write(`CHECKPOINTS ${done}\n`);
  }
  if (i % 10 === 0) await new Promise((r) => setTimeout(r, 1));
}
process.stdout.write('RETURNING\n');
