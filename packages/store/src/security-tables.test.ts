import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteStore, type SqliteStore } from './sqlite-store.js';
import type { CredentialRecord } from '@ccagent/security';
import { tempDir } from '../test/support/test-helpers.js';

const silent = { debug() {}, info() {}, warn() {}, error() {} };

let dir: { dir: string; cleanup: () => void };
let store: SqliteStore;
beforeEach(() => {
  dir = tempDir();
  store = openSqliteStore({ path: path.join(dir.dir, 'a.db'), logger: silent });
});
afterEach(async () => {
  await store.close();
  dir.cleanup();
});

const cred = (id: string, clientId: string | undefined, keyHash: string, at = 1): CredentialRecord => ({
  id,
  role: clientId ? 'computer' : 'operator',
  ...(clientId ? { clientId } : {}),
  keyHash,
  grants: {},
  createdAt: at,
});

describe('security tables', () => {
  it('redeems an enrollment code once: a replayed code is refused and writes nothing (guards against a code that enrolls twice)', async () => {
    await store.security.insertEnrollment({
      codeHash: 'h1',
      grants: { kinds: ['a'] },
      createdAt: 1,
      expiresAt: 100,
    });
    const first = await store.security.redeemEnrollment('h1', 10, 'pc-1', (c, g) => ({
      ...cred('k1', c, 'key1', 10),
      grants: g,
    }));
    expect(first).toMatchObject({ ok: true, credential: { clientId: 'pc-1', grants: { kinds: ['a'] } } });
    const again = await store.security.redeemEnrollment('h1', 11, 'pc-2', (c) => cred('k2', c, 'key2'));
    expect(again).toMatchObject({ ok: false, code: 'code_used' });
    const all = await store.security.listCredentials();
    expect(all.map((c) => c.id)).toEqual(['k1']);
  });

  it('refuses an expired code, an unknown code and a code for an id that already has a key (guards against taking over an enrolled computer)', async () => {
    await store.security.insertEnrollment({ codeHash: 'old', grants: {}, createdAt: 1, expiresAt: 5 });
    expect(await store.security.redeemEnrollment('old', 5, 'pc', (c) => cred('x', c, 'kx'))).toMatchObject({
      ok: false,
      code: 'code_expired',
    });
    expect(await store.security.redeemEnrollment('nope', 1, 'pc', (c) => cred('x', c, 'kx'))).toMatchObject({
      ok: false,
      code: 'unknown_code',
    });
    await store.security.insertCredential(cred('k1', 'pc', 'key1'));
    await store.security.insertEnrollment({ codeHash: 'c2', grants: {}, createdAt: 1, expiresAt: 50 });
    expect(await store.security.redeemEnrollment('c2', 2, 'pc', (c) => cred('x', c, 'kx'))).toMatchObject({
      ok: false,
      code: 'client_taken',
    });
    // A code naming the id (the operator's decision) replaces its keys.
    await store.security.insertEnrollment({
      codeHash: 'c3',
      clientId: 'pc',
      grants: {},
      createdAt: 1,
      expiresAt: 50,
    });
    const r = await store.security.redeemEnrollment('c3', 3, 'ignored', (c) => cred('k2', c, 'key2', 3));
    expect(r).toMatchObject({ ok: true, credential: { id: 'k2', clientId: 'pc' }, revoked: [{ id: 'k1' }] });
  });

  it('revokes by id or client, rotates with an overlap, and keeps everything across a reopen (guards against keys lost or revived by a restart)', async () => {
    await store.security.insertCredential(cred('k1', 'pc', 'key1'));
    const expired = await store.security.rotate(cred('k2', 'pc', 'key2', 5), 1000);
    expect(expired.map((c) => [c.id, c.expiresAt])).toEqual([['k1', 1000]]);
    expect(await store.security.revokeCredentials({ id: 'k2' }, 7)).toHaveLength(1);
    expect(await store.security.revokeCredentials({ id: 'k2' }, 8)).toHaveLength(0);
    const file = store.path;
    await store.close();
    store = openSqliteStore({ path: file, logger: silent });
    const all = await store.security.listCredentials();
    expect(all).toMatchObject([
      { id: 'k1', expiresAt: 1000 },
      { id: 'k2', revokedAt: 7 },
    ]);
  });

  it('keeps an append-only audit log read newest first with filters', async () => {
    for (let i = 1; i <= 5; i++) {
      await store.security.appendAudit({
        at: i,
        actor: i % 2 ? 'token' : 'k1',
        role: 'operator',
        source: 'http 127.0.0.1',
        action: i === 3 ? 'task.cancel' : 'task.create',
        target: `t${i}`,
        outcome: 'ok',
        detail: { n: i },
      });
    }
    const all = await store.security.listAudit();
    expect(all.map((r) => r.target)).toEqual(['t5', 't4', 't3', 't2', 't1']);
    expect((await store.security.listAudit({ action: 'task.cancel' })).map((r) => r.target)).toEqual(['t3']);
    expect((await store.security.listAudit({ actor: 'k1', limit: 1 })).map((r) => r.target)).toEqual(['t4']);
    expect(all[0]?.detail).toEqual({ n: 5 });
  });

  it('pairing requests: pending until decided, collected once after approval, never after a denial; survives a reopen (guards against a key handed out without an operator)', async () => {
    const base = {
      secretHash: 's1',
      clientId: 'pc-p',
      source: 'http 10.0.0.5',
      match: 'ABCDE',
      createdAt: 1,
      expiresAt: 100,
      grants: {},
    };
    await store.security.insertPairing({ id: 'pair_1', ...base });
    await store.security.insertPairing({
      id: 'pair_2',
      ...base,
      secretHash: 's2',
      clientId: 'pc-q',
      createdAt: 2,
    });
    const mk = (c: string, g: CredentialRecord['grants']) => ({ ...cred('kp', c, 'keyp', 10), grants: g });
    expect(await store.security.collectPairing('s1', 10, mk)).toMatchObject({ ok: false, code: 'pending' });
    expect(await store.security.collectPairing('nope', 10, mk)).toMatchObject({
      ok: false,
      code: 'unknown_request',
    });
    await store.close();
    store = openSqliteStore({ path: path.join(dir.dir, 'a.db'), logger: silent });
    expect((await store.security.listPairings()).map((p) => p.id)).toEqual(['pair_2', 'pair_1']);
    const approved = await store.security.decidePairing('pair_1', {
      approved: true,
      grants: { kinds: ['code_job'] },
      by: 'token',
      at: 20,
      expiresAt: 200,
    });
    expect(approved).toMatchObject({ decision: 'approved', decidedBy: 'token', expiresAt: 200 });
    expect(
      await store.security.decidePairing('pair_1', {
        approved: false,
        grants: {},
        by: 'x',
        at: 21,
        expiresAt: 0,
      }),
    ).toBeUndefined();
    await store.security.decidePairing('pair_2', {
      approved: false,
      grants: {},
      by: 'token',
      at: 20,
      expiresAt: 0,
    });
    const got = await store.security.collectPairing('s1', 30, mk);
    expect(got).toMatchObject({
      ok: true,
      credential: { clientId: 'pc-p', grants: { kinds: ['code_job'] } },
    });
    expect(await store.security.collectPairing('s1', 31, mk)).toMatchObject({ ok: false, code: 'collected' });
    expect(await store.security.collectPairing('s2', 31, mk)).toMatchObject({ ok: false, code: 'denied' });
    expect((await store.security.listCredentials()).map((c) => c.clientId)).toEqual(['pc-p']);
    expect((await store.security.listPairings()).find((p) => p.id === 'pair_1')).toMatchObject({
      collectedAt: 30,
      credentialId: 'kp',
    });
  });
});
