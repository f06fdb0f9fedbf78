import { ManualClock } from '@ccagent/engine';
import { describe, expect, it } from 'vitest';
import { InMemoryCredentialStore } from './in-memory-credential-store.js';
import { SecurityService, type Principal } from './security-service.js';

const silent = { debug() {}, info() {}, warn() {}, error() {} };
const operator: Principal = { role: 'operator', actor: 'token', grants: {}, source: 'test' };

async function service(
  opts: { token?: string; requireClientKeys?: boolean; pairingRequests?: boolean } = {},
) {
  let now = 1_000;
  const store = new InMemoryCredentialStore();
  const s = await SecurityService.open({
    store,
    token: opts.token,
    requireClientKeys: opts.requireClientKeys ?? false,
    enrollmentTtlMs: 60_000,
    rotationOverlapMs: 10_000,
    failures: { maxFailures: 3, windowMs: 60_000 },
    ...(opts.pairingRequests !== undefined ? { pairingRequests: opts.pairingRequests } : {}),
    now: () => now,
    logger: silent,
  });
  return { s, store, advance: (ms: number) => (now += ms) };
}

describe('SecurityService', () => {
  it('binds a client id to its key: the right key passes, a missing, wrong or foreign key is refused (guards against impersonation)', async () => {
    const { s } = await service();
    const a = await s.enroll({ clientId: 'pc-a' }, operator);
    const b = await s.enroll({}, operator);
    const ka = await s.redeem(a.code, 'ignored', 'ws 1');
    const kb = await s.redeem(b.code, 'pc-b', 'ws 2');
    if (!ka.ok || !kb.ok) throw new Error('redeem failed');
    expect(ka.credential.clientId).toBe('pc-a');
    expect(s.authenticateHello('pc-a', ka.key, 'ws 1')).toMatchObject({
      ok: true,
      principal: { role: 'computer', clientId: 'pc-a', actor: ka.credential.id },
    });
    for (const key of [undefined, kb.key, 'cck_nope']) {
      expect(s.authenticateHello('pc-a', key, 'ws 9')).toMatchObject({ ok: false, code: 'unauthorized' });
    }
    // An id never enrolled still connects on an open server (legacy), unless keys are required.
    expect(s.authenticateHello('pc-new', undefined, 'ws 3').ok).toBe(true);
    const strict = await service({ requireClientKeys: true });
    expect(strict.s.authenticateHello('pc-new', undefined, 'ws 3').ok).toBe(false);
  });

  it('refuses a replayed or expired enrollment code and a code for an id that has a key', async () => {
    const { s, advance } = await service();
    const t = await s.enroll({}, operator);
    expect((await s.redeem(t.code, 'pc-1', 'x')).ok).toBe(true);
    expect(await s.redeem(t.code, 'pc-2', 'y')).toMatchObject({ ok: false, code: 'code_used' });
    const t2 = await s.enroll({}, operator);
    expect(await s.redeem(t2.code, 'pc-1', 'z')).toMatchObject({ ok: false, code: 'client_taken' });
    const t3 = await s.enroll({}, operator);
    advance(60_001);
    expect(await s.redeem(t3.code, 'pc-3', 'w')).toMatchObject({ ok: false, code: 'code_expired' });
    // Typed loosely: case, dashes and spaces do not matter.
    const t4 = await s.enroll({}, operator);
    expect((await s.redeem(t4.code.toLowerCase().replace('-', ' '), 'pc-4', 'v')).ok).toBe(true);
  });

  it('revokes at once (listeners hear it) and rotates with an overlap after which the old key is refused', async () => {
    const { s, advance } = await service();
    const t = await s.enroll({ clientId: 'pc' }, operator);
    const r = await s.redeem(t.code, 'pc', 'x');
    if (!r.ok) throw new Error('redeem failed');
    const rotated = await s.rotate('pc', operator);
    if (!rotated) throw new Error('rotate failed');
    expect(s.authenticateHello('pc', r.key, 'x').ok).toBe(true);
    expect(s.authenticateHello('pc', rotated.key, 'x').ok).toBe(true);
    advance(10_001);
    expect(s.authenticateHello('pc', r.key, 'x').ok).toBe(false);
    expect(s.authenticateHello('pc', rotated.key, 'x').ok).toBe(true);
    const heard: string[] = [];
    s.onRevoked((c) => heard.push(...c.map((x) => x.id)));
    await s.revoke({ clientId: 'pc' }, operator);
    expect(heard).toContain(rotated.credential.id);
    expect(s.authenticateHello('pc', rotated.key, 'x').ok).toBe(false);
  });

  it("tells the listeners when a rotated key's overlap ends, on the clock's timer (so its open connection is closed)", async () => {
    const clock = new ManualClock(1_000);
    const s = await SecurityService.open({
      store: new InMemoryCredentialStore(),
      token: undefined,
      requireClientKeys: false,
      enrollmentTtlMs: 60_000,
      rotationOverlapMs: 10_000,
      failures: { maxFailures: 3, windowMs: 60_000 },
      now: () => clock.now(),
      timers: clock,
      logger: silent,
    });
    const t = await s.enroll({ clientId: 'pc' }, operator);
    const r = await s.redeem(t.code, 'pc', 'x');
    if (!r.ok) throw new Error('redeem failed');
    const heard: { id: string; reason: string }[] = [];
    s.onRevoked((c, reason) => heard.push(...c.map((x) => ({ id: x.id, reason }))));
    const rotated = await s.rotate('pc', operator);
    if (!rotated) throw new Error('rotate failed');
    await clock.advance(9_999);
    expect(heard).toEqual([]);
    await clock.advance(1);
    expect(heard).toEqual([{ id: r.credential.id, reason: 'expired' }]);
    expect(s.authenticateHello('pc', r.key, 'x').ok).toBe(false);
    expect(s.authenticateHello('pc', rotated.key, 'x').ok).toBe(true);
    expect(clock.pendingTimers()).toBe(0);
    s.close();
  });

  it('throttles a source after repeated failures: the shared token is then not even checked from it (guards against brute force)', async () => {
    const { s, advance } = await service({ token: 'operator-token' });
    for (let i = 0; i < 3; i++)
      expect(s.authenticateBearer(`Bearer guess-${i}`, 'http 6.6.6.6').ok).toBe(false);
    expect(s.authenticateBearer('Bearer operator-token', 'http 6.6.6.6')).toMatchObject({
      ok: false,
      code: 'rate_limited',
    });
    // Another source is not affected, and the window passes.
    expect(s.authenticateBearer('Bearer operator-token', 'http 7.7.7.7').ok).toBe(true);
    advance(60_001);
    expect(s.authenticateBearer('Bearer operator-token', 'http 6.6.6.6').ok).toBe(true);
  });

  it('gives viewers read-only principals and computers their grants; a viewer key cannot connect a computer', async () => {
    const { s } = await service({ token: 'operator-token' });
    const v = await s.createKey('viewer', 'wall display', operator);
    expect(s.authenticateBearer(`Bearer ${v.key}`, 'h')).toMatchObject({
      ok: true,
      principal: { role: 'viewer' },
    });
    expect(s.authenticateHello('pc', v.key, 'h').ok).toBe(false);
    // An operator key connects a computer only as an id that was never enrolled, like the shared token.
    const op = await s.createKey('operator', 'ops', operator);
    expect(s.authenticateHello('fresh-pc', op.key, 'h').ok).toBe(true);
    const t = await s.enroll({ grants: { kinds: ['code_job'], observeOthers: true } }, operator);
    const r = await s.redeem(t.code, 'pc', 'h');
    if (!r.ok) throw new Error('redeem failed');
    expect(s.authenticateBearer(`Bearer ${r.key}`, 'h')).toMatchObject({
      ok: true,
      principal: { role: 'computer', clientId: 'pc', grants: { kinds: ['code_job'], observeOthers: true } },
    });
    expect(s.authenticateBearer(undefined, 'h')).toMatchObject({ ok: false, code: 'unauthorized' });
    expect(s.authenticateHello('pc', op.key, 'h')).toMatchObject({ ok: false, code: 'unauthorized' });
  });

  it('writes the audit log for enrollment, pairing and revocation', async () => {
    const { s, store } = await service();
    const t = await s.enroll({ clientId: 'pc' }, operator);
    await s.redeem(t.code, 'pc', 'ws 1');
    await s.redeem(t.code, 'pc', 'ws 2');
    await s.revoke({ clientId: 'pc' }, operator);
    const rows = await store.listAudit();
    expect(rows.map((r) => [r.action, r.outcome])).toEqual([
      ['client.revoke', 'ok'],
      ['client.pair', 'refused'],
      ['client.pair', 'ok'],
      ['client.enroll', 'ok'],
    ]);
  });

  it('counts the failures of an address across HTTP, the WebSocket and the mod endpoint together (guards against each channel giving an address its own budget)', async () => {
    const { s } = await service({ token: 'operator-token' });
    // One failure on each channel, from the same address (the mod endpoint's socket reports it IPv4-mapped).
    expect(s.authenticateBearer('Bearer guess-1', 'http 6.6.6.6').ok).toBe(false);
    expect(s.authenticateHello('pc', 'guess-2', 'ws 6.6.6.6').ok).toBe(false);
    expect(s.authenticateBearer('Bearer guess-3', 'mc ::ffff:6.6.6.6').ok).toBe(false);
    // The budget (3) is spent: the token is not even checked from that address, on any channel.
    for (const check of [
      () => s.authenticateBearer('Bearer operator-token', 'http 6.6.6.6'),
      () => s.authenticateHello('pc', 'operator-token', 'ws 6.6.6.6'),
      () => s.authenticateBearer('Bearer operator-token', 'mc ::ffff:6.6.6.6'),
    ]) {
      expect(check()).toMatchObject({ ok: false, code: 'rate_limited' });
    }
    expect(s.authenticateHello('pc', 'operator-token', 'ws 7.7.7.7').ok).toBe(true);
  });

  it('counts refused pairing requests instead of writing a row for each: one row per reason and minute, saying how many it stands for, from any number of addresses (guards against an unauthenticated caller growing the audit table without bound)', async () => {
    const { s, store, advance } = await service({ pairingRequests: false });
    for (let i = 0; i < 200; i++) {
      expect(await s.requestPairing(`pc-${i}`, undefined, `http 10.0.${i >> 8}.${i & 255}`)).toMatchObject({
        ok: false,
        code: 'pairing_disabled',
      });
    }
    const first = await store.listAudit();
    expect(first.map((r) => [r.action, r.outcome, r.detail])).toEqual([
      ['client.pair_request', 'refused', { reason: 'pairing_disabled', refusals: 1 }],
    ]);
    advance(60_001);
    await s.requestPairing('pc-late', undefined, 'http 10.9.9.9');
    const rows = await store.listAudit();
    expect(rows).toHaveLength(2);
    expect(rows[0]?.detail).toEqual({ reason: 'pairing_disabled', refusals: 200 });
    // Refused enrollment codes and collects are counted the same way.
    for (let i = 0; i < 50; i++) await s.redeem(`NOPE-${i}`, 'pc', `ws 10.1.0.${i}`);
    for (let i = 0; i < 50; i++) await s.collectPairing(`pr-${i}`, 'wrong', `http 10.2.0.${i}`);
    expect((await store.listAudit()).length).toBeLessThanOrEqual(4);
  });
});
