/**
 * The Minecraft side's settings on the PostgreSQL store: the active instance (`connect-instance`) and an instance's
 * action allow/deny lists are kept in the database before the answer, so a restarted orchestrator (or the standby that
 * takes over) has them, and nothing is written beside the database URL as a file. The SQLite deployment keeps the
 * same document in a file beside its database (minecraft-seed-channels.test.ts). Needs the PostgreSQL test server
 * (CCAGENT_TEST_PG_URL); skipped with a notice without it.
 */
import { existsSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { startOnPostgres, type PostgresServe } from '../src/high-availability.js';

const PG_SERVER = process.env.CCAGENT_TEST_PG_URL || undefined;
if (PG_SERVER === undefined) {
  console.log(
    '[minecraft-settings-on-postgres] SKIPPED: CCAGENT_TEST_PG_URL is not set (see packages/store-postgres/README.md)',
  );
}
const TOKEN = 'pg-operator-token';

async function admin(sql: string, url = PG_SERVER): Promise<pg.QueryResult> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  return c.query(sql).finally(() => c.end());
}

describe.skipIf(!PG_SERVER)('Minecraft settings on the PostgreSQL store', () => {
  let fake: FakeOllama;
  let dbName: string;
  let dbUrl: string;
  const open: PostgresServe[] = [];
  beforeAll(async () => {
    fake = await startFakeOllama({ installed: ['qwen3:8b'] });
    dbName = `ccagent_mcset_${randomBytes(5).toString('hex')}`;
    await admin(`CREATE DATABASE ${dbName}`);
    const u = new URL(PG_SERVER as string);
    u.pathname = `/${dbName}`;
    dbUrl = u.toString();
  });
  afterAll(async () => {
    for (const s of open) await s.close().catch(() => undefined);
    await fake?.close();
    await admin(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`).catch(() => undefined);
  });

  async function serve(): Promise<{ url: string; serve: PostgresServe }> {
    const loaded = loadConfig({});
    if (!loaded.ok) throw loaded.error;
    const s = await startOnPostgres({
      config: loaded.value,
      dbUrl,
      host: '127.0.0.1',
      port: 0,
      ollamaUrl: fake.url,
      token: TOKEN,
      logger: pino({ level: 'silent' }),
      env: {},
      onLost: () => undefined,
      minecraft: { host: '127.0.0.1', port: 0, required: true },
    });
    open.push(s);
    return { url: (await s.active).url, serve: s };
  }

  const call = async (url: string, p: string, body?: unknown): Promise<{ status: number; body: unknown }> => {
    const r = await fetch(`${url}${p}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: {
        authorization: `Bearer ${TOKEN}`,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    return { status: r.status, body: await r.json() };
  };

  it('keeps the active instance and the action lists in the database before answering, and a restarted orchestrator has them (guards against settings kept only in memory on PostgreSQL)', async () => {
    const first = await serve();
    expect(await call(first.url, '/api/minecraft/connect-instance', { instance_id: 'Bot' })).toMatchObject({
      status: 200,
      body: { active_instance: 'Bot' },
    });
    expect(
      await call(first.url, '/api/minecraft/instances/Bot/actions', {
        allow: ['goto', 'chat'],
        deny: ['chat'],
      }),
    ).toEqual({ status: 200, body: { instance_id: 'Bot', allow: ['goto', 'chat'], deny: ['chat'] } });
    // In the database as soon as the answers came, before any shutdown.
    const rows = await admin('SELECT "key", "value" FROM minecraft_settings', dbUrl);
    expect(
      rows.rows.map((r: { key: string; value: string }) => [r.key, JSON.parse(r.value) as unknown]),
    ).toEqual([['seat', { active: 'Bot', actions: { Bot: { allow: ['goto', 'chat'], deny: ['chat'] } } }]]);
    // Nothing written as a file named after the database's address.
    const store = (await first.serve.active).report.dbPath;
    expect(existsSync(`${store}.minecraft.json`)).toBe(false);
    await first.serve.close();

    const second = await serve();
    expect(await call(second.url, '/api/minecraft/detect-instances')).toMatchObject({
      status: 200,
      body: { active_instance: 'Bot' },
    });
    expect(await call(second.url, '/api/minecraft/instances/Bot/actions')).toEqual({
      status: 200,
      body: { instance_id: 'Bot', allow: ['goto', 'chat'], deny: ['chat'] },
    });
    // A change on the new process replaces the document; removing the lists removes the instance's entry.
    expect((await call(second.url, '/api/minecraft/instances/Bot/actions', {})).status).toBe(200);
    const after = await admin('SELECT "value" FROM minecraft_settings WHERE "key" = \'seat\'', dbUrl);
    expect(JSON.parse((after.rows[0] as { value: string }).value)).toEqual({ active: 'Bot', actions: {} });
  });
});
