/**
 * Pairing by request and approval: a computer without an enrollment code asks to pair, waits until an operator
 * approves it, then collects its own key (once) and connects with it. Trust on first use only with its setting; a
 * pending request survives a restart (it is in the database).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Harness } from './support/harness.js';
import { useHarness } from './support/session.js';

const t = useHarness();
const TOKEN = 'operator-token-p';

interface Ticket {
  request_id: string;
  secret: string;
  match: string;
  state: string;
}

async function post(h: Harness, p: string, body: unknown): Promise<Response> {
  return fetch(`${h.url}${p}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
}

async function ask(h: Harness, clientId: string): Promise<Ticket> {
  const r = await post(h, '/api/pair/request', { client_id: clientId });
  expect(r.status).toBe(202);
  return (await r.json()) as Ticket;
}

const collect = (h: Harness, t: Ticket, secret = t.secret) =>
  post(h, '/api/pair/collect', { request_id: t.request_id, secret });

async function pending(h: Harness): Promise<Array<{ id: string; state: string; match: string }>> {
  const r = await h.http('/api/credentials/pairings');
  expect(r.status).toBe(200);
  return ((await r.json()) as { pairings: Array<{ id: string; state: string; match: string }> }).pairings;
}

describe('pairing by request and approval', () => {
  it('gives the key only after an operator approves, once; the computer then connects with it and its id is bound', async () => {
    const h = await t.start({ token: TOKEN });
    const ticket = await ask(h, 'turtle-7');
    expect(ticket).toMatchObject({ state: 'pending', match: expect.stringMatching(/^[A-Z2-9]{5}$/) });
    expect((await collect(h, ticket)).status).toBe(202);
    // Nothing connects as it yet with a key; a wrong secret gets nothing.
    expect((await collect(h, ticket, 'cck_wrong')).status).toBe(404);
    expect(await pending(h)).toEqual([expect.objectContaining({ id: ticket.request_id, state: 'pending' })]);
    // The approval route is the operator's.
    expect((await post(h, '/api/credentials/pairings/approve', { id: ticket.request_id })).status).toBe(401);
    const ok = await h.http('/api/credentials/pairings/approve', {
      method: 'POST',
      json: { id: ticket.request_id },
    });
    expect(ok.status).toBe(200);
    const got = await collect(h, ticket);
    expect(got.status).toBe(200);
    const { key, client_id } = (await got.json()) as { key: string; client_id: string };
    expect(client_id).toBe('turtle-7');
    expect((await collect(h, ticket)).status).toBe(409);

    const c = await t.connect('turtle-7', { token: key });
    expect(c.messages.some((m) => m.type === 'welcome')).toBe(true);
    // The id is now bound to that key: the shared token no longer connects as it, nor does a second request.
    const impostor = t.open();
    await impostor.opened;
    impostor.send({ type: 'hello', client_id: 'turtle-7', token: TOKEN, protocol_version: 1, commands: [] });
    expect(await impostor.waitFor('error')).toMatchObject({ code: 'unauthorized' });
    expect((await post(h, '/api/pair/request', { client_id: 'turtle-7' })).status).toBe(409);
    expect(c.isOpen).toBe(true);
  });

  it('a denied computer gets no key and is told so', async () => {
    const h = await t.start({ token: TOKEN });
    const ticket = await ask(h, 'stranger');
    const r = await h.http('/api/credentials/pairings/deny', {
      method: 'POST',
      json: { id: ticket.request_id },
    });
    expect(r.status).toBe(200);
    const refused = await collect(h, ticket);
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('denied');
    expect(
      ((await (await h.http('/api/credentials')).json()) as { credentials: unknown[] }).credentials,
    ).toEqual([]);
  });

  it('keeps a pending request across a restart (it is in the database), and approves it after', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'cco-pair-'));
    try {
      const h1 = await t.start({ token: TOKEN, dir });
      const ticket = await ask(h1, 'turtle-r');
      await h1.close();
      const h2 = await t.start({ token: TOKEN, dir });
      expect(await pending(h2)).toEqual([
        expect.objectContaining({ id: ticket.request_id, state: 'pending' }),
      ]);
      await h2.http('/api/credentials/pairings/approve', { method: 'POST', json: { id: ticket.request_id } });
      expect((await collect(h2, ticket)).status).toBe(200);
      await h2.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('trusts on first use only with the setting; with requests off a computer must have a code; too many waiting are refused', async () => {
    const strict = await t.start({
      token: TOKEN,
      config: { server: { security: { maxPendingPairings: 2 } } },
    });
    expect((await ask(strict, 'a')).state).toBe('pending');
    await ask(strict, 'b');
    expect((await post(strict, '/api/pair/request', { client_id: 'c' })).status).toBe(429);
    await strict.close();

    const tofu = await t.start({ token: TOKEN, config: { server: { security: { trustOnFirstUse: true } } } });
    const ticket = await ask(tofu, 'lan-pc');
    expect(ticket.state).toBe('approved');
    expect((await collect(tofu, ticket)).status).toBe(200);
    await tofu.close();

    const off = await t.start({ token: TOKEN, config: { server: { security: { pairingRequests: false } } } });
    const r = await post(off, '/api/pair/request', { client_id: 'x' });
    expect(r.status).toBe(403);
    expect(((await r.json()) as { error: { code: string } }).error.code).toBe('pairing_disabled');
  });
});
