/**
 * The contract suite of the `CredentialStore` port: every implementation (in memory here, SQLite in `@ccagent/store`,
 * PostgreSQL in `@ccagent/store-postgres`) runs exactly this suite, so a key, a code or a pairing request is judged
 * the same whichever database holds it. Published as `@ccagent/security/testing`, never from `src/index.ts`: it imports
 * vitest, which must not end up in the runtime bundle.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { clientTaken } from '../credential-rules.js';
import type {
  CredentialFactory,
  CredentialRecord,
  CredentialStore,
  EnrollmentRecord,
  PairingRecord,
} from '../credentials.js';

/** Factory of a fresh, empty store; `cleanup` runs after each test (after the suite closed nothing: stores own that). */
export type CredentialStoreFactory = () => Promise<{
  store: CredentialStore;
  cleanup?: () => Promise<void> | void;
}>;

const cred = (id: string, clientId: string | undefined, keyHash: string, at = 1): CredentialRecord => ({
  id,
  role: clientId ? 'computer' : 'operator',
  ...(clientId ? { clientId } : {}),
  keyHash,
  grants: {},
  createdAt: at,
});

const code = (codeHash: string, over: Partial<EnrollmentRecord> = {}): EnrollmentRecord => ({
  codeHash,
  grants: {},
  createdAt: 1,
  expiresAt: 100,
  ...over,
});

const pairing = (id: string, over: Partial<PairingRecord> = {}): PairingRecord => ({
  id,
  secretHash: `secret-of-${id}`,
  clientId: `pc-${id}`,
  source: 'http 10.0.0.5',
  match: 'ABCDE',
  createdAt: 1,
  expiresAt: 100,
  grants: {},
  ...over,
});

/** A factory that makes the credential `id` with key hash `hash-<id>` at `at`. */
const makes =
  (id: string, at = 10): CredentialFactory =>
  (clientId, grants, name) => ({
    id,
    role: 'computer',
    clientId,
    ...(name !== undefined ? { name } : {}),
    keyHash: `hash-${id}`,
    grants,
    createdAt: at,
  });

/** Register the contract suite for one implementation. */
export function runCredentialStoreContract(name: string, factory: CredentialStoreFactory): void {
  describe(`CredentialStore contract: ${name}`, () => {
    let store: CredentialStore;
    let cleanup: (() => Promise<void> | void) | undefined;
    beforeEach(async () => {
      const made = await factory();
      store = made.store;
      cleanup = made.cleanup;
    });
    afterEach(async () => {
      await cleanup?.();
    });

    it('round-trips credentials exactly, optional fields absent rather than null (guards against a lossy codec in one store)', async () => {
      const full: CredentialRecord = {
        id: 'k1',
        role: 'computer',
        clientId: 'pc',
        name: 'Turtle 1',
        keyHash: 'h1',
        grants: { kinds: ['build'], observeOthers: true },
        createdAt: 1,
        expiresAt: 500,
      };
      const bare: CredentialRecord = { id: 'k2', role: 'viewer', keyHash: 'h2', grants: {}, createdAt: 2 };
      await store.insertCredential(full);
      await store.insertCredential(bare);
      expect(await store.listCredentials()).toEqual([full, bare]);
    });

    it('redeems a code once; a replay is refused and writes nothing (guards against a code that enrolls twice)', async () => {
      await store.insertEnrollment(code('c1', { grants: { kinds: ['a'] }, name: 'lab' }));
      const first = await store.redeemEnrollment('c1', 10, 'pc-1', makes('k1'));
      expect(first).toEqual({
        ok: true,
        credential: {
          id: 'k1',
          role: 'computer',
          clientId: 'pc-1',
          name: 'lab',
          keyHash: 'hash-k1',
          grants: { kinds: ['a'] },
          createdAt: 10,
        },
        revoked: [],
      });
      const again = await store.redeemEnrollment('c1', 11, 'pc-2', makes('k2'));
      expect(again).toEqual({
        ok: false,
        code: 'code_used',
        message: 'this enrollment code was already used',
      });
      expect((await store.listCredentials()).map((c) => c.id)).toEqual(['k1']);
    });

    it('refuses an unknown code and a code at its expiry, writing nothing (guards against an expired code enrolling)', async () => {
      await store.insertEnrollment(code('old', { expiresAt: 5 }));
      expect(await store.redeemEnrollment('old', 5, 'pc', makes('x'))).toEqual({
        ok: false,
        code: 'code_expired',
        message: 'this enrollment code has expired',
      });
      expect(await store.redeemEnrollment('nope', 1, 'pc', makes('x'))).toEqual({
        ok: false,
        code: 'unknown_code',
        message: 'no such enrollment code',
      });
      expect(await store.listCredentials()).toEqual([]);
      // The refused code is still unused: before its expiry it would have worked.
      expect(await store.redeemEnrollment('old', 4, 'pc', makes('y'))).toMatchObject({ ok: true });
    });

    it('refuses a code without a name for an id with a live key, with the one client_taken message, and writes nothing (guards against taking over an enrolled computer)', async () => {
      await store.insertCredential(cred('k1', 'pc', 'key1'));
      await store.insertEnrollment(code('c2'));
      expect(await store.redeemEnrollment('c2', 2, 'pc', makes('x'))).toEqual(clientTaken('pc'));
      expect((await store.listCredentials()).map((c) => c.id)).toEqual(['k1']);
      // The code was not used up by the refusal.
      expect(await store.redeemEnrollment('c2', 3, 'pc-other', makes('k3'))).toMatchObject({ ok: true });
    });

    it('lets a code without a name take an id whose keys are all revoked or expired (guards against a dead key blocking re-enrollment)', async () => {
      await store.insertCredential({ ...cred('k1', 'pc', 'key1'), expiresAt: 5 });
      await store.insertCredential(cred('k2', 'pc', 'key2', 2));
      await store.revokeCredentials({ id: 'k2' }, 3);
      await store.insertEnrollment(code('c'));
      const r = await store.redeemEnrollment('c', 6, 'pc', makes('k3', 6));
      expect(r).toMatchObject({ ok: true, credential: { id: 'k3', clientId: 'pc' } });
      // The expired, unrevoked key is revoked with the redemption; the revoked one stays as it was.
      expect(r.ok && r.revoked.map((c) => [c.id, c.revokedAt])).toEqual([['k1', 6]]);
      const all = await store.listCredentials();
      expect(all.map((c) => [c.id, c.revokedAt])).toEqual([
        ['k1', 6],
        ['k2', 3],
        ['k3', undefined],
      ]);
    });

    it('a code naming a client replaces its keys: they are revoked with the redemption (guards against an old key surviving a re-install)', async () => {
      await store.insertCredential(cred('k1', 'pc', 'key1'));
      await store.insertEnrollment(code('c3', { clientId: 'pc' }));
      const r = await store.redeemEnrollment('c3', 3, 'ignored', makes('k2', 3));
      expect(r).toMatchObject({
        ok: true,
        credential: { id: 'k2', clientId: 'pc' },
        revoked: [{ id: 'k1', revokedAt: 3 }],
      });
      expect((await store.listCredentials()).map((c) => [c.id, c.revokedAt])).toEqual([
        ['k1', 3],
        ['k2', undefined],
      ]);
    });

    it('refuses a computer credential without a client id and a rotation without one, writing nothing (guards against a key that belongs to no computer)', async () => {
      await expect(
        store.insertCredential({ id: 'bad', role: 'computer', keyHash: 'hb', grants: {}, createdAt: 1 }),
      ).rejects.toThrow('a computer credential needs a client id');
      await expect(store.rotate(cred('r', undefined, 'hr'), 50)).rejects.toThrow(
        'rotation needs a client id',
      );
      expect(await store.listCredentials()).toEqual([]);
    });

    it('rotates with an overlap: the old keys expire at the deadline or their own earlier expiry (guards against downtime or a longer life at rotation)', async () => {
      await store.insertCredential(cred('k1', 'pc', 'key1'));
      await store.insertCredential({ ...cred('k0', 'pc', 'key0'), expiresAt: 400 });
      await store.insertCredential(cred('other', 'pc-2', 'key9'));
      const old = await store.rotate(cred('k2', 'pc', 'key2', 5), 1000);
      expect(old.map((c) => [c.id, c.expiresAt]).sort()).toEqual([
        ['k0', 400],
        ['k1', 1000],
      ]);
      const all = new Map((await store.listCredentials()).map((c) => [c.id, c]));
      expect(all.get('k1')?.expiresAt).toBe(1000);
      expect(all.get('k0')?.expiresAt).toBe(400);
      expect(all.get('k2')?.expiresAt).toBeUndefined();
      expect(all.get('other')?.expiresAt).toBeUndefined();
    });

    it('revokes by id or by client once; a second revocation finds nothing (guards against a revocation that misses keys)', async () => {
      await store.insertCredential(cred('k1', 'pc', 'key1'));
      await store.insertCredential(cred('k2', 'pc', 'key2', 2));
      await store.insertCredential(cred('k3', 'pc-2', 'key3', 3));
      expect((await store.revokeCredentials({ id: 'k3' }, 7)).map((c) => [c.id, c.revokedAt])).toEqual([
        ['k3', 7],
      ]);
      expect(await store.revokeCredentials({ id: 'k3' }, 8)).toEqual([]);
      const byClient = await store.revokeCredentials({ clientId: 'pc' }, 9);
      expect(byClient.map((c) => [c.id, c.revokedAt]).sort()).toEqual([
        ['k1', 9],
        ['k2', 9],
      ]);
      expect(await store.revokeCredentials({ clientId: 'pc' }, 10)).toEqual([]);
      expect(await store.revokeCredentials({ id: 'unknown' }, 10)).toEqual([]);
    });

    it('pairing: pending until decided, collected once after approval with the approved grants (guards against a key handed out without an operator)', async () => {
      await store.insertPairing(pairing('p1', { name: 'Turtle' }));
      expect(await store.collectPairing('secret-of-p1', 2, makes('k1'))).toEqual({
        ok: false,
        code: 'pending',
        message: 'waiting for an operator to approve this computer',
      });
      const decided = await store.decidePairing('p1', {
        approved: true,
        grants: { observeOthers: true },
        by: 'token',
        at: 3,
        expiresAt: 200,
      });
      expect(decided).toEqual({
        ...pairing('p1', { name: 'Turtle' }),
        decision: 'approved',
        decidedAt: 3,
        decidedBy: 'token',
        grants: { observeOthers: true },
        expiresAt: 200,
      });
      // Already decided: a second decision changes nothing.
      expect(
        await store.decidePairing('p1', { approved: false, grants: {}, by: 'x', at: 4, expiresAt: 9 }),
      ).toBeUndefined();
      const got = await store.collectPairing('secret-of-p1', 150, makes('k1', 150));
      expect(got).toEqual({
        ok: true,
        credential: {
          id: 'k1',
          role: 'computer',
          clientId: 'pc-p1',
          name: 'Turtle',
          keyHash: 'hash-k1',
          grants: { observeOthers: true },
          createdAt: 150,
        },
      });
      expect(await store.collectPairing('secret-of-p1', 151, makes('k2'))).toEqual({
        ok: false,
        code: 'collected',
        message: 'the key of this pairing request was already collected',
      });
      const [p] = await store.listPairings();
      expect(p).toMatchObject({ id: 'p1', collectedAt: 150, credentialId: 'k1' });
      expect((await store.listCredentials()).map((c) => c.id)).toEqual(['k1']);
    });

    it('pairing refusals: denied, expired, unknown, and a client id that has a live key, each writing nothing (guards against a key after a denial or for a taken id)', async () => {
      await store.insertPairing(pairing('d'));
      const denied = await store.decidePairing('d', {
        approved: false,
        grants: { kinds: ['x'] },
        by: 'op',
        at: 2,
        expiresAt: 999,
      });
      // A denial keeps the request's own deadline.
      expect(denied).toMatchObject({ decision: 'denied', decidedBy: 'op', expiresAt: 100 });
      expect(await store.collectPairing('secret-of-d', 3, makes('k'))).toEqual({
        ok: false,
        code: 'denied',
        message: 'the operator denied this pairing',
      });
      await store.insertPairing(pairing('e', { expiresAt: 10 }));
      expect(
        await store.decidePairing('e', { approved: true, grants: {}, by: 'op', at: 10, expiresAt: 50 }),
      ).toBeUndefined();
      expect(await store.collectPairing('secret-of-e', 10, makes('k'))).toEqual({
        ok: false,
        code: 'expired',
        message: 'this pairing request has expired',
      });
      expect(await store.collectPairing('no-such-secret', 3, makes('k'))).toEqual({
        ok: false,
        code: 'unknown_request',
        message: 'no such pairing request',
      });
      expect(
        await store.decidePairing('unknown', { approved: true, grants: {}, by: 'op', at: 1, expiresAt: 5 }),
      ).toBeUndefined();
      await store.insertPairing(pairing('t', { clientId: 'taken' }));
      await store.decidePairing('t', { approved: true, grants: {}, by: 'op', at: 2, expiresAt: 90 });
      await store.insertCredential(cred('k-taken', 'taken', 'kt'));
      expect(await store.collectPairing('secret-of-t', 5, makes('k'))).toEqual(clientTaken('taken'));
      expect((await store.listCredentials()).map((c) => c.id)).toEqual(['k-taken']);
      const byId = new Map((await store.listPairings()).map((p) => [p.id, p]));
      expect(byId.get('t')?.collectedAt).toBeUndefined();
      expect(byId.get('e')?.decision).toBeUndefined();
    });

    it('lists pairing requests newest first (guards against the pending list losing its order)', async () => {
      await store.insertPairing(pairing('a', { createdAt: 1 }));
      await store.insertPairing(pairing('c', { createdAt: 3 }));
      await store.insertPairing(pairing('b', { createdAt: 2 }));
      expect((await store.listPairings()).map((p) => p.id)).toEqual(['c', 'b', 'a']);
    });

    it('keeps an append-only audit log: growing ids, newest first, filters, paging and bounded limits (guards against an audit page that hides rows)', async () => {
      const ids: number[] = [];
      for (let i = 1; i <= 5; i++) {
        ids.push(
          await store.appendAudit({
            at: i,
            actor: i % 2 ? 'token' : 'k1',
            role: 'operator',
            source: 'http 127.0.0.1',
            action: i === 3 ? 'task.cancel' : 'task.create',
            ...(i !== 2 ? { target: `t${i}` } : {}),
            outcome: i === 4 ? 'refused' : 'ok',
            ...(i !== 1 ? { detail: { n: i } } : {}),
          }),
        );
      }
      expect([...ids].sort((a, b) => a - b)).toEqual(ids);
      const all = await store.listAudit();
      expect(all.map((r) => r.at)).toEqual([5, 4, 3, 2, 1]);
      expect(all[3]).toEqual({
        id: ids[1],
        at: 2,
        actor: 'k1',
        role: 'operator',
        source: 'http 127.0.0.1',
        action: 'task.create',
        outcome: 'ok',
        detail: { n: 2 },
      });
      expect(all[4]).not.toHaveProperty('detail');
      expect(all[1]?.outcome).toBe('refused');
      expect((await store.listAudit({ action: 'task.cancel' })).map((r) => r.at)).toEqual([3]);
      expect((await store.listAudit({ actor: 'k1', limit: 1 })).map((r) => r.at)).toEqual([4]);
      expect((await store.listAudit({ beforeId: ids[2] })).map((r) => r.at)).toEqual([2, 1]);
      expect((await store.listAudit({ limit: 0 })).map((r) => r.at)).toEqual([5]);
      expect(await store.listAudit({ limit: 5000 })).toHaveLength(5);
    });
  });
}
