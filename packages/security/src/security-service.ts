/**
 * Who is calling: authenticates HTTP bearers and WebSocket `hello`s against the shared operator token and the
 * per-computer keys, issues and redeems enrollment codes, revokes and rotates keys, throttles failed attempts per
 * source, and writes the audit log. Keys are kept in memory by hash (loaded at start, changed only through this
 * service), so a check costs one SHA-256 and a map lookup.
 *
 * Size (over 500 lines): every operation that creates or ends a key (enroll, redeem, pairing collect, create, rotate,
 * revoke, expiry) must change that map, the store and the audit log together, under the same failure limiter; kept
 * in one class so no second object holds a copy of the key map that could disagree with it. Its helpers are apart:
 * keys.ts (key and code generation), failure-limiter.ts, refusal-tally.ts, the rules the stores apply
 * (credential-rules.ts) and the port (credentials.ts); the HTTP and WebSocket checks are the orchestrator's.
 */
import type { Clock, Logger } from '@ccagent/engine';
import { clientTaken } from './credential-rules.js';
import type {
  AuditInput,
  AuditQuery,
  AuditRecord,
  CredentialGrants,
  CredentialRecord,
  CredentialStore,
  PairingRecord,
} from './credentials.js';
import { FailureLimiter, type FailureLimits } from './failure-limiter.js';
import { RefusalTally } from './refusal-tally.js';
import {
  hashEnrollmentCode,
  hashSecret,
  newCredentialId,
  newEnrollmentCode,
  newKey,
  newPairingId,
  secretMatches,
} from './keys.js';

/** Roles: `operator` may do everything; `computer` its own tasks and calls plus its grants; `viewer` reads. */
export type Role = 'operator' | 'computer' | 'viewer';

/** An authenticated caller. */
export interface Principal {
  role: Role;
  /** Credential id; `token` for the shared operator token; `open` on a server with no token (loopback). */
  actor: string;
  /** The computer's client id (role `computer`). */
  clientId?: string;
  grants: CredentialGrants;
  /** Where the request came from (`http 127.0.0.1`, `ws 10.0.0.5`). */
  source: string;
}

/** Why authentication failed (a refusal changes nothing). */
export interface AuthFailure {
  ok: false;
  code: 'unauthorized' | 'rate_limited';
  message: string;
  /** For `rate_limited`: when to try again. */
  retryAfterMs?: number;
}

/** Outcome of an authentication. */
export type AuthResult = { ok: true; principal: Principal } | AuthFailure;

/** Options of {@link SecurityService}. */
export interface SecurityOptions {
  store: CredentialStore;
  /** The shared `--token`: the operator credential (and, for computers not yet enrolled, a legacy key). */
  token: string | undefined;
  /** Refuse computers without their own key (no shared token, no open `hello`). */
  requireClientKeys: boolean;
  /** Life of an enrollment code (ms). */
  enrollmentTtlMs: number;
  /** How long a rotated key keeps working beside its successor (ms). */
  rotationOverlapMs: number;
  failures: FailureLimits;
  /** Pairing by request and approval (computers without a code); default on. */
  pairingRequests?: boolean;
  /** Most requests waiting for a decision (default 20). */
  maxPendingPairings?: number;
  /** Approve every request at once (trust on first use); default off. */
  trustOnFirstUse?: boolean;
  now: () => number;
  /**
   * Timers for the end of a rotation overlap: when a rotated key expires, the revocation listeners hear it (so its
   * open connection is closed). Without timers an expired key is only refused at its next use.
   */
  timers?: Pick<Clock, 'setTimeout' | 'clearTimeout'>;
  logger: Logger;
}

/** What `enroll` hands the operator. */
export interface EnrollmentTicket {
  code: string;
  expiresAt: number;
  clientId?: string;
}

/** A credential as shown to operators (no hash). */
export type CredentialView = Omit<CredentialRecord, 'keyHash'>;

/** A pairing request as shown to operators (no hash), with its state. */
export type PairingView = Omit<PairingRecord, 'secretHash'> & {
  state: 'pending' | 'approved' | 'denied' | 'collected' | 'expired';
};

/** What a computer gets when it asks to pair: the secret it collects its key with (shown once), and the match code. */
export interface PairingTicket {
  id: string;
  secret: string;
  match: string;
  expiresAt: number;
  /** Approved at once (trust on first use). */
  approved: boolean;
}

/** Called when credentials stop being valid (`revoked`, or `expired` at the end of a rotation overlap). */
export type RevokedListener = (revoked: CredentialRecord[], reason: 'revoked' | 'expired') => void;

/** The longest single wait of the expiry timer (setTimeout's limit is about 24.8 days). */
const MAX_TIMER_MS = 3_600_000;

/** The security service of one orchestrator. */
export class SecurityService {
  private readonly byHash = new Map<string, CredentialRecord>();
  private readonly limiter: FailureLimiter;
  /** Audit rows of unauthenticated callers' refusals: at most one per kind and minute (refusal-tally.ts). */
  private readonly refusals = new RefusalTally();
  private readonly revokedListeners: RevokedListener[] = [];
  private expiryTimer: { handle: unknown; at: number } | undefined;
  private closed = false;

  private constructor(
    private readonly o: SecurityOptions,
    creds: CredentialRecord[],
  ) {
    this.limiter = new FailureLimiter(o.failures);
    for (const c of creds) if (c.revokedAt === undefined) this.byHash.set(c.keyHash, c);
    this.scheduleExpiry();
  }

  /** Stop the expiry timer (the orchestrator's shutdown). */
  close(): void {
    this.closed = true;
    if (this.expiryTimer) this.o.timers?.clearTimeout(this.expiryTimer.handle as never);
    this.expiryTimer = undefined;
  }

  /**
   * Drop every key whose rotation overlap has ended and tell the listeners, so a connection that authenticated with
   * it is closed like a revoked one. Runs from the expiry timer; callable directly.
   */
  expireDue(): CredentialRecord[] {
    const now = this.o.now();
    const due = [...this.byHash.values()].filter((c) => c.expiresAt !== undefined && c.expiresAt <= now);
    for (const c of due) this.byHash.delete(c.keyHash);
    if (due.length > 0) {
      this.o.logger.info({ credentials: due.map((c) => c.id) }, 'rotated keys expired');
      this.notify(due, 'expired');
    }
    this.scheduleExpiry();
    return due;
  }

  /** Arm the timer for the earliest future expiry (one timer, re-armed when an earlier expiry appears). */
  private scheduleExpiry(): void {
    const timers = this.o.timers;
    if (!timers || this.closed) return;
    let next: number | undefined;
    for (const c of this.byHash.values()) {
      if (c.expiresAt !== undefined && (next === undefined || c.expiresAt < next)) next = c.expiresAt;
    }
    if (this.expiryTimer && next !== undefined && this.expiryTimer.at <= next) return;
    if (this.expiryTimer) timers.clearTimeout(this.expiryTimer.handle as never);
    this.expiryTimer = undefined;
    if (next === undefined) return;
    const wait = Math.min(Math.max(next - this.o.now(), 0), MAX_TIMER_MS);
    const at = this.o.now() + wait;
    const handle = timers.setTimeout(() => {
      this.expiryTimer = undefined;
      this.expireDue();
    }, wait);
    this.expiryTimer = { handle, at };
  }

  /** Load the stored credentials and start. */
  static async open(o: SecurityOptions): Promise<SecurityService> {
    return new SecurityService(o, await o.store.listCredentials());
  }

  /** True when the server has no token: unauthenticated HTTP callers are operators (loopback only). */
  get isOpen(): boolean {
    return this.o.token === undefined;
  }

  /** Register a listener for revoked credentials. */
  onRevoked(listener: RevokedListener): void {
    this.revokedListeners.push(listener);
  }

  /** The live credential of a key, if any. */
  private live(key: string): CredentialRecord | undefined {
    const c = this.byHash.get(hashSecret(key));
    if (!c || c.revokedAt !== undefined) return undefined;
    if (c.expiresAt !== undefined && c.expiresAt <= this.o.now()) return undefined;
    return c;
  }

  /** Does `clientId` have a live key (then nothing else may connect as it)? */
  isEnrolled(clientId: string): boolean {
    const now = this.o.now();
    for (const c of this.byHash.values()) {
      if (
        c.clientId === clientId &&
        c.revokedAt === undefined &&
        (c.expiresAt === undefined || c.expiresAt > now)
      )
        return true;
    }
    return false;
  }

  /** Authenticate an HTTP `Authorization` header. No header on an open server: the operator. */
  authenticateBearer(header: string | undefined, source: string): AuthResult {
    if (header === undefined) {
      if (this.isOpen)
        return { ok: true, principal: { role: 'operator', actor: 'open', grants: {}, source } };
      return {
        ok: false,
        code: 'unauthorized',
        message: 'this server requires "Authorization: Bearer <token>"',
      };
    }
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!m) return this.failed(source, 'the Authorization header is not "Bearer <key>"');
    const key = m[1] as string;
    const cred = this.live(key);
    if (cred) return { ok: true, principal: principalOf(cred, source) };
    const throttled = this.throttled(source);
    if (throttled) return throttled;
    if (this.o.token !== undefined && secretMatches(key, this.o.token)) {
      return { ok: true, principal: { role: 'operator', actor: 'token', grants: {}, source } };
    }
    return this.failed(source, 'wrong token');
  }

  /**
   * Authenticate a WebSocket `hello` for `clientId`. A computer key must be that client's; the shared token and an
   * open server only stand in for clients that were never enrolled (and not at all with `requireClientKeys`).
   */
  authenticateHello(clientId: string, token: string | undefined, source: string): AuthResult {
    if (token !== undefined) {
      const cred = this.live(token);
      if (cred) {
        if (cred.role === 'computer' && cred.clientId !== clientId) {
          return this.failed(source, `this key belongs to another client, not "${clientId}"`, clientId);
        }
        if (cred.role === 'viewer')
          return this.failed(source, 'a viewer key cannot connect a computer', clientId);
        if (cred.role === 'computer') return { ok: true, principal: principalOf(cred, source) };
        // An operator key stands in for computers like the shared token: never for an enrolled id.
        return this.standIn(clientId, cred.id, source);
      }
      const throttled = this.throttled(source);
      if (throttled) return throttled;
      if (this.o.token === undefined || !secretMatches(token, this.o.token)) {
        return this.failed(source, 'wrong token or key (or the key expired or was revoked)', clientId);
      }
    } else if (this.o.token !== undefined) {
      return this.failed(source, 'this server requires a token or key', clientId);
    }
    return this.standIn(clientId, token === undefined ? 'open' : 'token', source);
  }

  /** The shared token, an operator key or an open server connecting a computer: only ids never enrolled. */
  private standIn(clientId: string, actor: string, source: string): AuthResult {
    if (this.isEnrolled(clientId)) {
      return this.failed(source, `client "${clientId}" is enrolled: connect with its own key`, clientId);
    }
    if (this.o.requireClientKeys) {
      return this.failed(
        source,
        'this server requires a per-computer key (ccagent clients enroll)',
        clientId,
      );
    }
    return { ok: true, principal: { role: 'computer', actor, clientId, grants: {}, source } };
  }

  /** Issue an enrollment code (operator). A code naming a client replaces that client's keys when redeemed. */
  async enroll(
    input: { clientId?: string; name?: string; grants?: CredentialGrants; ttlMs?: number },
    by: Principal,
  ): Promise<EnrollmentTicket> {
    const code = newEnrollmentCode();
    const now = this.o.now();
    const expiresAt = now + (input.ttlMs ?? this.o.enrollmentTtlMs);
    await this.o.store.insertEnrollment({
      codeHash: hashEnrollmentCode(code),
      ...(input.clientId !== undefined ? { clientId: input.clientId } : {}),
      ...(input.name !== undefined ? { name: input.name } : {}),
      grants: input.grants ?? {},
      createdAt: now,
      expiresAt,
    });
    await this.audit(by, 'client.enroll', input.clientId ?? input.name, 'ok', { expiresAt });
    return { code, expiresAt, ...(input.clientId !== undefined ? { clientId: input.clientId } : {}) };
  }

  /** A computer redeems an enrollment code for its own key (returned once, never stored). */
  async redeem(
    code: string,
    clientId: string,
    source: string,
  ): Promise<
    | { ok: true; key: string; credential: CredentialView }
    | {
        ok: false;
        code: 'rate_limited' | 'unknown_code' | 'code_used' | 'code_expired' | 'client_taken';
        message: string;
        retryAfterMs?: number;
      }
  > {
    const throttled = this.throttled(source);
    if (throttled) return throttled;
    const key = newKey();
    const now = this.o.now();
    const r = await this.o.store.redeemEnrollment(
      hashEnrollmentCode(code),
      now,
      clientId,
      (id, grants, name) => ({
        id: newCredentialId(),
        role: 'computer',
        clientId: id,
        ...(name !== undefined ? { name } : {}),
        keyHash: hashSecret(key),
        grants,
        createdAt: now,
      }),
    );
    const anon: Principal = { role: 'computer', actor: 'enrollment', clientId, grants: {}, source };
    if (!r.ok) {
      this.failed(source, `enrollment refused: ${r.message}`, clientId);
      await this.auditRefusal(anon, 'client.pair', clientId, r.code);
      return r;
    }
    this.byHash.set(r.credential.keyHash, r.credential);
    this.dropRevoked(r.revoked);
    await this.audit({ ...anon, actor: r.credential.id }, 'client.pair', r.credential.clientId, 'ok');
    return { ok: true, key, credential: view(r.credential) };
  }

  /**
   * A computer without a code asks to pair as `clientId`: the request waits for an operator (or is approved at once
   * with trust on first use). Refused when requests are off, the id already has a key, or too many wait.
   */
  async requestPairing(
    clientId: string,
    name: string | undefined,
    source: string,
  ): Promise<
    | { ok: true; ticket: PairingTicket }
    | {
        ok: false;
        code: 'rate_limited' | 'pairing_disabled' | 'client_taken' | 'too_many_requests';
        message: string;
        retryAfterMs?: number;
      }
  > {
    const throttled = this.throttled(source);
    if (throttled) return throttled;
    const anon: Principal = { role: 'computer', actor: 'pairing', clientId, grants: {}, source };
    const refuse = async (
      code: 'pairing_disabled' | 'client_taken' | 'too_many_requests',
      message: string,
    ): Promise<{ ok: false; code: typeof code; message: string }> => {
      await this.auditRefusal(anon, 'client.pair_request', clientId, code);
      return { ok: false, code, message };
    };
    if (this.o.pairingRequests === false) {
      return refuse(
        'pairing_disabled',
        'this server pairs computers by enrollment code only (ccagent clients enroll, then install.lua --code)',
      );
    }
    if (this.isEnrolled(clientId)) {
      return refuse('client_taken', clientTaken(clientId).message);
    }
    const now = this.o.now();
    const waiting = (await this.o.store.listPairings()).filter(
      (p) => p.decision === undefined && p.expiresAt > now,
    );
    if (waiting.length >= (this.o.maxPendingPairings ?? 20)) {
      return refuse(
        'too_many_requests',
        'too many pairing requests are waiting for an operator; try again later',
      );
    }
    const secret = newKey();
    const tofu = this.o.trustOnFirstUse === true;
    const rec: PairingRecord = {
      id: newPairingId(),
      secretHash: hashSecret(secret),
      clientId,
      ...(name !== undefined ? { name } : {}),
      source,
      match: newEnrollmentCode().slice(0, 5),
      createdAt: now,
      expiresAt: now + this.o.enrollmentTtlMs,
      grants: {},
      ...(tofu ? { decision: 'approved' as const, decidedAt: now, decidedBy: 'trust-on-first-use' } : {}),
    };
    await this.o.store.insertPairing(rec);
    await this.audit({ ...anon, actor: rec.id }, 'client.pair_request', clientId, 'ok', {
      match: rec.match,
      ...(tofu ? { approved: 'trust-on-first-use' } : {}),
    });
    return {
      ok: true,
      ticket: { id: rec.id, secret, match: rec.match, expiresAt: rec.expiresAt, approved: tofu },
    };
  }

  /** Pairing requests for operators, newest first (pending ones and the recent past). */
  async listPairings(): Promise<PairingView[]> {
    const now = this.o.now();
    return (await this.o.store.listPairings()).map((p) => pairingView(p, now));
  }

  /** An operator approves (with grants) or denies a pending request. Undefined: unknown, decided or expired. */
  async decidePairing(
    id: string,
    approved: boolean,
    grants: CredentialGrants,
    by: Principal,
  ): Promise<PairingView | undefined> {
    const now = this.o.now();
    const p = await this.o.store.decidePairing(id, {
      approved,
      grants,
      by: by.actor,
      at: now,
      expiresAt: now + this.o.enrollmentTtlMs,
    });
    await this.audit(
      by,
      approved ? 'client.approve' : 'client.deny',
      p?.clientId ?? id,
      p ? 'ok' : 'refused',
      p ? { request: id, match: p.match } : { request: id, reason: 'no pending request with this id' },
    );
    return p ? pairingView(p, now) : undefined;
  }

  /**
   * The computer collects its key with its request's secret: `pending` until an operator decides, then the key
   * (once) or `denied`. A wrong secret counts as a failed authentication.
   */
  async collectPairing(
    id: string,
    secret: string,
    source: string,
  ): Promise<
    | { ok: true; key: string; credential: CredentialView }
    | { ok: false; code: string; message: string; retryAfterMs?: number }
  > {
    const throttled = this.throttled(source);
    if (throttled) return throttled;
    const key = newKey();
    const now = this.o.now();
    const r = await this.o.store.collectPairing(hashSecret(secret), now, (clientId, grants, name) => ({
      id: newCredentialId(),
      role: 'computer',
      clientId,
      ...(name !== undefined ? { name } : {}),
      keyHash: hashSecret(key),
      grants,
      createdAt: now,
    }));
    const anon: Principal = { role: 'computer', actor: id, grants: {}, source };
    if (!r.ok) {
      if (r.code === 'pending') return r;
      if (r.code === 'unknown_request') this.failed(source, 'pairing: unknown request or wrong secret');
      await this.auditRefusal(anon, 'client.pair', id, r.code, { via: 'approval' });
      return r;
    }
    this.byHash.set(r.credential.keyHash, r.credential);
    await this.audit(
      { ...anon, actor: r.credential.id, clientId: r.credential.clientId },
      'client.pair',
      r.credential.clientId,
      'ok',
      {
        via: 'approval',
        request: id,
      },
    );
    return { ok: true, key, credential: view(r.credential) };
  }

  /** Revoke a credential (by id) or every key of a client; their open connections are closed at once. */
  async revoke(target: { id: string } | { clientId: string }, by: Principal): Promise<CredentialView[]> {
    const revoked = await this.o.store.revokeCredentials(target, this.o.now());
    this.dropRevoked(revoked);
    await this.audit(
      by,
      'client.revoke',
      'id' in target ? target.id : target.clientId,
      revoked.length > 0 ? 'ok' : 'refused',
      revoked.length > 0 ? { revoked: revoked.map((c) => c.id) } : { reason: 'no live key matches' },
    );
    return revoked.map(view);
  }

  /** A new key for a computer; its old keys keep working for the rotation overlap, then expire. */
  async rotate(
    clientId: string,
    by: Principal,
  ): Promise<{ key: string; credential: CredentialView; oldValidUntil: number } | undefined> {
    if (!this.isEnrolled(clientId)) return undefined;
    const now = this.o.now();
    const key = newKey();
    const current = [...this.byHash.values()].find(
      (c) => c.clientId === clientId && c.revokedAt === undefined,
    );
    const next: CredentialRecord = {
      id: newCredentialId(),
      role: 'computer',
      clientId,
      ...(current?.name !== undefined ? { name: current.name } : {}),
      keyHash: hashSecret(key),
      grants: current?.grants ?? {},
      createdAt: now,
    };
    const oldValidUntil = now + this.o.rotationOverlapMs;
    const old = await this.o.store.rotate(next, oldValidUntil);
    for (const c of old) {
      const cached = this.byHash.get(c.keyHash);
      if (cached) cached.expiresAt = c.expiresAt;
    }
    this.byHash.set(next.keyHash, next);
    this.scheduleExpiry();
    await this.audit(by, 'client.rotate', clientId, 'ok', { credential: next.id, oldValidUntil });
    return { key, credential: view(next), oldValidUntil };
  }

  /** A key for a person or tool that is not a computer: `viewer` (read-only) or `operator`. */
  async createKey(
    role: 'viewer' | 'operator',
    name: string | undefined,
    by: Principal,
  ): Promise<{ key: string; credential: CredentialView }> {
    const key = newKey();
    const cred: CredentialRecord = {
      id: newCredentialId(),
      role,
      ...(name !== undefined ? { name } : {}),
      keyHash: hashSecret(key),
      grants: {},
      createdAt: this.o.now(),
    };
    await this.o.store.insertCredential(cred);
    this.byHash.set(cred.keyHash, cred);
    await this.audit(by, 'key.create', cred.id, 'ok', { role, ...(name !== undefined ? { name } : {}) });
    return { key, credential: view(cred) };
  }

  /** Every credential (no hashes). */
  async listCredentials(): Promise<CredentialView[]> {
    return (await this.o.store.listCredentials()).map(view);
  }

  /** Append an audit row; a failure to write it is logged, never thrown at the caller (the action already happened). */
  async audit(
    by: Principal,
    action: string,
    target: string | undefined,
    outcome: 'ok' | 'refused',
    detail?: unknown,
  ): Promise<void> {
    const row: AuditInput = {
      at: this.o.now(),
      actor: by.actor,
      role: by.role,
      source: by.source,
      action,
      ...(target !== undefined ? { target } : {}),
      outcome,
      ...(detail !== undefined ? { detail } : {}),
    };
    try {
      await this.o.store.appendAudit(row);
    } catch (err) {
      this.o.logger.error({ err, action, actor: by.actor }, 'could not write the audit log');
    }
  }

  /**
   * The audit row of a refusal to a caller nobody authenticated (a pairing request, an enrollment code, a collect, a
   * throttled address): written for the first refusal of its kind (action and reason) and then at most once a
   * minute, with `refusals`, how many it stands for. Anyone who can reach the server can cause these, so one row per
   * attempt would let them grow the audit table without bound; the log line of each refusal stays.
   */
  private async auditRefusal(
    by: Principal,
    action: string,
    target: string | undefined,
    reason: string,
    detail: Record<string, unknown> = {},
  ): Promise<void> {
    this.o.logger.warn({ source: by.source, action, target, reason }, 'unauthenticated request refused');
    const row = this.refusals.refused(`${action}\u0000${reason}`, this.o.now());
    if (row === undefined) return;
    await this.audit(by, action, target, 'refused', { reason, ...detail, refusals: row.count });
  }

  /** Audit rows, newest first. */
  listAudit(q: AuditQuery): Promise<AuditRecord[]> {
    return this.o.store.listAudit(q);
  }

  private dropRevoked(revoked: CredentialRecord[]): void {
    if (revoked.length === 0) return;
    for (const c of revoked) this.byHash.delete(c.keyHash);
    this.notify(revoked, 'revoked');
  }

  private notify(creds: CredentialRecord[], reason: 'revoked' | 'expired'): void {
    for (const l of this.revokedListeners) {
      try {
        l(creds, reason);
      } catch (err) {
        this.o.logger.error({ err }, 'revocation listener failed');
      }
    }
  }

  /** The refusal for a source that failed too often lately (one shape for every entry point that checks it). */
  private throttled(
    source: string,
  ): { ok: false; code: 'rate_limited'; message: string; retryAfterMs: number } | undefined {
    const wait = this.limiter.blockedFor(source, this.o.now());
    if (wait === 0) return undefined;
    return {
      ok: false,
      code: 'rate_limited',
      message: `too many failed attempts from ${source}; try again in ${Math.ceil(wait / 1000)} s`,
      retryAfterMs: wait,
    };
  }

  private failed(source: string, message: string, clientId?: string): AuthFailure {
    const crossed = this.limiter.fail(source, this.o.now());
    this.o.logger.warn(
      { source, ...(clientId !== undefined ? { client_id: clientId } : {}), reason: message },
      'authentication failed',
    );
    if (crossed) {
      this.o.logger.warn({ source }, 'authentication failures throttled for this source');
      void this.auditRefusal(
        { role: 'computer', actor: 'unknown', grants: {}, source },
        'auth.throttled',
        clientId,
        'too_many_failures',
        { message },
      );
    }
    return { ok: false, code: 'unauthorized', message };
  }
}

function principalOf(c: CredentialRecord, source: string): Principal {
  return {
    role: c.role,
    actor: c.id,
    ...(c.clientId !== undefined ? { clientId: c.clientId } : {}),
    grants: c.grants,
    source,
  };
}

function pairingView(p: PairingRecord, now: number): PairingView {
  const { secretHash: _hash, ...rest } = p;
  const state =
    p.collectedAt !== undefined
      ? 'collected'
      : p.decision === 'denied'
        ? 'denied'
        : p.expiresAt <= now
          ? 'expired'
          : p.decision === 'approved'
            ? 'approved'
            : 'pending';
  return { ...rest, state };
}

function view(c: CredentialRecord): CredentialView {
  const { keyHash: _hash, ...rest } = c;
  return rest;
}
