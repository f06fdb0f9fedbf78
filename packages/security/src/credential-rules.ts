/**
 * The rules of the credential domain as pure functions of stored records: may this enrollment code be redeemed, may
 * this pairing request be decided or collected, is this client id taken, what does a rotation leave behind. Every
 * `CredentialStore` (SQLite, PostgreSQL, in memory) reads the records inside its transaction, asks these, and only
 * persists the outcome, so the three cannot drift apart (their refusal messages once had).
 */
import type {
  AuditQuery,
  CredentialRecord,
  EnrollmentRecord,
  PairingDecision,
  PairingRecord,
  CollectRefusal,
  RedeemRefusal,
} from './credentials.js';

/** Is `c` a key that works at `now` (not revoked, not expired)? */
export function isLive(c: CredentialRecord, now: number): boolean {
  return c.revokedAt === undefined && (c.expiresAt === undefined || c.expiresAt > now);
}

/** Does `clientId` have a key that works at `now` among `creds`? */
export function hasLiveKey(creds: readonly CredentialRecord[], clientId: string, now: number): boolean {
  return creds.some((c) => c.clientId === clientId && isLive(c, now));
}

/**
 * The refusal of a client id that already has a live key (pairing, redeeming a code that names no client, asking to
 * pair): one message everywhere, with what to do instead.
 */
export function clientTaken(clientId: string): { ok: false; code: 'client_taken'; message: string } {
  return {
    ok: false,
    code: 'client_taken',
    message: `client "${clientId}" already has a key; ask the operator for a code naming it (ccagent clients enroll --name ${clientId})`,
  };
}

/** Why an enrollment code (as stored, undefined when unknown) cannot be redeemed at `now`, or undefined if it can. */
export function redeemRefusal(code: EnrollmentRecord | undefined, now: number): RedeemRefusal | undefined {
  if (!code) return { ok: false, code: 'unknown_code', message: 'no such enrollment code' };
  if (code.usedAt !== undefined)
    return { ok: false, code: 'code_used', message: 'this enrollment code was already used' };
  if (code.expiresAt <= now)
    return { ok: false, code: 'code_expired', message: 'this enrollment code has expired' };
  return undefined;
}

/** The client id a redeemed code's key is for: the one the code names, else the one the computer asked for. */
export function redeemClientId(code: EnrollmentRecord, requestedClientId: string): string {
  return code.clientId ?? requestedClientId;
}

/**
 * Whether redeeming `code` for `clientId` is refused because the id is taken: only a code naming no client is (a
 * code naming one replaces that client's keys). `unrevoked` are the client's credentials not revoked (read in the
 * same transaction); a redemption that goes ahead revokes all of them.
 */
export function redeemTakenRefusal(
  code: EnrollmentRecord,
  clientId: string,
  unrevoked: readonly CredentialRecord[],
  now: number,
): RedeemRefusal | undefined {
  if (code.clientId === undefined && hasLiveKey(unrevoked, clientId, now)) return clientTaken(clientId);
  return undefined;
}

/** Why a pairing request (undefined when unknown) cannot be collected at `now`, or undefined when it can. */
export function pairingRefusal(p: PairingRecord | undefined, now: number): CollectRefusal | undefined {
  if (!p) return { ok: false, code: 'unknown_request', message: 'no such pairing request' };
  if (p.collectedAt !== undefined)
    return { ok: false, code: 'collected', message: 'the key of this pairing request was already collected' };
  if (p.decision === 'denied')
    return { ok: false, code: 'denied', message: 'the operator denied this pairing' };
  if (p.expiresAt <= now) return { ok: false, code: 'expired', message: 'this pairing request has expired' };
  if (p.decision === undefined)
    return { ok: false, code: 'pending', message: 'waiting for an operator to approve this computer' };
  return undefined;
}

/** May an operator decide this request at `at` (known, still pending, not expired)? */
export function mayDecide(p: PairingRecord | undefined, at: number): p is PairingRecord {
  return p !== undefined && p.decision === undefined && p.expiresAt > at;
}

/** The request as decided: an approval carries the grants and a new deadline to collect by; a denial keeps its own. */
export function decidedPairing(p: PairingRecord, d: PairingDecision): PairingRecord {
  return {
    ...p,
    decision: d.approved ? 'approved' : 'denied',
    decidedAt: d.at,
    decidedBy: d.by,
    grants: d.grants,
    expiresAt: d.approved ? d.expiresAt : p.expiresAt,
  };
}

/** When an old key of a rotated client stops working: the rotation's deadline, or its own earlier expiry. */
export function rotatedExpiry(old: CredentialRecord, oldUntil: number): number {
  return Math.min(old.expiresAt ?? oldUntil, oldUntil);
}

/** What is wrong with a credential to store (a computer's needs its client id), or undefined. */
export function credentialProblem(c: CredentialRecord): string | undefined {
  if (c.role === 'computer' && !c.clientId) return 'a computer credential needs a client id';
  return undefined;
}

/** What is wrong with the new credential of a rotation (it names the client rotated), or undefined. */
export function rotationProblem(next: CredentialRecord): string | undefined {
  if (!next.clientId) return 'rotation needs a client id';
  return credentialProblem(next);
}

/** How many audit rows a query returns at most: its `limit` within 1..1000, 100 by default. */
export function auditLimit(q: AuditQuery): number {
  return Math.min(Math.max(q.limit ?? 100, 1), 1000);
}

/** Does an audit row match the query's filters (`beforeId`, `actor`, `action`)? For stores that filter in code. */
export function auditMatches(r: { id: number; actor: string; action: string }, q: AuditQuery): boolean {
  return (
    (q.beforeId === undefined || r.id < q.beforeId) &&
    (q.actor === undefined || r.actor === q.actor) &&
    (q.action === undefined || r.action === q.action)
  );
}
