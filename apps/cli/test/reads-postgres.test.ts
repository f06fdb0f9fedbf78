// `--db postgres://…` reads the PostgreSQL store as `--db FILE` reads the SQLite one: the real run's database (see
// fixture-db.ts) copied row for row through the stores' own APIs into a fresh PostgreSQL database, then every read
// command of the built binary must print exactly what it prints from the SQLite file. Needs the test server
// (CCAGENT_TEST_PG_URL, set by .ci/run); skipped with a notice without it.
import { randomBytes } from 'node:crypto';
import { openSqliteStore } from '@ccagent/store';
import { openPostgresStore } from '@ccagent/store-postgres';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { FIXTURE_IDS } from './support/fixture-db.js';
import { runCli } from './support/run-cli.js';

const SERVER = process.env.CCAGENT_TEST_PG_URL || undefined;
if (SERVER === undefined) {
  console.log(
    '[cli] SKIPPED: --db postgres:// tests (CCAGENT_TEST_PG_URL is not set; see packages/store-postgres)',
  );
}

const file = inject('fixtureDb');
let url: string;
let dbName: string;

async function admin(sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: SERVER });
  await c.connect();
  await c.query(sql).finally(() => c.end());
}

/** Every task, its history, steps, calls (with bindings) and questions, and the clients and tools. */
async function copyFixture(to: string): Promise<void> {
  const from = openSqliteStore({ path: file, readonly: true });
  const store = await openPostgresStore({ url: to });
  try {
    for (const c of await from.listClients()) {
      await store.upsertClient({ ...c, seenAt: c.firstSeenAt });
      await store.setClientConnected(c.clientId, c.connected, c.lastSeenAt);
      await store.replaceClientTools(
        c.clientId,
        (await from.listTools({ clientId: c.clientId })).map(({ clientId: _c, recordedAt: _r, ...t }) => t),
        (await from.listTools({ clientId: c.clientId }))[0]?.recordedAt ?? c.lastSeenAt,
      );
    }
    for (const task of await from.listTasks()) {
      await store.commit({
        task,
        create: true,
        history: (await from.getHistory(task.id)).map(({ taskId: _t, seq: _s, ...h }) => h),
        steps: (await from.getSteps(task.id)).map(({ taskId: _t, seq: _s, ...s }) => s),
      });
      for (const call of await from.listCommandCalls({ taskId: task.id })) {
        const { sentTo, ...row } = call;
        await store.commit({ task, commandCall: { ...row, status: 'pending' } });
        if (sentTo !== undefined) await store.bindCall(call.callId, sentTo);
        await store.commit({ task, commandCall: row });
      }
      for (const q of await from.listQuestions(task.id)) await store.commit({ task, question: q });
    }
  } finally {
    await from.close();
    await store.close();
  }
}

describe.skipIf(SERVER === undefined)('ccagent --db postgres://', () => {
  beforeAll(async () => {
    dbName = `ccagent_cli_${randomBytes(5).toString('hex')}`;
    await admin(`CREATE DATABASE ${dbName}`);
    const u = new URL(SERVER as string);
    u.pathname = `/${dbName}`;
    url = u.toString();
    await copyFixture(url);
  });
  afterAll(async () => {
    if (dbName) await admin(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
  });

  const commands: Array<[string, string[]]> = [
    ['tasks list', ['tasks', 'list']],
    ['tasks list --json', ['--json', 'tasks', 'list']],
    ['tasks list --status completed', ['tasks', 'list', '--status', 'completed']],
    ['tasks show', ['tasks', 'show', FIXTURE_IDS.countdown]],
    ['tasks show --json', ['--json', 'tasks', 'show', FIXTURE_IDS.countdown]],
    ['tasks show of a waiting task', ['tasks', 'show', FIXTURE_IDS.ask]],
    ['clients list --json', ['--json', 'clients', 'list']],
    ['tools list', ['tools', 'list']],
  ];
  for (const [name, args] of commands) {
    it(`${name} prints the same from PostgreSQL as from the SQLite file (guards against a store that reads back differently)`, async () => {
      const fromFile = await runCli(['--db', file, ...args]);
      const fromPg = await runCli(['--db', url, ...args]);
      expect(fromFile).toMatchObject({ code: 0, stderr: '' });
      expect(fromPg).toEqual(fromFile);
      expect(fromPg.stdout.length).toBeGreaterThan(20);
    });
  }

  it('CCAGENT_DB=postgres://… is read like --db, and a database that is not there is one clear line (guards against a URL taken for a file path)', async () => {
    const viaEnv = await runCli(['--json', 'tasks', 'list'], { CCAGENT_DB: url });
    expect(viaEnv.code).toBe(0);
    expect((JSON.parse(viaEnv.stdout) as { total: number }).total).toBe(4);
    const u = new URL(url);
    u.pathname = '/no_such_database';
    u.password = 'hunter2';
    const missing = await runCli(['tasks', 'list'], { CCAGENT_DB: u.toString() });
    expect(missing.code).not.toBe(0);
    expect(missing.stderr.trim().split('\n')).toHaveLength(1);
    expect(missing.stderr).toMatch(/no_such_database/);
    expect(missing.stderr).not.toMatch(/hunter2/);
  });
});
