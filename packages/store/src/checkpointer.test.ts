import { copyFileSync, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import type { Logger } from '@ccagent/engine';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { checkpointerWorker, startCheckpointer, type Checkpointer } from './checkpointer.js';
import { tempDir } from '../test/support/test-helpers.js';

let dir: string;
let cleanup: () => void;
let file: string;
const opened: Database.Database[] = [];
const started: Checkpointer[] = [];
const shmDirs: string[] = [];

beforeEach(() => {
  ({ dir, cleanup } = tempDir('ccagent-ckpt-'));
  file = path.join(dir, 'db.sqlite');
});
afterEach(async () => {
  for (const c of started.splice(0)) await c.stop();
  for (const db of opened.splice(0)) {
    if (db.open && db.inTransaction) db.exec('ROLLBACK');
    if (db.open) db.close();
  }
  cleanup();
  for (const d of shmDirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A connection like the store's writer: WAL, NORMAL, one table of ~1 KB rows. */
function openDb(target = file): Database.Database {
  const db = new Database(target);
  opened.push(db);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('busy_timeout = 5000');
  db.exec('CREATE TABLE IF NOT EXISTS rows (id INTEGER PRIMARY KEY, body TEXT NOT NULL)');
  return db;
}

function start(opts: Parameters<typeof startCheckpointer>[0]): Checkpointer {
  const c = startCheckpointer(opts);
  started.push(c);
  return c;
}

function walBytes(target = file): number {
  return existsSync(`${target}-wal`) ? statSync(`${target}-wal`).size : 0;
}

/** A logger that keeps what it was told. */
function recordingLogger(): Logger & { lines: Array<{ level: string; msg: string | undefined }> } {
  const lines: Array<{ level: string; msg: string | undefined }> = [];
  const at =
    (level: string) =>
    (_obj: unknown, msg?: string): void => {
      lines.push({ level, msg });
    };
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

const yieldToLoop = (): Promise<void> => new Promise((r) => setImmediate(r));
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * `count` one-row commits of ~1 KB on `db`, nudging `c` after each; every `pauseEvery` commits the loop sleeps 1 ms
 * (a server between requests; `0`: only yields to the event loop every 25). Returns the largest WAL size seen.
 */
async function writeLoop(
  db: Database.Database,
  count: number,
  c?: Checkpointer,
  pauseEvery = 0,
): Promise<number> {
  const insert = db.prepare('INSERT INTO rows (body) VALUES (?)');
  let maxWal = 0;
  for (let i = 1; i <= count; i++) {
    insert.run(`row ${i} `.padEnd(1000, 'x'));
    c?.nudge();
    if (pauseEvery > 0 ? i % pauseEvery === 0 : i % 25 === 0) {
      maxWal = Math.max(maxWal, walBytes());
      await (pauseEvery > 0 ? sleep(1) : yieldToLoop());
    }
  }
  return Math.max(maxWal, walBytes());
}

const ROWS = 6000;
const WAL_BOUND = 8 * 1024 * 1024;

describe('a writer with wal_autocheckpoint = 0', () => {
  it('grows the WAL without bound when nothing checkpoints (control: shows the bound below can fail)', async () => {
    const db = openDb();
    db.pragma('wal_autocheckpoint = 0');
    // No pauses: without a checkpointer the WAL holds every frame whatever the pace.
    expect(await writeLoop(db, ROWS)).toBeGreaterThan(2 * WAL_BOUND);
  });

  it('keeps the WAL bounded with the checkpointer and every row is intact on reopen (guards against an unbounded WAL and lost or torn pages)', async () => {
    // The bound is about the checkpointer's logic keeping pace with the writer, so this test's file lives in memory
    // (tmpfs) where there is one: on a shared disk busy with other processes' writes, one checkpoint's fsync can take
    // hundreds of milliseconds, during which the writer (PASSIVE checkpoints never block it) keeps appending — a
    // measure of the disk, not of this code. A full run of `npm test` on 2 cores once saw 37 MB that way.
    if (existsSync('/dev/shm')) {
      const shm = mkdtempSync('/dev/shm/ccagent-ckpt-');
      shmDirs.push(shm);
      file = path.join(shm, 'db.sqlite');
    }
    const db = openDb();
    // A tenth of the default scale, so that the bound is well under what the control reaches in this short loop.
    const c = start({ path: file, writer: db, synchronous: 'normal', walPagesThreshold: 100, intervalMs: 5 });
    expect(await c.ready).toBe(true);
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(0);
    const maxWal = await writeLoop(db, ROWS, c, 10);
    const seen = c.stats();
    expect(
      maxWal,
      `WAL peaked at ${maxWal} bytes; checkpoints ${seen.checkpoints}, longest ${seen.maxCheckpointMs} ms, ` +
        `busy ${seen.busy}, restarts ${seen.restarts}`,
    ).toBeLessThan(WAL_BOUND);
    const s = c.stats();
    expect(s.state).toBe('running');
    expect(s.nudges).toBe(ROWS);
    expect(s.checkpoints).toBeGreaterThan(0);
    expect(s.framesCheckpointed).toBeGreaterThan(0);
    expect(s.errors).toBe(0);
    db.close();
    await c.stop();
    const again = openDb();
    expect(again.pragma('integrity_check', { simple: true })).toBe('ok');
    expect(again.prepare('SELECT count(*) AS n FROM rows').get()).toEqual({ n: ROWS });
    expect(again.prepare('SELECT body FROM rows WHERE id = ?').get(ROWS)).toEqual({
      body: `row ${ROWS} `.padEnd(1000, 'x'),
    });
  });

  it('checkpoints a quiet WAL within maxDelayMs even without nudges (guards against commits left in the WAL forever when the writer is not wired to nudge)', async () => {
    const db = openDb();
    const c = start({ path: file, writer: db, maxDelayMs: 50, intervalMs: 10 });
    expect(await c.ready).toBe(true);
    await writeLoop(db, 200);
    const deadline = Date.now() + 5000;
    while (c.stats().framesCheckpointed === 0 && Date.now() < deadline) await sleep(20);
    expect(c.stats().framesCheckpointed).toBeGreaterThan(0);
  });
});

describe('stop()', () => {
  it('leaves the database file complete and the WAL empty while the writer stays open, and gives the writer its auto-checkpoint back (guards against a large WAL after a clean close)', async () => {
    const db = openDb();
    db.pragma('wal_autocheckpoint = 500');
    const c = start({ path: file, writer: db, walPagesThreshold: 1_000_000, maxDelayMs: 60_000 });
    expect(await c.ready).toBe(true);
    await writeLoop(db, 2000, c);
    expect(walBytes()).toBeGreaterThan(1024 * 1024);
    await c.stop();
    expect(c.stats().state).toBe('stopped');
    expect(walBytes()).toBe(0);
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(500);
    // The main file alone (no WAL next to it) holds every committed row.
    const copy = path.join(dir, 'copy.sqlite');
    copyFileSync(file, copy);
    const alone = new Database(copy, { readonly: true });
    opened.push(alone);
    expect(alone.prepare('SELECT count(*) AS n FROM rows').get()).toEqual({ n: 2000 });
    await c.stop();
  });

  it('deletes the WAL when the writer closed first (the worker is the last connection)', async () => {
    const db = openDb();
    const c = start({ path: file, writer: db, walPagesThreshold: 1_000_000, maxDelayMs: 60_000 });
    expect(await c.ready).toBe(true);
    await writeLoop(db, 500, c);
    db.close();
    expect(existsSync(`${file}-wal`)).toBe(true);
    await c.stop();
    expect(existsSync(`${file}-wal`)).toBe(false);
    const again = openDb();
    expect(again.prepare('SELECT count(*) AS n FROM rows').get()).toEqual({ n: 500 });
  });
});

describe('contention', () => {
  it('another connection holding a long write transaction neither makes the checkpointer fail nor delays the writer’s commits after it (guards against checkpoints taking the write lock)', async () => {
    const db = openDb();
    const c = start({ path: file, writer: db, intervalMs: 5, walPagesThreshold: 50 });
    expect(await c.ready).toBe(true);
    await writeLoop(db, 1000, c);
    const other = openDb();
    other.exec('BEGIN IMMEDIATE');
    other.prepare('INSERT INTO rows (body) VALUES (?)').run('held');
    for (let i = 0; i < 30; i++) {
      c.nudge();
      await sleep(10);
    }
    other.exec('COMMIT');
    const insert = db.prepare('INSERT INTO rows (body) VALUES (?)');
    let worst = 0;
    for (let i = 0; i < 2000; i++) {
      const t0 = performance.now();
      insert.run('after'.padEnd(1000, 'y'));
      worst = Math.max(worst, performance.now() - t0);
      c.nudge();
      if (i % 25 === 0) await yieldToLoop();
    }
    // A commit that waited for the checkpointer's lock would take at least SQLite's first busy sleep (1 ms) and
    // usually its restartWaitMs; PASSIVE checkpoints never make it wait at all.
    expect(worst).toBeLessThan(250);
    const s = c.stats();
    expect(s.errors).toBe(0);
    expect(s.state).toBe('running');
    expect(db.prepare('SELECT count(*) AS n FROM rows').get()).toEqual({ n: 3001 });
  });

  it('a reader pinning an old snapshot: the WAL passes the hard bound, the checkpointer escalates and warns once, writes go on, and the WAL shrinks once the reader lets go (guards against a silently unbounded WAL and against escalation breaking the writer)', async () => {
    const db = openDb();
    const logger = recordingLogger();
    const limit = 1024 * 1024;
    const c = start({
      path: file,
      writer: db,
      logger,
      intervalMs: 5,
      walPagesThreshold: 50,
      walHardLimitBytes: limit,
      escalationWaitMs: 20,
      escalationBackoffMs: 100,
    });
    expect(await c.ready).toBe(true);
    const reader = openDb();
    reader.exec('BEGIN');
    expect(reader.prepare('SELECT count(*) AS n FROM rows').get()).toEqual({ n: 0 });
    const insert = db.prepare('INSERT INTO rows (body) VALUES (?)');
    let worst = 0;
    const deadline = Date.now() + 10_000;
    let written = 0;
    while ((c.stats().escalations < 2 || walBytes() <= limit) && Date.now() < deadline) {
      const t0 = performance.now();
      insert.run('pinned'.padEnd(1000, 'z'));
      worst = Math.max(worst, performance.now() - t0);
      written++;
      c.nudge();
      if (written % 5 === 0) await sleep(1);
    }
    expect(c.stats().escalations).toBeGreaterThanOrEqual(2);
    expect(walBytes()).toBeGreaterThan(limit);
    // Escalated checkpoints wait 20 ms for the reader, holding the write lock: the writer waits about that long,
    // never its own 5 s busy timeout.
    expect(worst).toBeLessThan(1000);
    reader.exec('COMMIT');
    const shrinkBy = Date.now() + 10_000;
    while (walBytes() > limit && Date.now() < shrinkBy) {
      insert.run('later');
      written++;
      c.nudge();
      await sleep(20);
    }
    expect(walBytes()).toBeLessThanOrEqual(limit);
    const warnings = logger.lines.filter((l) => l.level === 'warn' && l.msg?.includes('over its bound'));
    expect(warnings).toHaveLength(1);
    expect(logger.lines.some((l) => l.level === 'info' && l.msg?.includes('back under its bound'))).toBe(
      true,
    );
    expect(c.stats().errors).toBe(0);
    expect(db.prepare('SELECT count(*) AS n FROM rows').get()).toEqual({ n: written });
  });
});

describe('fallback', () => {
  it('a worker that cannot open the database falls back: ready is false, onFallback names the file, the writer keeps its auto-checkpoint (guards against a WAL nobody checkpoints)', async () => {
    const db = openDb();
    const reasons: Error[] = [];
    const missing = path.join(dir, 'no-such-dir', 'db.sqlite');
    const logger = recordingLogger();
    const c = start({ path: missing, writer: db, logger, onFallback: (e) => reasons.push(e) });
    expect(await c.ready).toBe(false);
    expect(c.stats().state).toBe('fallback');
    expect(reasons).toHaveLength(1);
    expect(reasons[0]?.message).toContain(missing);
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
    expect(logger.lines.some((l) => l.level === 'warn')).toBe(true);
    await c.stop();
    expect(reasons).toHaveLength(1);
  });

  it('refuses a database that is not in WAL mode (its checkpoints would do nothing)', async () => {
    const db = new Database(file);
    opened.push(db);
    db.exec('CREATE TABLE t (x)');
    const reasons: Error[] = [];
    const c = start({ path: file, writer: db, onFallback: (e) => reasons.push(e) });
    expect(await c.ready).toBe(false);
    expect(reasons[0]?.message).toContain('not in WAL mode');
  });

  it('a worker that dies after it ran turns the writer’s auto-checkpoint back on (guards against an unbounded WAL after a crash of the worker)', async () => {
    const db = openDb();
    db.pragma('wal_autocheckpoint = 250');
    const reasons: Error[] = [];
    const c = start({ path: file, writer: db, onFallback: (e) => reasons.push(e) });
    expect(await c.ready).toBe(true);
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(0);
    await checkpointerWorker(c)?.terminate();
    const deadline = Date.now() + 5000;
    while (reasons.length === 0 && Date.now() < deadline) await sleep(10);
    expect(reasons).toHaveLength(1);
    expect(c.stats().state).toBe('fallback');
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(250);
    // The writer checkpoints by itself again: the WAL stays near 250 pages.
    expect(await writeLoop(db, 3000)).toBeLessThan(4 * 1024 * 1024);
    await c.stop();
    expect(c.stats().state).toBe('stopped');
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(250);
  });
});
