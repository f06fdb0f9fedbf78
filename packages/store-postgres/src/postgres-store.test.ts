import net from 'node:net';
import { isEngineError, type StepRecord, type Task } from '@ccagent/engine';
import { storageFailureOf, isStoreError } from '@ccagent/store-core';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LeaderLease } from './lease.js';
import { PG_SCHEMA_VERSION } from './migrate.js';
import { openPostgresStore, type PostgresStore } from './postgres-store.js';
import { SQL } from './sql.js';
import { createTestDatabase, TEST_PG_URL, truncateAll } from '../test/support/test-database.js';

type Rec = StepRecord & { step: number; at: number };

function newTask(id: string, overrides: Partial<Task> = {}): Task {
  return {
    id,
    kind: 'demo',
    status: 'running',
    clientId: null,
    prompt: `prompt of ${id}`,
    allowedCommands: [],
    memory: { n: 1 },
    metadata: {},
    budgets: {},
    counters: { steps: 0, toolCalls: 0, questions: 0 },
    createdAt: 1000,
    updatedAt: 1000,
    ...overrides,
  };
}

describe.skipIf(TEST_PG_URL === undefined)('PostgresStore beyond the contract', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let store: PostgresStore;
  let raw: pg.Client;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });
  beforeEach(async () => {
    store = await openPostgresStore({ url: db.url });
    await truncateAll(db.url);
    raw = new pg.Client({ connectionString: db.url });
    await raw.connect();
  });
  afterEach(async () => {
    await store.close();
    await raw.end();
  });

  it('an acknowledged commit is visible to another connection at once, and a refused one left nothing (guards against acknowledging before COMMIT)', async () => {
    await store.commit({ task: newTask('d', { status: 'queued' }), create: true });
    const reader = new pg.Pool({ connectionString: db.url, max: 4 });
    const pending = Array.from({ length: 30 }, (_, i) =>
      store.appendStep('d', { kind: 'note', output: i, step: 1, at: i }).then(async (s) => {
        // The instant the write is acknowledged, a separate session sees it committed.
        const r = await reader.query('SELECT 1 FROM steps WHERE task_id = $1 AND seq = $2', ['d', s.seq]);
        return r.rowCount;
      }),
    );
    expect(await Promise.all(pending)).toEqual(Array.from({ length: 30 }, () => 1));
    await reader.end();
    const err = await store
      .commit({
        task: newTask('d', { status: 'running' }),
        expectedStatus: 'running',
        history: [{ type: 'note', text: 'x', step: 1, at: 1 }],
      })
      .catch((e: unknown) => e);
    expect(isEngineError(err, 'conflict')).toBe(true);
    expect((await raw.query('SELECT 1 FROM history')).rowCount).toBe(0);
  });

  it('what the store remembers of a task (status, last seqs) follows every commit, append and rollback (guards against a stale cache refusing or misnumbering the next write)', async () => {
    await store.commit({ task: newTask('h', { status: 'queued' }), create: true });
    await store.appendStep('h', { kind: 'note', step: 1, at: 1 });
    await store.commit({
      task: newTask('h', { status: 'running' }),
      expectedStatus: 'queued',
      history: [{ type: 'note', text: 'a', step: 1, at: 2 }],
    });
    await store.appendStep('h', { kind: 'note', step: 1, at: 3 });
    // A write that fails alone in a batch (a conflict) and one that succeeds after it.
    const [bad, good] = await Promise.allSettled([
      store.commit({ task: newTask('h', { status: 'completed' }), expectedStatus: 'queued' }),
      store.commit({
        task: newTask('h', { status: 'waiting_for_command' }),
        expectedStatus: 'running',
        history: [
          { type: 'note', text: 'b', step: 2, at: 4 },
          { type: 'note', text: 'c', step: 2, at: 4 },
        ],
        steps: [{ kind: 'decision', step: 2, at: 4 }],
      }),
    ]);
    expect(bad.status).toBe('rejected');
    expect(good.status).toBe('fulfilled');
    const r = await store.commit({
      task: newTask('h', { status: 'running' }),
      expectedStatus: 'waiting_for_command',
      history: [{ type: 'note', text: 'd', step: 3, at: 5 }],
    });
    expect(r.history.map((x) => x.seq)).toEqual([4]);
    expect((await store.getHistory('h')).map((x) => x.seq)).toEqual([1, 2, 3, 4]);
    expect((await store.getSteps('h')).map((x) => x.seq)).toEqual([1, 2, 3]);
    expect((await store.getTask('h'))?.status).toBe('running');
  });

  it('a write of a fenced leader is refused once another process took the lease, and nothing of it is written (guards against a paused old leader writing)', async () => {
    const a = await LeaderLease.open({ url: db.url, holder: 'a', ttlMs: 60_000 });
    const b = await LeaderLease.open({ url: db.url, holder: 'b', ttlMs: 60_000 });
    try {
      const tokenA = await a.tryAcquire();
      expect(tokenA).toBe(1);
      store.fenceWith(a);
      await store.commit({ task: newTask('f'), create: true });
      // A live holder keeps the lease: the standby cannot take it.
      expect(await b.tryAcquire()).toBeUndefined();
      expect((await b.holder())?.holder).toBe('a');
      // The holder's lease connection dies (the process froze and the network dropped it): b takes over.
      await raw.query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'ccagent-lease' AND pid <> ALL($1::int[])",
        [[]],
      );
      // b's own lease connection was terminated too: it reconnects through acquire().
      const tokenB = await b.acquire(AbortSignal.timeout(10_000));
      expect(tokenB).toBe(2);
      // a still believes it holds token 1 (it has not noticed): its writes are refused by the fence.
      expect(a.token).toBe(1);
      const err = await store
        .commit({
          task: newTask('f', { updatedAt: 5 }),
          history: [{ type: 'note', text: 'late', step: 1, at: 5 }],
        })
        .catch((e: unknown) => e);
      expect(isEngineError(err, 'store_failure')).toBe(true);
      expect(isStoreError((err as Error).cause, 'fenced')).toBe(true);
      expect((err as Error).message).toMatch(/no longer holds the lease/);
      expect(storageFailureOf(err)).toBeUndefined();
      expect(store.checkHealth()).toMatchObject({ ok: false, code: 'fenced' });
      expect((await raw.query('SELECT 1 FROM history')).rowCount).toBe(0);
      expect((await store.getTask('f'))?.updatedAt).toBe(1000);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('a standby takes the lease as soon as the holder releases it, with the next token (guards against two leaders or a stuck standby)', async () => {
    const a = await LeaderLease.open({ url: db.url, holder: 'a', ttlMs: 60_000, pollEveryMs: 20 });
    const b = await LeaderLease.open({ url: db.url, holder: 'b', ttlMs: 60_000, pollEveryMs: 20 });
    try {
      expect(await a.tryAcquire()).toBe(1);
      const lost: string[] = [];
      a.onLost((why) => lost.push(why));
      const waiting = b.acquire(AbortSignal.timeout(10_000));
      await new Promise((r) => setTimeout(r, 100));
      expect(b.token).toBeUndefined();
      const t0 = performance.now();
      await a.close(); // clean shutdown gives the lease up
      expect(await waiting).toBe(2);
      expect(performance.now() - t0).toBeLessThan(2000);
      expect(lost).toEqual([]);
    } finally {
      await b.close();
    }
  });

  it('a leader that cannot renew within the ttl gives the lease up by itself (guards against a cut-off leader believing it still leads)', async () => {
    const a = await LeaderLease.open({ url: db.url, holder: 'a', ttlMs: 400, renewEveryMs: 100 });
    const b = await LeaderLease.open({ url: db.url, holder: 'b', ttlMs: 400, pollEveryMs: 50 });
    try {
      expect(await a.tryAcquire()).toBe(1);
      const lost = new Promise<string>((resolve) => a.onLost(resolve));
      // b takes the row over behind a's back (as after an expiry a could not see): a's next renewal finds token 2.
      await raw.query("UPDATE leases SET expires_at = clock_timestamp() - interval '1 second'");
      expect(await b.tryAcquire()).toBe(2);
      expect(await lost).toMatch(/another orchestrator took the lease/);
      expect(a.token).toBeUndefined();
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('refuses a database of a newer schema and one with foreign tables, touching nothing (guards against a downgrade corrupting data)', async () => {
    await raw.query('INSERT INTO ccagent_schema (version, hash) VALUES ($1, $2)', [
      PG_SCHEMA_VERSION + 1,
      'x',
    ]);
    const newer = await openPostgresStore({ url: db.url }).catch((e: unknown) => e);
    expect(isStoreError(newer, 'schema_too_new')).toBe(true);
    await raw.query('DELETE FROM ccagent_schema WHERE version = $1', [PG_SCHEMA_VERSION + 1]);
    const foreign = await createTestDatabase();
    try {
      const c = new pg.Client({ connectionString: foreign.url });
      await c.connect();
      await c.query('CREATE TABLE tasks (x int)');
      await c.end();
      const err = await openPostgresStore({ url: foreign.url }).catch((e: unknown) => e);
      expect(isStoreError(err, 'not_a_ccagent_db')).toBe(true);
      const ro = await openPostgresStore({
        url: foreign.url.replace(/\/[^/]+$/, '/postgres'),
        readonly: true,
      }).catch((e: unknown) => e);
      expect(isStoreError(ro, 'schema_outdated')).toBe(true);
    } finally {
      await foreign.drop();
    }
  });

  it('two orchestrators opening a new database at once both succeed and it is migrated once (guards against a migration race)', async () => {
    const fresh = await createTestDatabase();
    try {
      const [s1, s2] = await Promise.all([
        openPostgresStore({ url: fresh.url }),
        openPostgresStore({ url: fresh.url }),
      ]);
      await s1.close();
      await s2.close();
      const c = new pg.Client({ connectionString: fresh.url });
      await c.connect();
      const r = await c.query<{ version: number }>('SELECT version FROM ccagent_schema ORDER BY version');
      await c.end();
      expect(r.rows.map((x) => x.version)).toEqual(
        Array.from({ length: PG_SCHEMA_VERSION }, (_, i) => i + 1),
      );
    } finally {
      await fresh.drop();
    }
  });

  it('a read-only store reads but refuses every write (guards against the CLI changing the database)', async () => {
    await store.commit({ task: newTask('r'), create: true });
    const ro = await openPostgresStore({ url: db.url, readonly: true });
    try {
      expect((await ro.getTask('r'))?.id).toBe('r');
      expect((await ro.listTasksPage({})).total).toBe(1);
      const err = await ro.commit({ task: newTask('r2'), create: true }).catch((e: unknown) => e);
      expect(isStoreError(err, 'readonly')).toBe(true);
    } finally {
      await ro.close();
    }
  });

  it('an unreachable server is a clear open_failed, and a cut network makes writes fail as io_error and /health say so until it is back (guards against a silent hang)', async () => {
    const err = await openPostgresStore({
      url: 'postgres://postgres@127.0.0.1:1/none',
      connectTimeoutMs: 2000,
    }).catch((e: unknown) => e);
    expect(isStoreError(err, 'open_failed')).toBe(true);
    expect((err as Error).message).toMatch(/cannot connect to postgres:\/\/postgres@127\.0\.0\.1:1\/none/);
    const proxy = await TcpProxy.start(new URL(db.url));
    const viaProxy = await openPostgresStore({ url: proxy.url(db.url), connectTimeoutMs: 1000 });
    try {
      await viaProxy.commit({ task: newTask('x', { status: 'queued' }), create: true });
      await proxy.cut();
      const failed = await viaProxy
        .commit({ task: newTask('x', { status: 'running' }), expectedStatus: 'queued' })
        .catch((e: unknown) => e);
      expect(isEngineError(failed, 'store_failure')).toBe(true);
      expect(storageFailureOf(failed)?.code).toBe('io_error');
      expect(viaProxy.checkHealth()).toMatchObject({ ok: false, code: 'io_error' });
      expect(await viaProxy.probeHealth()).toMatchObject({ ok: false, code: 'io_error' });
      expect((await store.getTask('x'))?.status).toBe('queued');
      // The network is back: the next write opens a new connection and succeeds; health recovers.
      await proxy.restore();
      await viaProxy.commit({ task: newTask('x', { status: 'running' }), expectedStatus: 'queued' });
      expect((await store.getTask('x'))?.status).toBe('running');
      expect(await viaProxy.probeHealth()).toEqual({ ok: true });
    } finally {
      await viaProxy.close();
      await proxy.close();
    }
  });
});

describe.skipIf(TEST_PG_URL === undefined)('PostgresStore write batches on the wire', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let proxy: TcpProxy;
  let store: PostgresStore;
  let raw: pg.Client;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });
  beforeEach(async () => {
    await (await openPostgresStore({ url: db.url })).close(); // migrated
    await truncateAll(db.url);
    proxy = await TcpProxy.start(new URL(db.url), { answerDelayMs: 25 });
    store = await openPostgresStore({ url: proxy.url(db.url) });
    raw = new pg.Client({ connectionString: db.url });
    await raw.connect();
  });
  afterEach(async () => {
    await store.close();
    await proxy.close();
    await raw.end();
  });

  const ids = Array.from({ length: 20 }, (_, i) => `t${i}`);
  const step = (n: number): Rec => ({
    kind: 'note',
    step: n,
    at: n,
    input: { messages: [{ role: 'user', content: `s${n}` }] },
  });
  const call = (taskId: string, n: number) => ({
    callId: `${taskId}:call:${n}`,
    taskId,
    command: 'dig',
    args: { n },
    timeoutMs: 1000,
    status: 'pending' as const,
    dispatchCount: 0,
    createdAt: n,
  });
  const count = async (sql: string) => (await raw.query(sql)).rowCount;

  it('a batch of commits, an appended step and a bind of known tasks, fenced, costs one round trip, and each write lands (guards against one round trip per statement)', async () => {
    const lease = await LeaderLease.open({ url: db.url, holder: 'a', ttlMs: 60_000 });
    try {
      await lease.tryAcquire();
      store.fenceWith(lease);
      await Promise.all(ids.map((id) => store.commit({ task: newTask(id), create: true })));
      await store.commit({ task: newTask('t0', { updatedAt: 2 }), commandCall: call('t0', 1) });
      proxy.turns = 0;
      const [commits, appended, bound] = await Promise.all([
        Promise.all(
          ids.map((id, i) =>
            store.commit({
              task: newTask(id, { updatedAt: 10 + i, memory: { n: i } }),
              expectedStatus: 'running',
              history: [{ type: 'note', text: `h${i}`, step: 1, at: 10 + i }],
              steps: [step(1), step(2)],
              commandCall: call(id, 2),
            }),
          ),
        ),
        store.appendStep('t5', step(3)),
        store.bindCall('t0:call:1', 'computer-7'),
      ]);
      expect(proxy.turns).toBe(1);
      expect(commits.map((r) => r.steps.map((x) => x.seq))).toEqual(ids.map(() => [1, 2]));
      expect(appended).toMatchObject({ taskId: 't5', seq: 3 });
      expect(bound).toMatchObject({ callId: 't0:call:1', sentTo: 'computer-7' });
      // Acknowledged means committed: another connection sees every row.
      expect(await count('SELECT 1 FROM history')).toBe(20);
      expect(await count('SELECT 1 FROM steps')).toBe(41);
      expect(await count("SELECT 1 FROM command_calls WHERE call_id LIKE '%:call:2'")).toBe(20);
      expect((await raw.query("SELECT memory FROM task_memory WHERE task_id = 't7'")).rows[0]?.memory).toBe(
        '{"n":7}',
      );
    } finally {
      await lease.close();
    }
  });

  it('the rows of a batch go out as one statement per table, the last row of a task or call in its place, and a write that reads sees the rows before it (guards against a statement per row, and against grouping reordering writes)', async () => {
    const lease = await LeaderLease.open({ url: db.url, holder: 'a', ttlMs: 60_000 });
    try {
      await lease.tryAcquire();
      store.fenceWith(lease);
      await Promise.all(ids.map((id) => store.commit({ task: newTask(id), create: true })));
      proxy.executes = 0;
      proxy.queries = 0;
      proxy.turns = 0;
      await Promise.all(
        ids.map((id, i) =>
          store.commit({
            task: newTask(id, { updatedAt: 10 + i, memory: { n: i } }),
            history: [{ type: 'note', text: `h${i}`, step: 1, at: 10 + i }],
            steps: [step(1), step(2)],
            commandCall: call(id, 2),
          }),
        ),
      );
      expect(proxy.turns).toBe(1);
      // The fencing check, then one statement each: tasks, memory, history, steps, calls (it was five statements per
      // commit: 101). BEGIN and COMMIT are the two simple queries.
      expect(proxy.executes).toBe(6);
      expect(proxy.queries).toBe(2);
      expect(await count('SELECT 1 FROM history')).toBe(20);
      expect(await count('SELECT 1 FROM steps')).toBe(40);

      // One batch: t0 twice (its call pending, then closed), t1 in between, then a bind of a call of the batch.
      const at = { createdAt: 7 };
      proxy.turns = 0;
      const [, , second, , bound] = await Promise.all([
        store.commit({ task: newTask('t0', { updatedAt: 30 }), commandCall: { ...call('t0', 3), ...at } }),
        store.commit({ task: newTask('t1', { updatedAt: 31 }), commandCall: { ...call('t1', 3), ...at } }),
        store.commit({
          task: newTask('t0', { updatedAt: 32, prompt: 'second' }),
          history: [{ type: 'note', text: 'again', step: 2, at: 32 }],
          commandCall: {
            ...call('t0', 3),
            ...at,
            status: 'succeeded',
            outcome: { ok: true, result: 1 },
            completedAt: 32,
          },
        }),
        store.commit({ task: newTask('t2', { updatedAt: 33 }), commandCall: { ...call('t2', 3), ...at } }),
        store.bindCall('t1:call:3', 'computer-9'),
      ]);
      expect(second.history.map((h) => h.seq)).toEqual([2]);
      expect(proxy.turns).toBe(1);
      expect(bound).toMatchObject({ callId: 't1:call:3', sentTo: 'computer-9' });
      const row = (await raw.query("SELECT prompt, updated_at FROM tasks WHERE id = 't0'")).rows[0];
      expect(row).toEqual({ prompt: 'second', updated_at: '32' });
      const calls = await store.listCommandCalls({ status: ['pending', 'succeeded'] });
      const batch = calls.filter((c) => c.createdAt === 7);
      // Creation order as written (t0's call first, though its last row came after t1's), t0's call closed, and
      // t1's call — written in the same batch before the bind — bound.
      expect(batch.map((c) => [c.callId, c.status, c.sentTo ?? null])).toEqual([
        ['t0:call:3', 'succeeded', null],
        ['t1:call:3', 'pending', 'computer-9'],
        ['t2:call:3', 'pending', null],
      ]);
    } finally {
      await lease.close();
    }
  });

  it('in a pipelined batch, a write the database refuses is rolled back alone, one that refuses on what it read changes nothing, one whose remembered head went stale is re-read, and the others commit (guards against a failed statement taking the batch down or half of it kept)', async () => {
    await Promise.all(ids.map((id) => store.commit({ task: newTask(id), create: true })));
    // Another writer took t3's next history seq behind this store's back: its first try fails in the database.
    await raw.query(
      `INSERT INTO history (task_id, seq, step, at, type, body) VALUES ('t3', 1, 1, 1, 'note', '{"text":"x"}')`,
    );
    proxy.turns = 0;
    const out = await Promise.allSettled([
      ...ids.map((id, i) =>
        store.commit({
          // PostgreSQL refuses a NUL in text: t4's UPDATE fails in the database on every try.
          task: newTask(id, { updatedAt: 10 + i, ...(id === 't4' ? { prompt: 'nul \u0000' } : {}) }),
          history: [{ type: 'note', text: `h${i}`, step: 1, at: 10 + i }],
          steps: [step(1)],
        }),
      ),
      store.bindCall('no-such-call', 'computer-7'),
      store.commit({ task: newTask('t9', { status: 'queued', updatedAt: 99 }), expectedStatus: 'queued' }),
    ]);
    const rejected = out.flatMap((o, i) =>
      o.status === 'rejected' ? [{ i, err: o.reason as unknown }] : [],
    );
    expect(rejected.map((r) => r.i)).toEqual([4, 20, 21]);
    expect(isEngineError(rejected[0]?.err, 'store_failure')).toBe(true);
    expect(isEngineError(rejected[1]?.err, 'unknown_call')).toBe(true);
    expect(isEngineError(rejected[2]?.err, 'conflict')).toBe(true);
    // The pipelined try, then the savepoint one (a statement per round trip).
    expect(proxy.turns).toBeGreaterThan(1);
    const t3 = out[3] as PromiseFulfilledResult<{ history: Array<{ seq: number }> }>;
    expect(t3.value.history.map((h) => h.seq)).toEqual([2]);
    expect(await count("SELECT 1 FROM history WHERE task_id = 't4'")).toBe(0);
    expect(await count('SELECT 1 FROM history')).toBe(20);
    expect(await count("SELECT 1 FROM steps WHERE task_id = 't4'")).toBe(0);
    expect(await count('SELECT 1 FROM steps')).toBe(19);
    expect((await raw.query("SELECT updated_at FROM tasks WHERE id = 't4'")).rows[0]?.updated_at).toBe(
      '1000',
    );
    expect((await raw.query("SELECT updated_at FROM tasks WHERE id = 't9'")).rows[0]?.updated_at).toBe('19');
    // Nothing of t4 is remembered from the failed tries: its next commit numbers from the row.
    const next = await store.commit({
      task: newTask('t4', { updatedAt: 50 }),
      history: [{ type: 'note', text: 'again', step: 2, at: 50 }],
    });
    expect(next.history.map((h) => h.seq)).toEqual([1]);
  });

  it('new tasks are created in one round trip without reading their rows first, and an id that exists is refused alone as task_exists (guards against a create overwriting a task or failing the others)', async () => {
    await store.commit({ task: newTask('t0', { prompt: 'the first' }), create: true });
    const other = await openPostgresStore({ url: proxy.url(db.url) }); // knows nothing of t0
    try {
      proxy.turns = 0;
      const out = await Promise.allSettled(
        ids.map((id) =>
          other.commit({
            task: newTask(id, { prompt: `again ${id}` }),
            create: true,
            history: [{ type: 'note', text: 'created', step: 0, at: 1 }],
          }),
        ),
      );
      expect(out.map((o) => o.status)).toEqual(ids.map((id) => (id === 't0' ? 'rejected' : 'fulfilled')));
      expect(isEngineError((out[0] as PromiseRejectedResult).reason, 'task_exists')).toBe(true);
      expect(await count('SELECT 1 FROM tasks')).toBe(20);
      expect(await count("SELECT 1 FROM history WHERE task_id = 't0'")).toBe(0);
      expect((await raw.query("SELECT prompt FROM tasks WHERE id = 't0'")).rows[0]?.prompt).toBe('the first');
      proxy.turns = 0;
      await Promise.all(
        ['n1', 'n2', 'n3'].map((id) => other.commit({ task: newTask(id), create: true, steps: [step(1)] })),
      );
      expect(proxy.turns).toBe(1);
      expect(await count('SELECT 1 FROM tasks')).toBe(23);
    } finally {
      await other.close();
    }
  });

  it('the fencing check holds a share lock on the lease row until the write transaction ends, and fails on any other token (guards against a takeover racing a running write)', async () => {
    const other = new pg.Client({ connectionString: db.url });
    await other.connect();
    try {
      await raw.query(
        `INSERT INTO leases (name, holder, token, holder_pid, url, acquired_at, expires_at) VALUES ('l', 'a', 4, 1, NULL, now(), now() + interval '1 minute')`,
      );
      await raw.query('BEGIN');
      expect((await raw.query(SQL.fenceCheck, ['l', 4])).rows).toEqual([{ token: '4' }]);
      await other.query("SET lock_timeout = '300ms'");
      const blocked = await other
        .query('UPDATE leases SET token = token + 1 WHERE name = $1', ['l'])
        .catch((e: unknown) => e);
      expect((blocked as { code?: string }).code).toBe('55P03');
      await raw.query('ROLLBACK');
      await other.query('UPDATE leases SET token = token + 1 WHERE name = $1', ['l']);
      await raw.query('BEGIN');
      const stale = await raw.query(SQL.fenceCheck, ['l', 4]).catch((e: unknown) => e);
      expect((stale as Error).message).toMatch(/ccagent-fenced:5/);
      await raw.query('ROLLBACK');
      const none = await raw.query(SQL.fenceCheck, ['other', 4]).catch((e: unknown) => e);
      expect((none as Error).message).toMatch(/ccagent-fenced:none/);
    } finally {
      await other.end();
    }
  });
});

/**
 * A TCP relay to the test server that a test can cut (every connection dropped, new ones refused) and restore. With
 * `answerDelayMs` it holds the server's answers that long and counts round trips: `turns` grows when a client sends
 * after an answer reached it (what it sends in one go before any answer is one turn).
 */
class TcpProxy {
  private sockets = new Set<net.Socket>();
  private server: net.Server | undefined;
  /** Client sends that followed an answer, over every connection. */
  turns = 0;
  /** Statements the clients ran (with `answerDelayMs`): extended-protocol Executes and simple Queries. */
  executes = 0;
  queries = 0;
  private constructor(
    private readonly target: URL,
    private readonly answerDelayMs: number,
    private port = 0,
  ) {}

  static async start(target: URL, opts: { answerDelayMs?: number } = {}): Promise<TcpProxy> {
    const p = new TcpProxy(target, opts.answerDelayMs ?? 0);
    await p.restore();
    return p;
  }

  url(of: string): string {
    const u = new URL(of);
    u.port = String(this.port);
    return u.toString();
  }

  async restore(): Promise<void> {
    const server = net.createServer((inbound) => {
      const outbound = net.connect(Number(this.target.port), this.target.hostname);
      for (const s of [inbound, outbound]) {
        this.sockets.add(s);
        s.on('error', () => undefined);
        s.on('close', () => {
          this.sockets.delete(s);
          inbound.destroy();
          outbound.destroy();
        });
      }
      if (this.answerDelayMs === 0) {
        inbound.pipe(outbound);
        outbound.pipe(inbound);
        return;
      }
      let answered = true;
      let started = false; // the startup message has no type byte; every later one has
      let unread = Buffer.alloc(0);
      inbound.on('data', (d: Buffer) => {
        if (answered) this.turns++;
        answered = false;
        outbound.write(d);
        unread = Buffer.concat([unread, d]);
        for (;;) {
          const head = started ? 5 : 4;
          if (unread.length < head) break;
          const size = started ? 1 + unread.readInt32BE(1) : unread.readInt32BE(0);
          if (unread.length < size) break;
          if (started && unread[0] === 0x45) this.executes++; // 'E'
          if (started && unread[0] === 0x51) this.queries++; // 'Q'
          started = true;
          unread = unread.subarray(size);
        }
      });
      outbound.on('data', (d: Buffer) => {
        setTimeout(() => {
          answered = true;
          inbound.write(d);
        }, this.answerDelayMs);
      });
    });
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.port = (server.address() as net.AddressInfo).port;
    this.server = server;
  }

  async cut(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const s of this.sockets) s.destroy();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  close(): Promise<void> {
    return this.cut();
  }
}
