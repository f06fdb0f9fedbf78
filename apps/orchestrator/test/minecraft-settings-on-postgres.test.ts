/**
 * The Minecraft side's settings on the PostgreSQL store: the active instance (`connect-instance`) and an instance's
 * action allow/deny lists are kept in the database before the answer, so a restarted orchestrator (or the standby that
 * takes over) has them, and nothing is written beside the database URL as a file. The SQLite deployment keeps the
 * same document in a file beside its database (minecraft-seed-channels.test.ts). Needs the PostgreSQL test server
 * (CCAGENT_TEST_PG_URL); skipped with a notice without it. The instances' log lines are kept there too (written by the
 * active process within a flush window), so the next orchestrator serves them.
 */
import { existsSync } from 'node:fs';
import { ModClient } from '@ccagent/minecraft';
import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PostgresServe } from '../src/high-availability.js';
import { createTestDatabase, pgQuery, pgTestServer, servePostgres } from './support/postgres.js';

const PG_SERVER = pgTestServer('minecraft-settings-on-postgres');
const TOKEN = 'pg-operator-token';

describe.skipIf(!PG_SERVER)('Minecraft settings on the PostgreSQL store', () => {
  let fake: FakeOllama;
  let db: { url: string; drop(): Promise<void> };
  const open: PostgresServe[] = [];
  beforeAll(async () => {
    fake = await startFakeOllama({ installed: ['qwen3:8b'] });
    db = await createTestDatabase(PG_SERVER as string, 'ccagent_mcset');
  });
  afterAll(async () => {
    for (const s of open) await s.close().catch(() => undefined);
    await fake?.close();
    await db?.drop();
  });

  async function serve(): Promise<{ url: string; serve: PostgresServe }> {
    const s = await servePostgres(db.url, fake.url, TOKEN, {
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
    const rows = await pgQuery(db.url, 'SELECT "key", "value" FROM minecraft_settings');
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
    const after = await pgQuery(db.url, 'SELECT "value" FROM minecraft_settings WHERE "key" = \'seat\'');
    expect(JSON.parse((after.rows[0] as { value: string }).value)).toEqual({ active: 'Bot', actions: {} });
  });

  it("keeps an instance's log lines in the database, so a restarted orchestrator serves them (guards against activity kept only in memory on PostgreSQL)", async () => {
    // The orchestrator of the test before holds the lease: it goes first, so the next one is the active one.
    for (const o of open.splice(0)) await o.close();
    const first = await serve();
    const mcUrl = (await first.serve.active).report.minecraft;
    if (mcUrl === undefined || !('url' in mcUrl)) throw new Error('no mod endpoint');
    const mod = new ModClient({
      url: mcUrl.url,
      instanceId: 'Alex',
      token: TOKEN,
      runner: { state: () => null, run: () => Promise.resolve({ ok: true, result: null }) },
      version: '1.20.1',
      reconnectDelayMs: 200,
    });
    await mod.start();
    try {
      await expect
        .poll(async () => (await call(first.url, '/api/minecraft/instances/Alex/activity')).status, {
          timeout: 10_000,
        })
        .toBe(200);
      mod.log('<b>first</b>');
      mod.log('second');
      // Written within a flush window, by the active process, without a shutdown.
      await expect
        .poll(
          async () =>
            (await pgQuery(db.url, 'SELECT "seq", "message" FROM minecraft_logs ORDER BY "seq"')).rows,
          {
            timeout: 5_000,
          },
        )
        .toEqual([
          { seq: '1', message: '<b>first</b>' },
          { seq: '2', message: 'second' },
        ]);
    } finally {
      mod.close();
    }
    await first.serve.close();

    const second = await serve();
    const got = await call(second.url, '/api/minecraft/instances/Alex/activity');
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({
      instance: null,
      logs: [
        { instance_id: 'Alex', seq: 1, message: '<b>first</b>' },
        { instance_id: 'Alex', seq: 2, message: 'second' },
      ],
      actions: [],
    });
  });
});
