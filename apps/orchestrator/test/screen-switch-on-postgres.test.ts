/**
 * The operators' screen mirror switches on the PostgreSQL store: a switch is in the database before the answer (a
 * document of the settings table, key `screen_switches`), nothing is written as a file beside the database URL, and
 * a restarted orchestrator tells the computer in its `welcome`. The SQLite deployment keeps the same document in a
 * file beside its database (screen-switch.test.ts). Needs the PostgreSQL test server (CCAGENT_TEST_PG_URL); skipped
 * with a notice without it.
 */
import { existsSync } from 'node:fs';
import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PostgresServe } from '../src/high-availability.js';
import { createTestDatabase, pgQuery, pgTestServer, servePostgres } from './support/postgres.js';
import { TestClient } from './support/ws-test-client.js';

const PG_SERVER = pgTestServer('screen-switch-on-postgres');
const TOKEN = 'pg-operator-token';

describe.skipIf(!PG_SERVER)('screen mirror switches on the PostgreSQL store', () => {
  let fake: FakeOllama;
  let db: { url: string; drop(): Promise<void> };
  const open: PostgresServe[] = [];
  const clients: TestClient[] = [];
  beforeAll(async () => {
    fake = await startFakeOllama({ installed: ['qwen3:8b'] });
    db = await createTestDatabase(PG_SERVER as string, 'ccagent_screen');
  });
  afterAll(async () => {
    for (const c of clients) c.terminate();
    for (const s of open) await s.close().catch(() => undefined);
    await fake?.close();
    await db?.drop();
  });

  async function serve(): Promise<{ url: string; serve: PostgresServe }> {
    const s = await servePostgres(db.url, fake.url, TOKEN);
    open.push(s);
    return { url: (await s.active).url, serve: s };
  }

  async function welcome(url: string, id: string): Promise<Record<string, unknown>> {
    const c = await TestClient.connect(url.replace(/^http/, 'ws'), id, { token: TOKEN });
    clients.push(c);
    return c.messages.find((m) => m.type === 'welcome')!;
  }

  it('keeps a switch in the database before answering, and a restarted orchestrator sends it in the welcome', async () => {
    const first = await serve();
    expect(await welcome(first.url, 'pc-pg')).not.toHaveProperty('screen');
    const r = await fetch(`${first.url}/api/clients/pc-pg/screen/switch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ screen: true }),
    });
    expect(r.status).toBe(200);
    const rows = await pgQuery(
      db.url,
      `SELECT "value" FROM minecraft_settings WHERE "key" = 'screen_switches'`,
    );
    expect(JSON.parse((rows.rows[0] as { value: string }).value)).toEqual({ computers: { 'pc-pg': true } });
    const store = (await first.serve.active).report.dbPath;
    expect(existsSync(`${store}.screens.json`)).toBe(false);
    for (const c of clients.splice(0)) c.terminate();
    await first.serve.close();

    const second = await serve();
    expect(await welcome(second.url, 'pc-pg')).toMatchObject({ screen: true });
    expect(await welcome(second.url, 'pc-other')).not.toHaveProperty('screen');
  });
});
