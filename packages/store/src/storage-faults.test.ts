import path from 'node:path';
import { isEngineError, type CommandCallRecord } from '@ccagent/engine';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteStore, type SqliteStore } from './sqlite-store.js';
import { storageFailureOf, isStoreError } from '@ccagent/store-core';
import { foreignCall, newTask, tempDir } from '../test/support/test-helpers.js';

let dir: string;
let cleanup: () => void;
let file: string;
let store: SqliteStore;
let other: Database.Database | undefined;
beforeEach(() => {
  ({ dir, cleanup } = tempDir());
  file = path.join(dir, 'ccagent.db');
});
afterEach(async () => {
  if (other?.inTransaction) other.exec('ROLLBACK');
  other?.close();
  other = undefined;
  await store.close();
  cleanup();
});

/** Another connection takes the write lock, as a second process (a sqlite3 shell, a backup) would. */
function holdWriteLock(): Database.Database {
  other = new Database(file);
  other.exec('BEGIN IMMEDIATE');
  other.exec('CREATE TABLE IF NOT EXISTS probe (x INTEGER); INSERT INTO probe VALUES (1)');
  return other;
}

/** Largest gap between 2 ms timer ticks while `p` runs: how long the event loop was blocked at a stretch. */
async function maxLoopStall(p: Promise<unknown>): Promise<number> {
  let last = performance.now();
  let worst = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    worst = Math.max(worst, now - last);
    last = now;
  }, 2);
  try {
    await p.catch(() => undefined);
  } finally {
    clearInterval(timer);
  }
  return worst;
}

describe('another process holds the write lock', () => {
  it('waits without blocking the event loop, reports the lock in health, and commits in order once it is released (guards against the server freezing for the whole busy timeout)', async () => {
    store = openSqliteStore({ path: file, busyTimeoutMs: 5000 });
    await store.commit({ task: newTask('before', { createdAt: 1 }), create: true });
    const lock = holdWriteLock();
    const writes = Promise.all([
      store.commit({ task: newTask('a', { createdAt: 2 }), create: true }),
      store.appendStep('before', { kind: 'note', step: 1, at: 1 }),
      store.commit({ task: newTask('b', { createdAt: 3 }), create: true }),
    ]);
    await new Promise((r) => setTimeout(r, 60));
    const health = store.checkHealth();
    expect(health).toMatchObject({ ok: false, code: 'locked' });
    expect(!health.ok && health.error).toMatch(/locked by another process/);
    expect(await store.getTask('a')).toBeUndefined(); // not acknowledged, not visible
    setTimeout(() => lock.exec('ROLLBACK'), 600);
    const stall = await maxLoopStall(writes);
    const [a, step, b] = await writes;
    expect(a).toEqual({ history: [], steps: [] });
    expect(step.seq).toBe(1);
    expect(b).toEqual({ history: [], steps: [] });
    expect((await store.listTasks()).map((t) => t.id)).toEqual(['before', 'a', 'b']);
    expect(store.checkHealth()).toEqual({ ok: true });
    // The old synchronous busy wait held the loop for the whole wait (here over 600 ms); now a few ms per attempt.
    // The lock is held long enough that the bound tells the two apart even on a loaded 2-core machine, where one
    // event-loop turn of unrelated work can take tens of milliseconds.
    expect(stall).toBeLessThan(250);
  });

  it('refuses a write with locked after the deadline, says so in health, writes nothing, and recovers through the health probe (guards against an endless wait and a stale "ok")', async () => {
    store = openSqliteStore({ path: file, busyTimeoutMs: 150 });
    const lock = holdWriteLock();
    const t0 = performance.now();
    const err = await store.commit({ task: newTask('x'), create: true }).catch((e: unknown) => e);
    expect(performance.now() - t0).toBeGreaterThanOrEqual(140);
    expect(isEngineError(err, 'store_failure')).toBe(true);
    expect(isStoreError((err as Error).cause, 'locked')).toBe(true);
    expect(storageFailureOf(err)).toMatchObject({
      code: 'locked',
      message: expect.stringMatching(/database is locked by another process/),
    });
    const clientErr = await store
      .upsertClient({ clientId: 'c', commands: [], connected: true, seenAt: 1 })
      .catch((e: unknown) => e);
    expect(isStoreError(clientErr, 'locked')).toBe(true);
    expect(store.checkHealth()).toMatchObject({ ok: false, code: 'locked' });
    expect(await store.probeHealth()).toMatchObject({ ok: false, code: 'locked' }); // still held
    lock.exec('ROLLBACK');
    expect(await store.probeHealth()).toEqual({ ok: true });
    expect(await store.getTask('x')).toBeUndefined();
    await store.commit({ task: newTask('x'), create: true });
    expect((await store.getTask('x'))?.id).toBe('x');
  });

  it('refuses bindCall with locked after the deadline and binds nothing; the same bind succeeds once the lock is gone (guards against a call sent without its recorded client)', async () => {
    store = openSqliteStore({ path: file, busyTimeoutMs: 100 });
    await store.commit({ task: newTask('t', { status: 'waiting_for_command' }), create: true });
    await store.commit({ task: newTask('t', { status: 'waiting_for_command' }), commandCall: pendingCall });
    const lock = holdWriteLock();
    const err = await store.bindCall('t:1', 'pc-a').catch((e: unknown) => e);
    expect(isEngineError(err, 'store_failure')).toBe(true);
    expect(storageFailureOf(err)?.code).toBe('locked');
    expect((await store.getCommandCall('t:1'))?.sentTo).toBeUndefined();
    lock.exec('ROLLBACK');
    expect((await store.bindCall('t:1', 'pc-a')).sentTo).toBe('pc-a');
  });

  it('close() refuses queued writes it cannot commit instead of hanging (guards against a shutdown stuck on a foreign lock)', async () => {
    store = openSqliteStore({ path: file, busyTimeoutMs: 10_000 });
    holdWriteLock();
    const p = store.commit({ task: newTask('late'), create: true }).catch((e: unknown) => e);
    await new Promise((r) => setTimeout(r, 20));
    await store.close();
    expect(storageFailureOf(await p)?.code).toBe('locked');
  });
});

const pendingCall: CommandCallRecord = {
  callId: 't:1',
  taskId: 't',
  command: 'dig',
  args: {},
  timeoutMs: 60_000,
  status: 'pending',
  dispatchCount: 1,
  createdAt: 1,
};

describe('the disk is full', () => {
  it('refuses bindCall with disk_full, binds nothing, and binds once space is back (guards against a call sent without its recorded client)', async () => {
    store = openSqliteStore({ path: file });
    await store.commit({ task: newTask('t', { status: 'waiting_for_command' }), create: true });
    await store.commit({ task: newTask('t', { status: 'waiting_for_command' }), commandCall: pendingCall });
    const db = (store as unknown as { db: Database.Database }).db;
    const pages = db.pragma('page_count', { simple: true }) as number;
    db.pragma(`max_page_count = ${pages}`);
    // A client id far longer than any real one, so that the row must grow into new pages the file may not get.
    const long = 'pc-'.padEnd(100_000, 'x');
    const err = await store.bindCall('t:1', long).catch((e: unknown) => e);
    expect(isEngineError(err, 'store_failure')).toBe(true);
    expect(storageFailureOf(err)?.code).toBe('disk_full');
    expect((await store.getCommandCall('t:1'))?.sentTo).toBeUndefined();
    db.pragma('max_page_count = 1073741823');
    expect((await store.bindCall('t:1', long)).sentTo).toBe(long);
  });

  it('refuses the write with disk_full, keeps other writes of the batch, reports it in health and recovers (guards against a generic error and a health check blind to failing writes)', async () => {
    store = openSqliteStore({ path: file });
    await store.commit({ task: newTask('t'), create: true });
    const db = (store as unknown as { db: Database.Database }).db;
    const pages = db.pragma('page_count', { simple: true }) as number;
    db.pragma(`max_page_count = ${pages + 2}`); // the file may hardly grow: what a full disk does to SQLite
    const big = 'x'.repeat(200_000);
    const [small, full] = await Promise.allSettled([
      store.appendStep('t', { kind: 'note', step: 1, at: 1 }),
      store.appendStep('t', { kind: 'note', step: 1, at: 2, output: big }),
    ]);
    expect(full.status).toBe('rejected');
    const err = (full as PromiseRejectedResult).reason as unknown;
    expect(isEngineError(err, 'store_failure')).toBe(true);
    expect(storageFailureOf(err)).toMatchObject({
      code: 'disk_full',
      message: expect.stringMatching(/disk is full/),
    });
    expect(small.status).toBe('fulfilled');
    expect(store.checkHealth()).toMatchObject({ ok: false, code: 'disk_full' });
    expect((await store.getSteps('t')).map((s) => s.at)).toEqual([1]);
    db.pragma('max_page_count = 1073741823');
    expect(await store.probeHealth()).toEqual({ ok: true });
    await store.appendStep('t', { kind: 'note', step: 1, at: 3, output: big });
    expect((await store.getSteps('t')).map((s) => s.at)).toEqual([1, 3]);
  });
});

describe('a packed model step whose write is rolled back', () => {
  const SYSTEM = `system prompt ${'s'.repeat(3000)}`;
  const modelStep = (at: number, extra: string, output?: string) => ({
    kind: 'native',
    step: 1,
    at,
    input: {
      messages: [
        { role: 'system', content: SYSTEM },
        { role: 'user', content: `task ${extra} ${'u'.repeat(2000)}` },
      ],
    },
    ...(output === undefined ? {} : { output }),
  });
  /** Hashes that steps or chunks reference but step_messages lacks (what a user would see as a broken step). */
  function dangling(): unknown[] {
    const db = new Database(file, { readonly: true });
    const rows = db
      .prepare(
        `WITH chunk(hash) AS (SELECT j.value FROM steps, json_each(steps.input_packed, '$.messages') AS j
                             WHERE steps.input_packed IS NOT NULL),
              msg(hash) AS (SELECT j.value FROM chunk JOIN step_messages m ON m.hash = chunk.hash, json_each(m.body) AS j)
         SELECT hash FROM chunk WHERE hash NOT IN (SELECT hash FROM step_messages)
         UNION ALL SELECT hash FROM msg WHERE hash NOT IN (SELECT hash FROM step_messages)`,
      )
      .all();
    db.close();
    return rows;
  }
  const messageRows = () => {
    const db = new Database(file, { readonly: true });
    const n = (db.prepare('SELECT count(*) AS n FROM step_messages').get() as { n: number }).n;
    db.close();
    return n;
  };

  it('on a full disk takes its new messages back with it, keeps those of the write before it, and writes them again once space is back (guards against dangling or orphaned message rows)', async () => {
    store = openSqliteStore({ path: file });
    await store.commit({ task: newTask('t'), create: true });
    await store.appendStep('t', modelStep(1, 'first'));
    const before = messageRows();
    expect(before).toBeGreaterThan(0);
    const db = (store as unknown as { db: Database.Database }).db;
    const pages = db.pragma('page_count', { simple: true }) as number;
    db.pragma(`max_page_count = ${pages + 4}`); // room for the new messages, not for the step's 200 KB output
    const err = await store
      .appendStep('t', modelStep(2, 'second', 'o'.repeat(200_000)))
      .catch((e: unknown) => e);
    expect(storageFailureOf(err)?.code).toBe('disk_full');
    expect(messageRows()).toBe(before); // the new user message and chunk were rolled back with the step
    expect(dangling()).toEqual([]);
    expect((await store.getSteps('t')).map((s) => s.at)).toEqual([1]);
    db.pragma('max_page_count = 1073741823');
    const again = modelStep(2, 'second', 'o'.repeat(200_000));
    await store.appendStep('t', again);
    expect(dangling()).toEqual([]);
    const steps = await store.getSteps('t');
    expect(steps.map((s) => s.at)).toEqual([1, 2]);
    expect(JSON.stringify(steps[1]?.input)).toBe(JSON.stringify(again.input));
  });

  it('refused after its steps were written (a command call of another task) leaves no message rows, while a commit of the same batch keeps its own, and the same step written again stores them (guards against one write of a group commit leaking rows into another, or a rolled-back row taken as stored)', async () => {
    store = openSqliteStore({ path: file });
    await store.commit({ task: newTask('t'), create: true });
    const running = newTask('t', { status: 'running' });
    const [ok, refused] = await Promise.allSettled([
      store.commit({ task: running, steps: [modelStep(1, 'kept')] }),
      store.commit({ task: running, steps: [modelStep(2, 'refused')], commandCall: foreignCall }),
    ]);
    expect(ok.status).toBe('fulfilled');
    expect(refused.status).toBe('rejected');
    expect(isEngineError((refused as PromiseRejectedResult).reason, 'invalid_input')).toBe(true);
    const db = new Database(file, { readonly: true });
    const bodies = (db.prepare('SELECT body FROM step_messages').all() as Array<{ body: string }>).map(
      (r) => r.body,
    );
    db.close();
    expect(bodies.some((b) => b.includes('task kept'))).toBe(true);
    expect(bodies.some((b) => b.includes('task refused'))).toBe(false);
    expect(dangling()).toEqual([]);
    const steps = await store.getSteps('t');
    expect(steps).toHaveLength(1);
    expect(JSON.stringify(steps[0]?.input)).toBe(JSON.stringify(modelStep(1, 'kept').input));
    // The same step committed again writes the rows the refused write took back (none is taken as stored).
    await store.commit({ task: running, steps: [modelStep(2, 'refused')] });
    expect(dangling()).toEqual([]);
    const again = await store.getSteps('t');
    expect(JSON.stringify(again[1]?.input)).toBe(JSON.stringify(modelStep(2, 'refused').input));
  });
});
