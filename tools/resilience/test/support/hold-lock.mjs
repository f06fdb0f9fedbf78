// Holds a write lock on a SQLite file from ANOTHER process until told to let go — what a backup tool, a sqlite3
// shell left in a transaction, or a second server on the same file does to the orchestrator.
//   node hold-lock.mjs <db> [immediate|exclusive]   prints "locked"; "release\n" on stdin commits and exits.
import Database from 'better-sqlite3';

const [file, mode = 'immediate'] = process.argv.slice(2);
const db = new Database(file);
db.pragma('busy_timeout = 10000');
if (mode === 'exclusive') db.pragma('locking_mode = EXCLUSIVE');
db.exec(mode === 'exclusive' ? 'BEGIN EXCLUSIVE' : 'BEGIN IMMEDIATE');
// A real write, so the lock is held for certain (and in exclusive mode readers are shut out too).
db.exec(
  'CREATE TABLE IF NOT EXISTS resilience_lock_probe (x INTEGER); INSERT INTO resilience_lock_probe VALUES (1)',
);
process.stdout.write('locked\n');
process.stdin.setEncoding('utf8');
process.stdin.on('data', (d) => {
  if (!String(d).includes('release')) return;
  db.exec('ROLLBACK');
  db.close();
  process.stdout.write('released\n');
  process.exit(0);
});
