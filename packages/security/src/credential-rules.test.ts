import { describe, expect, it } from 'vitest';
import {
  clientTaken,
  credentialProblem,
  decidedPairing,
  hasLiveKey,
  mayDecide,
  redeemClientId,
  redeemTakenRefusal,
  rotatedExpiry,
} from './credential-rules.js';
import type { CredentialRecord, PairingRecord } from './credentials.js';

const key = (over: Partial<CredentialRecord> = {}): CredentialRecord => ({
  id: 'k',
  role: 'computer',
  clientId: 'pc',
  keyHash: 'h',
  grants: {},
  createdAt: 1,
  ...over,
});

describe('credential rules', () => {
  it('count only keys that work now as taking an id (guards against a revoked or expired key blocking re-enrollment)', () => {
    expect(hasLiveKey([key()], 'pc', 10)).toBe(true);
    expect(hasLiveKey([key({ revokedAt: 5 })], 'pc', 10)).toBe(false);
    expect(hasLiveKey([key({ expiresAt: 10 })], 'pc', 10)).toBe(false);
    expect(hasLiveKey([key({ expiresAt: 11 })], 'pc', 10)).toBe(true);
    expect(hasLiveKey([key()], 'other', 10)).toBe(false);
  });

  it('let only a code naming no client be refused for a taken id, with the hint to name it (guards against drifted refusal texts)', () => {
    const anon = { codeHash: 'c', grants: {}, createdAt: 1, expiresAt: 9 };
    expect(redeemClientId(anon, 'pc')).toBe('pc');
    expect(redeemClientId({ ...anon, clientId: 'named' }, 'pc')).toBe('named');
    expect(redeemTakenRefusal(anon, 'pc', [key()], 2)).toEqual(clientTaken('pc'));
    expect(redeemTakenRefusal({ ...anon, clientId: 'pc' }, 'pc', [key()], 2)).toBeUndefined();
    expect(clientTaken('pc').message).toBe(
      'client "pc" already has a key; ask the operator for a code naming it (ccagent clients enroll --name pc)',
    );
  });

  it('decide a pending request only, and keep a denial’s own deadline (guards against re-deciding or extending a denied request)', () => {
    const p: PairingRecord = {
      id: 'p',
      secretHash: 's',
      clientId: 'pc',
      source: 'x',
      match: 'M',
      createdAt: 1,
      expiresAt: 10,
      grants: {},
    };
    expect(mayDecide(p, 9)).toBe(true);
    expect(mayDecide(p, 10)).toBe(false);
    expect(mayDecide({ ...p, decision: 'denied' }, 2)).toBe(false);
    expect(mayDecide(undefined, 2)).toBe(false);
    const d = { grants: { kinds: ['a'] }, by: 'op', at: 3, expiresAt: 99 };
    expect(decidedPairing(p, { ...d, approved: true })).toMatchObject({
      decision: 'approved',
      expiresAt: 99,
    });
    expect(decidedPairing(p, { ...d, approved: false })).toMatchObject({ decision: 'denied', expiresAt: 10 });
  });

  it('end a rotated key at the deadline or its own earlier expiry, and want a client id on a computer key (guards against a rotation lengthening a key’s life)', () => {
    expect(rotatedExpiry(key(), 100)).toBe(100);
    expect(rotatedExpiry(key({ expiresAt: 50 }), 100)).toBe(50);
    expect(credentialProblem(key({ clientId: undefined }))).toBe('a computer credential needs a client id');
    expect(credentialProblem(key({ role: 'viewer', clientId: undefined }))).toBeUndefined();
  });
});
