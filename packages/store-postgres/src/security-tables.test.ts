import type { CredentialRecord } from '@ccagent/security';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgresStore, type PostgresStore } from './postgres-store.js';
import { createTestDatabase, TEST_PG_URL } from '../test/support/test-database.js';

const cred = (id: string, clientId: string | undefined, keyHash: string, at = 1): CredentialRecord => ({
  id,
  role: clientId ? 'computer' : 'operator',
  ...(clientId ? { clientId } : {}),
  keyHash,
  grants: {},
  createdAt: at,
});

describe.skipIf(!TEST_PG_URL)('PostgreSQL security tables', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  const open: PostgresStore[] = [];
  const store = async (): Promise<PostgresStore> => {
    const s = await openPostgresStore({ url: db.url });
    open.push(s);
    return s;
  };
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    for (const s of open) await s.close();
    await db?.drop();
  });

  it('keeps keys, codes, pairing requests and the audit log across a restart and shares them with a second orchestrator (guards against keys lost at a failover)', async () => {
    const a = await store();
    await a.security.insertEnrollment({
      codeHash: 'c1',
      grants: { kinds: ['k'] },
      createdAt: 1,
      expiresAt: 100,
    });
    const first = await a.security.redeemEnrollment('c1', 10, 'pc-1', (c, g) => ({
      ...cred('k1', c, 'key1', 10),
      grants: g,
    }));
    expect(first).toMatchObject({ ok: true, credential: { clientId: 'pc-1', grants: { kinds: ['k'] } } });
    // A replayed code is refused and writes nothing.
    expect(await a.security.redeemEnrollment('c1', 11, 'pc-2', (c) => cred('k2', c, 'key2'))).toMatchObject({
      ok: false,
      code: 'code_used',
    });
    await a.security.insertEnrollment({ codeHash: 'c2', createdAt: 1, expiresAt: 100, grants: {} });
    expect(await a.security.redeemEnrollment('c2', 12, 'pc-1', (c) => cred('k3', c, 'key3'))).toMatchObject({
      ok: false,
      code: 'client_taken',
    });
    await a.security.insertPairing({
      id: 'pair_1',
      secretHash: 's1',
      clientId: 'pc-p',
      source: 'http 10.0.0.9',
      match: 'QWERT',
      createdAt: 5,
      expiresAt: 100,
      grants: {},
    });
    const auditId = await a.security.appendAudit({
      at: 7,
      actor: 'token',
      role: 'operator',
      source: 'http 127.0.0.1',
      action: 'client.enroll',
      target: 'pc-1',
      outcome: 'ok',
      detail: { expiresAt: 100 },
    });
    expect(auditId).toBe(1);
    await a.close();

    // Restarted, and a standby on the same database: both see everything.
    const b = await store();
    const standby = await store();
    for (const s of [b, standby]) {
      expect((await s.security.listCredentials()).map((c) => [c.id, c.clientId])).toEqual([['k1', 'pc-1']]);
      expect((await s.security.listPairings()).map((p) => [p.id, p.match, p.decision])).toEqual([
        ['pair_1', 'QWERT', undefined],
      ]);
      expect(await s.security.listAudit()).toEqual([
        {
          id: 1,
          at: 7,
          actor: 'token',
          role: 'operator',
          source: 'http 127.0.0.1',
          action: 'client.enroll',
          target: 'pc-1',
          outcome: 'ok',
          detail: { expiresAt: 100 },
        },
      ]);
    }
    // Pairing: pending → approved on one, collected once on the other.
    const mk = (c: string, g: CredentialRecord['grants']) => ({ ...cred('kp', c, 'keyp', 30), grants: g });
    expect(await standby.security.collectPairing('s1', 20, mk)).toMatchObject({ ok: false, code: 'pending' });
    expect(
      await b.security.decidePairing('pair_1', {
        approved: true,
        grants: { observeOthers: true },
        by: 'token',
        at: 20,
        expiresAt: 200,
      }),
    ).toMatchObject({ decision: 'approved', expiresAt: 200 });
    expect(
      await b.security.decidePairing('pair_1', {
        approved: false,
        grants: {},
        by: 'x',
        at: 21,
        expiresAt: 0,
      }),
    ).toBeUndefined();
    expect(await standby.security.collectPairing('s1', 30, mk)).toMatchObject({
      ok: true,
      credential: { clientId: 'pc-p', grants: { observeOthers: true } },
    });
    expect(await b.security.collectPairing('s1', 31, mk)).toMatchObject({ ok: false, code: 'collected' });

    // Rotation and revocation.
    const old = await b.security.rotate(cred('k4', 'pc-1', 'key4', 40), 500);
    expect(old.map((c) => [c.id, c.expiresAt])).toEqual([['k1', 500]]);
    const revoked = await standby.security.revokeCredentials({ clientId: 'pc-1' }, 50);
    expect(revoked.map((c) => c.id).sort()).toEqual(['k1', 'k4']);
    expect(await b.security.revokeCredentials({ id: 'k1' }, 60)).toEqual([]);
    const all = await b.security.listCredentials();
    expect(all.find((c) => c.id === 'k4')).toMatchObject({ revokedAt: 50 });
    await b.security.appendAudit({
      at: 8,
      actor: 'a',
      role: 'operator',
      source: 's',
      action: 'client.revoke',
      outcome: 'refused',
    });
    expect((await b.security.listAudit({ action: 'client.revoke' })).map((r) => r.id)).toEqual([2]);
    expect((await b.security.listAudit({ beforeId: 2 })).map((r) => r.id)).toEqual([1]);
  });
});
