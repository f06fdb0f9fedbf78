/**
 * Per-computer keys with the PostgreSQL store: keys, enrollment codes, pending pairing requests and the audit log are
 * in the database, so a restarted orchestrator (or the standby that takes over) knows them. Needs the PostgreSQL
 * test server (CCAGENT_TEST_PG_URL); skipped with a notice without it.
 */
import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PostgresServe } from '../src/high-availability.js';
import { createTestDatabase, pgTestServer, servePostgres } from './support/postgres.js';
import { TestClient } from './support/ws-test-client.js';

const PG_SERVER = pgTestServer('keys-on-postgres');
const TOKEN = 'pg-operator-token';

describe.skipIf(!PG_SERVER)('keys on the PostgreSQL store', () => {
  let fake: FakeOllama;
  let db: { url: string; drop(): Promise<void> };
  const open: PostgresServe[] = [];
  beforeAll(async () => {
    fake = await startFakeOllama({ installed: ['qwen3:8b'] });
    db = await createTestDatabase(PG_SERVER as string, 'ccagent_keys');
  });
  afterAll(async () => {
    for (const s of open) await s.close().catch(() => undefined);
    await fake?.close();
    await db?.drop();
  });

  async function serve(): Promise<{ url: string; serve: PostgresServe }> {
    const s = await servePostgres(db.url, fake.url, TOKEN);
    open.push(s);
    return { url: (await s.active).url, serve: s };
  }

  const call = (url: string, p: string, body?: unknown, auth = true) =>
    fetch(`${url}${p}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: {
        ...(auth ? { authorization: `Bearer ${TOKEN}` } : {}),
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });

  it('a restarted orchestrator knows every key, code, pending pairing and audit row (guards against computers locked out after a restart or failover)', async () => {
    const first = await serve();
    const issued = (await (
      await call(first.url, '/api/credentials/enroll', { client_id: 'pg-pc' })
    ).json()) as {
      code: string;
    };
    const spare = (await (await call(first.url, '/api/credentials/enroll', {})).json()) as { code: string };
    const paired = await call(first.url, '/api/pair', { code: issued.code, client_id: 'pg-pc' }, false);
    expect(paired.status).toBe(200);
    const { key } = (await paired.json()) as { key: string };
    const asked = await call(first.url, '/api/pair/request', { client_id: 'pg-asker' }, false);
    expect(asked.status).toBe(202);
    const { request_id, secret } = (await asked.json()) as { request_id: string; secret: string };
    const ticket = { request_id, secret };
    await first.serve.close();

    const second = await serve();
    // The key still connects as its computer; the shared token cannot take the id.
    const c = await TestClient.connect(second.url, 'pg-pc', { token: key });
    expect(c.isOpen).toBe(true);
    const impostor = new TestClient(second.url);
    await impostor.opened;
    impostor.send({ type: 'hello', client_id: 'pg-pc', token: TOKEN, protocol_version: 1, commands: [] });
    expect(await impostor.waitFor('error')).toMatchObject({ code: 'unauthorized' });
    // The used code stays used, the spare one still works.
    expect((await call(second.url, '/api/pair', { code: issued.code, client_id: 'x' }, false)).status).toBe(
      403,
    );
    expect(
      (await call(second.url, '/api/pair', { code: spare.code, client_id: 'pg-spare' }, false)).status,
    ).toBe(200);
    // The pending request is still pending, and is approved and collected on the new process.
    const pairings = (await (await call(second.url, '/api/credentials/pairings')).json()) as {
      pairings: Array<{ id: string; state: string }>;
    };
    expect(pairings.pairings).toEqual([expect.objectContaining({ id: ticket.request_id, state: 'pending' })]);
    await call(second.url, '/api/credentials/pairings/approve', { id: ticket.request_id });
    expect((await call(second.url, '/api/pair/collect', ticket, false)).status).toBe(200);
    // The audit log of the first process is there.
    const audit = (await (await call(second.url, '/api/audit?limit=50')).json()) as {
      entries: Array<{ action: string }>;
    };
    const actions = audit.entries.map((e) => e.action);
    for (const a of ['client.enroll', 'client.pair', 'client.pair_request', 'client.approve'])
      expect(actions).toContain(a);
    c.terminate();
    impostor.terminate();
  });
});
