/**
 * Only the leader fires schedules: two built orchestrators on one PostgreSQL database, one active (the leader lease
 * holder) and one standby that stays up the whole time. A 1 s event schedule posts into a resident agent.
 *   1. Over the first periods only the leader fires.
 *   2. The leader is killed with kill -9: the standby takes over the firing; the killed one comes back as the new
 *      standby.
 *   3. The new leader freezes (SIGSTOP): its lease runs out after the ttl, so several occurrences fall due while no
 *      leader runs; the standby takes over and the frozen one is killed with kill -9.
 * Afterwards, from the database and the agent's history: every occurrence from the first to the last was fired
 * exactly once — those due while no leader ran are a few seconds late, well inside the runner's 60 s grace, so the
 * missed-firing policy does not apply and none may be dropped or merged into a later one — each firing's event
 * reached the agent once, and the processes' logs say which one fired each: each leader in its turn, never a
 * standby. Needs the PostgreSQL test server (CCAGENT_TEST_PG_URL); skipped with a notice without it.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MODEL } from './support/model.js';
import { eventually, faultConfig, sleep, startServer, type Server } from './support/server.js';

const PG_SERVER = process.env.CCAGENT_TEST_PG_URL || undefined;
if (PG_SERVER === undefined) {
  console.log(
    '[schedules-leader] SKIPPED: two orchestrators on PostgreSQL (CCAGENT_TEST_PG_URL is not set; run ' +
      '`eval "$(tools/postgres-test-server.sh --export)"`, see docs/resilience.md)',
  );
}

const EVERY_MS = 1000;
/** Periods fired by each leader before the test moves on. */
const PERIODS = 5;
/** The lease ttl: how long a frozen leader keeps the lease (a killed one is taken over sooner). */
const LEASE_TTL_MS = 5000;

type Json = Record<string, unknown>;
interface FiringRow {
  due_at: number;
  status: string;
  task_id: string | null;
  error: string | null;
}

let dir: string;
let fake: FakeOllama;
let dbName: string;
let dbUrl: string;
const servers: Server[] = [];

async function withPg<T>(url: string, f: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return await f(c);
  } finally {
    await c.end();
  }
}

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

const firings = (): Promise<FiringRow[]> =>
  withPg(dbUrl, async (c) =>
    (
      await c.query(
        `SELECT "due_at", "status", "task_id", "error" FROM "schedule_firings" WHERE "schedule_id" = 'tick' ORDER BY "due_at"`,
      )
    ).rows.map((r: Json) => ({
      due_at: Number(r['due_at']),
      status: String(r['status']),
      task_id: (r['task_id'] as string | null) ?? null,
      error: (r['error'] as string | null) ?? null,
    })),
  );

/** The due times (epoch ms) a process logged as fired (`schedules: fired`, JSON log lines on stderr). */
function firedBy(s: Server): number[] {
  const out: number[] = [];
  for (const line of s.stderr().split('\n')) {
    if (!line.includes('schedules: fired')) continue;
    const rec = JSON.parse(line) as Json;
    out.push(Date.parse(rec['due_at'] as string));
  }
  return out;
}

describe.skipIf(PG_SERVER === undefined)('schedules with two orchestrators on PostgreSQL', () => {
  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'resilience-schedules-'));
    fake = await startFakeOllama();
    dbName = `ccagent_sched_${randomBytes(5).toString('hex')}`;
    await withPg(PG_SERVER as string, (c) => c.query(`CREATE DATABASE ${dbName}`));
    const u = new URL(PG_SERVER as string);
    u.pathname = `/${dbName}`;
    dbUrl = u.toString();
  });
  afterAll(async () => {
    for (const s of servers) await s.kill9();
    await fake?.close();
    if (dbName)
      await withPg(PG_SERVER as string, (c) => c.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`));
    rmSync(dir, { recursive: true, force: true });
  });

  it('only the leader fires: each due time once while the standby is up, and after kill -9 the standby fires on without a double or a gap', async () => {
    fake.script(MODEL, () => ({ toolCalls: [{ name: 'wait', arguments: { seconds: 86_400 } }] }));
    const configFile = path.join(dir, 'config.json');
    const config = faultConfig(
      {},
      { taskKinds: { resident_agent: { periodBudgets: { hour: { maxSteps: 10_000 } } } } },
    );
    const start = async (port: number): Promise<Server> => {
      const s = await startServer({
        db: dbUrl,
        config,
        configFile,
        ollamaUrl: fake.url,
        port,
        logLevel: 'info',
        env: { CCAGENT_LEASE_TTL_MS: String(LEASE_TTL_MS) },
      });
      servers.push(s);
      return s;
    };
    const ports = [await freePort(), await freePort()];
    const leader = await start(ports[0] as number);
    expect(leader.startedAs).toBe('active');
    const standby = await start(ports[1] as number);
    // (when not: the leader could not renew its lease in time, or died; its log says which)
    expect(standby.startedAs, leader.stderr().slice(-2000)).toBe('standby');

    const created = await leader.http('/api/tasks', {
      method: 'POST',
      json: { task_kind: 'resident_agent', prompt: 'Count the ticks.', request_id: 'ticker' },
    });
    expect(created.status).toBe(201);
    const taskId = ((await created.json()) as { task: { id: string } }).task.id;
    const added = await leader.http('/api/schedules', {
      method: 'POST',
      json: { id: 'tick', every_ms: EVERY_MS, missed: 'run_once', event: { task_id: taskId, name: 'tick' } },
    });
    expect(added.status).toBe(201);
    const createdAt = ((await added.json()) as { schedule: { created_at: number } }).schedule.created_at;

    // 1. the leader fires while the standby is up
    const done = async (after = 0) =>
      (await firings()).filter((f) => f.status === 'done' && f.due_at > after).length;
    await eventually(async () => (await done()) >= PERIODS, 20_000, `${PERIODS} firings`);
    expect(firedBy(standby), 'a standby fired').toEqual([]);

    // 2. kill -9 of the leader: the standby takes over the firing; the killed one comes back as the standby
    const killedAt = Date.now();
    await leader.kill9();
    await standby.active;
    const takeoverMs = Date.now() - killedAt;
    const second = await start(ports[0] as number);
    expect(second.startedAs).toBe('standby');
    await eventually(
      async () => (await done(killedAt)) >= PERIODS,
      20_000,
      `${PERIODS} firings after the kill`,
    );

    // 3. the new leader freezes (SIGSTOP): its lease runs out, the new standby takes over after a gap of a few
    // periods, and the frozen one is then killed (kill -9) without ever running again
    const frozenAt = Date.now();
    standby.proc.kill('SIGSTOP');
    await second.active;
    const gapMs = Date.now() - frozenAt;
    await standby.kill9();
    const third = await start(ports[1] as number);
    expect(third.startedAs).toBe('standby');
    await eventually(
      async () => (await done(frozenAt + gapMs)) >= PERIODS,
      20_000,
      `${PERIODS} firings after the freeze`,
    );
    const paused = await second.http('/api/schedules/tick/pause', { method: 'POST', json: {} });
    expect(paused.status).toBe(200);
    await sleep(500);

    // Every occurrence from the first to the last, each exactly once, each done.
    const rows = await firings();
    console.log(
      `[schedules-leader] ${rows.length} firings, takeover ${takeoverMs} ms after kill -9, ${gapMs} ms after SIGSTOP, ` +
        `before kill ${rows.filter((f) => f.due_at <= killedAt).length}`,
    );
    const due = rows.map((f) => f.due_at);
    expect(new Set(due).size).toBe(due.length);
    const first = due[0] as number;
    expect((first - createdAt) % EVERY_MS).toBe(0);
    expect(due).toEqual(due.map((_, i) => first + i * EVERY_MS));
    expect(rows.filter((f) => f.status !== 'done')).toEqual([]);
    expect(rows.filter((f) => f.error !== null)).toEqual([]);
    expect(gapMs).toBeGreaterThan(2 * EVERY_MS); // the freeze left occurrences due while no leader ran

    // Each firing reached the agent once.
    const detail = (await (await second.http(`/api/tasks/${taskId}`)).json()) as {
      history: Array<{ type: string; data?: Json }>;
    };
    const posted = detail.history
      .filter((h) => h.type === 'event')
      .map((h) => Date.parse(h.data?.['due_at'] as string));
    expect(posted).toEqual(due);

    // Who fired: each leader in its turn, in order, never a standby (the third process only ever was one). A
    // firing a leader recorded but had not finished when it stopped is finished by the next one.
    const turns = [firedBy(leader), firedBy(standby), firedBy(second)];
    expect(firedBy(third)).toEqual([]);
    for (const t of turns) expect(t.length).toBeGreaterThanOrEqual(PERIODS - 1);
    for (const d of turns[0]!) expect(d).toBeLessThanOrEqual(killedAt);
    for (const d of turns[1]!) expect(d).toBeLessThanOrEqual(frozenAt);
    expect(Math.min(...turns[1]!)).toBeGreaterThan(Math.max(...turns[0]!));
    expect(Math.min(...turns[2]!)).toBeGreaterThan(Math.max(...turns[1]!));
    expect(turns.flat()).toEqual(due);
  }, 90_000);
});
