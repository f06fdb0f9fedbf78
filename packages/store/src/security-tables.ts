/**
 * The security tables of schema version 6: credentials (hashes of keys only), enrollment codes and the audit log;
 * pairing requests since version 7.
 * Reached through {@link SqliteStore.security}; writes go through the store's write queue (durable when resolved).
 */
import { and, desc, eq, isNull, lt, type SQL } from 'drizzle-orm';
import type { BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import * as schema from './schema.js';
import { StoreError } from './store-error.js';

/** Roles a credential can carry. */
export const CREDENTIAL_ROLES = ['operator', 'computer', 'viewer'] as const;
/** One of {@link CREDENTIAL_ROLES}. */
export type CredentialRole = (typeof CREDENTIAL_ROLES)[number];

/** What a computer may do beyond its own tasks. */
export interface CredentialGrants {
  /** Task kinds it may create (absent: any kind the server allows clients to create). */
  kinds?: string[];
  /** It may read, subscribe to and follow tasks of other computers (never answer or cancel them). */
  observeOthers?: boolean;
}

/** One stored credential (the key itself is never stored). Times are epoch ms. */
export interface CredentialRecord {
  id: string;
  role: CredentialRole;
  clientId?: string;
  name?: string;
  /** base64url SHA-256 of the key. */
  keyHash: string;
  grants: CredentialGrants;
  createdAt: number;
  expiresAt?: number;
  revokedAt?: number;
}

/** One enrollment code (stored as its hash). */
export interface EnrollmentRecord {
  codeHash: string;
  clientId?: string;
  name?: string;
  grants: CredentialGrants;
  createdAt: number;
  expiresAt: number;
  usedAt?: number;
  credentialId?: string;
}

/** Outcome of {@link SecurityTables.redeemEnrollment}; a refusal changes nothing. */
export type RedeemResult =
  | { ok: true; credential: CredentialRecord; revoked: CredentialRecord[] }
  | { ok: false; code: 'unknown_code' | 'code_used' | 'code_expired' | 'client_taken'; message: string };

/** A computer's request to pair (approved or denied by an operator), stored with the hash of its secret. */
export interface PairingRecord {
  id: string;
  secretHash: string;
  clientId: string;
  name?: string;
  source: string;
  /** Short code shown on the computer and in the pending list. */
  match: string;
  createdAt: number;
  /** Until then it can be decided (pending) or collected (approved). */
  expiresAt: number;
  decision?: 'approved' | 'denied';
  decidedAt?: number;
  decidedBy?: string;
  grants: CredentialGrants;
  collectedAt?: number;
  credentialId?: string;
}

/** Outcome of {@link SecurityTables.collectPairing}; a refusal changes nothing. */
export type CollectResult =
  | { ok: true; credential: CredentialRecord }
  | {
      ok: false;
      code: 'unknown_request' | 'pending' | 'denied' | 'expired' | 'collected' | 'client_taken';
      message: string;
    };

/** Decide a pending pairing request (see {@link SecurityTables.decidePairing}). */
export interface PairingDecision {
  approved: boolean;
  grants: CredentialGrants;
  by: string;
  at: number;
  /** An approved request may be collected until then. */
  expiresAt: number;
}

/** One audit row. */
export interface AuditRecord {
  id: number;
  at: number;
  actor: string;
  role: string;
  source: string;
  action: string;
  target?: string;
  outcome: 'ok' | 'refused';
  detail?: unknown;
}

/** Input of {@link SecurityTables.appendAudit}. */
export type AuditInput = Omit<AuditRecord, 'id'>;

/** Filter of {@link SecurityTables.listAudit}: newest first. */
export interface AuditQuery {
  /** Rows with an id below this (paging). */
  beforeId?: number;
  actor?: string;
  action?: string;
  /** 1..1000, default 100. */
  limit?: number;
}

/** How the store runs a read or a write (its queue). @internal */
export interface TableAccess {
  orm: BetterSQLite3Database<typeof schema>;
  write<T>(run: () => T): Promise<T>;
  read<T>(run: () => T): Promise<T>;
}

/** Credentials, enrollment codes and the audit log of one SQLite file. */
export class SecurityTables {
  /** @internal Use {@link SqliteStore.security}. */
  constructor(private readonly a: TableAccess) {}

  /** Every credential, revoked ones included, oldest first. */
  listCredentials(): Promise<CredentialRecord[]> {
    return this.a.read(() =>
      this.a.orm
        .select()
        .from(schema.credentials)
        .orderBy(schema.credentials.createdAt)
        .all()
        .map(toCredential),
    );
  }

  /** Store a new credential. `invalid_input` for a duplicate id or key hash. */
  insertCredential(c: CredentialRecord): Promise<void> {
    return this.a.write(() => {
      if (c.role === 'computer' && !c.clientId) {
        throw new StoreError('invalid_input', 'a computer credential needs a client id');
      }
      this.a.orm.insert(schema.credentials).values(fromCredential(c)).run();
    });
  }

  /**
   * Revoke the live credentials of one id or of one client (`revokedAt = at`); returns those revoked (none: the id is
   * unknown or already revoked).
   */
  revokeCredentials(target: { id: string } | { clientId: string }, at: number): Promise<CredentialRecord[]> {
    return this.a.write(() => {
      const where =
        'id' in target
          ? and(eq(schema.credentials.id, target.id), isNull(schema.credentials.revokedAt))
          : and(eq(schema.credentials.clientId, target.clientId), isNull(schema.credentials.revokedAt));
      const rows = this.a.orm.select().from(schema.credentials).where(where).all();
      if (rows.length === 0) return [];
      this.a.orm.update(schema.credentials).set({ revokedAt: at }).where(where).run();
      return rows.map((r) => toCredential({ ...r, revokedAt: at }));
    });
  }

  /**
   * Rotation: store `next` and let the other live keys of its client work until `oldUntil` (no downtime while the
   * computer switches keys). Returns the credentials that now expire.
   */
  rotate(next: CredentialRecord, oldUntil: number): Promise<CredentialRecord[]> {
    return this.a.write(() => {
      if (!next.clientId) throw new StoreError('invalid_input', 'rotation needs a client id');
      const where = and(eq(schema.credentials.clientId, next.clientId), isNull(schema.credentials.revokedAt));
      const old = this.a.orm.select().from(schema.credentials).where(where).all();
      for (const o of old) {
        if (o.expiresAt !== null && o.expiresAt <= oldUntil) continue;
        this.a.orm
          .update(schema.credentials)
          .set({ expiresAt: oldUntil })
          .where(eq(schema.credentials.id, o.id))
          .run();
      }
      this.a.orm.insert(schema.credentials).values(fromCredential(next)).run();
      return old.map((o) => toCredential({ ...o, expiresAt: Math.min(o.expiresAt ?? oldUntil, oldUntil) }));
    });
  }

  /** Store a new enrollment code. */
  insertEnrollment(e: EnrollmentRecord): Promise<void> {
    return this.a.write(() => {
      this.a.orm
        .insert(schema.enrollmentCodes)
        .values({
          codeHash: e.codeHash,
          clientId: e.clientId ?? null,
          name: e.name ?? null,
          grants: JSON.stringify(e.grants),
          createdAt: e.createdAt,
          expiresAt: e.expiresAt,
          usedAt: null,
          credentialId: null,
        })
        .run();
    });
  }

  /**
   * Redeem an enrollment code for `credential` in one transaction: the code must exist, be unused and unexpired; the
   * client id is the code's (its earlier keys are revoked: the operator named it) or the computer's own, which must
   * have no live key. A refusal writes nothing.
   */
  redeemEnrollment(
    codeHash: string,
    now: number,
    requestedClientId: string,
    credential: (clientId: string, grants: CredentialGrants, name: string | undefined) => CredentialRecord,
  ): Promise<RedeemResult> {
    return this.a.write((): RedeemResult => {
      const code = this.a.orm
        .select()
        .from(schema.enrollmentCodes)
        .where(eq(schema.enrollmentCodes.codeHash, codeHash))
        .get();
      if (!code) return { ok: false, code: 'unknown_code', message: 'no such enrollment code' };
      if (code.usedAt !== null)
        return { ok: false, code: 'code_used', message: 'this enrollment code was already used' };
      if (code.expiresAt <= now)
        return { ok: false, code: 'code_expired', message: 'this enrollment code has expired' };
      const clientId = code.clientId ?? requestedClientId;
      const live = and(eq(schema.credentials.clientId, clientId), isNull(schema.credentials.revokedAt));
      const existing = this.a.orm.select().from(schema.credentials).where(live).all();
      if (code.clientId === null && existing.some((c) => c.expiresAt === null || c.expiresAt > now)) {
        return {
          ok: false,
          code: 'client_taken',
          message: `client "${clientId}" already has a key; ask the operator for a code naming it (ccagent clients enroll --name ${clientId})`,
        };
      }
      const grants = parseGrants(code.grants);
      const cred = credential(clientId, grants, code.name ?? undefined);
      if (existing.length > 0)
        this.a.orm.update(schema.credentials).set({ revokedAt: now }).where(live).run();
      this.a.orm.insert(schema.credentials).values(fromCredential(cred)).run();
      this.a.orm
        .update(schema.enrollmentCodes)
        .set({ usedAt: now, credentialId: cred.id })
        .where(eq(schema.enrollmentCodes.codeHash, codeHash))
        .run();
      return {
        ok: true,
        credential: cred,
        revoked: existing.map((r) => toCredential({ ...r, revokedAt: now })),
      };
    });
  }

  /** Store a new pairing request. */
  insertPairing(p: PairingRecord): Promise<void> {
    return this.a.write(() => {
      this.a.orm.insert(schema.pairingRequests).values(fromPairing(p)).run();
    });
  }

  /** Pairing requests, newest first (at most 200). */
  listPairings(): Promise<PairingRecord[]> {
    return this.a.read(() =>
      this.a.orm
        .select()
        .from(schema.pairingRequests)
        .orderBy(desc(schema.pairingRequests.createdAt))
        .limit(200)
        .all()
        .map(toPairing),
    );
  }

  /**
   * Approve or deny a request that is still pending and not expired; returns it as decided, or undefined (unknown,
   * already decided or expired: nothing changes).
   */
  decidePairing(id: string, d: PairingDecision): Promise<PairingRecord | undefined> {
    return this.a.write(() => {
      const row = this.a.orm
        .select()
        .from(schema.pairingRequests)
        .where(eq(schema.pairingRequests.id, id))
        .get();
      if (!row || row.decision !== null || row.expiresAt <= d.at) return undefined;
      const set = {
        decision: d.approved ? 'approved' : 'denied',
        decidedAt: d.at,
        decidedBy: d.by,
        grants: JSON.stringify(d.grants),
        expiresAt: d.approved ? d.expiresAt : row.expiresAt,
      };
      this.a.orm.update(schema.pairingRequests).set(set).where(eq(schema.pairingRequests.id, id)).run();
      return toPairing({ ...row, ...set });
    });
  }

  /**
   * The computer collects its key: the request (found by the hash of its secret) must be approved, uncollected and
   * unexpired, and its client id must have no live key; then `credential` is stored and the request marked
   * collected, in one transaction. A refusal writes nothing.
   */
  collectPairing(
    secretHash: string,
    now: number,
    credential: (clientId: string, grants: CredentialGrants, name: string | undefined) => CredentialRecord,
  ): Promise<CollectResult> {
    return this.a.write((): CollectResult => {
      const row = this.a.orm
        .select()
        .from(schema.pairingRequests)
        .where(eq(schema.pairingRequests.secretHash, secretHash))
        .get();
      const p = row ? toPairing(row) : undefined;
      const refused = pairingRefusal(p, now);
      if (refused) return refused;
      const req = p as PairingRecord;
      const live = and(eq(schema.credentials.clientId, req.clientId), isNull(schema.credentials.revokedAt));
      const existing = this.a.orm.select().from(schema.credentials).where(live).all();
      if (existing.some((c) => c.expiresAt === null || c.expiresAt > now)) return clientTaken(req.clientId);
      const cred = credential(req.clientId, req.grants, req.name);
      this.a.orm.insert(schema.credentials).values(fromCredential(cred)).run();
      this.a.orm
        .update(schema.pairingRequests)
        .set({ collectedAt: now, credentialId: cred.id })
        .where(eq(schema.pairingRequests.id, req.id))
        .run();
      return { ok: true, credential: cred };
    });
  }

  /** Append one audit row (durable when resolved); returns its id. */
  appendAudit(r: AuditInput): Promise<number> {
    return this.a.write(() => {
      const row = this.a.orm
        .insert(schema.auditLog)
        .values({
          at: r.at,
          actor: r.actor,
          role: r.role,
          source: r.source,
          action: r.action,
          target: r.target ?? null,
          outcome: r.outcome,
          detail: r.detail === undefined ? null : JSON.stringify(r.detail),
        })
        .returning({ id: schema.auditLog.id })
        .get();
      return row.id;
    });
  }

  /** Audit rows, newest first. */
  listAudit(q: AuditQuery = {}): Promise<AuditRecord[]> {
    return this.a.read(() => {
      const limit = Math.min(Math.max(q.limit ?? 100, 1), 1000);
      const conds: SQL[] = [];
      if (q.beforeId !== undefined) conds.push(lt(schema.auditLog.id, q.beforeId));
      if (q.actor !== undefined) conds.push(eq(schema.auditLog.actor, q.actor));
      if (q.action !== undefined) conds.push(eq(schema.auditLog.action, q.action));
      return this.a.orm
        .select()
        .from(schema.auditLog)
        .where(conds.length > 0 ? and(...conds) : undefined)
        .orderBy(desc(schema.auditLog.id))
        .limit(limit)
        .all()
        .map((r) => {
          const out: AuditRecord = {
            id: r.id,
            at: r.at,
            actor: r.actor,
            role: r.role,
            source: r.source,
            action: r.action,
            outcome: r.outcome === 'refused' ? 'refused' : 'ok',
          };
          if (r.target !== null) out.target = r.target;
          if (r.detail !== null) out.detail = JSON.parse(r.detail) as unknown;
          return out;
        });
    });
  }
}

/** Why a pairing request cannot be collected now (shared by every store), or undefined when it can. */
export function pairingRefusal(p: PairingRecord | undefined, now: number): CollectResult | undefined {
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

/** The refusal of a pairing for a client id that already has a live key. */
export function clientTaken(clientId: string): CollectResult {
  return {
    ok: false,
    code: 'client_taken',
    message: `client "${clientId}" already has a key; ask the operator for a code naming it (ccagent clients enroll --name ${clientId})`,
  };
}

function toPairing(r: typeof schema.pairingRequests.$inferSelect): PairingRecord {
  const out: PairingRecord = {
    id: r.id,
    secretHash: r.secretHash,
    clientId: r.clientId,
    source: r.source,
    match: r.match,
    createdAt: r.createdAt,
    expiresAt: r.expiresAt,
    grants: parseGrants(r.grants),
  };
  if (r.name !== null) out.name = r.name;
  if (r.decision === 'approved' || r.decision === 'denied') out.decision = r.decision;
  if (r.decidedAt !== null) out.decidedAt = r.decidedAt;
  if (r.decidedBy !== null) out.decidedBy = r.decidedBy;
  if (r.collectedAt !== null) out.collectedAt = r.collectedAt;
  if (r.credentialId !== null) out.credentialId = r.credentialId;
  return out;
}

function fromPairing(p: PairingRecord): typeof schema.pairingRequests.$inferInsert {
  return {
    id: p.id,
    secretHash: p.secretHash,
    clientId: p.clientId,
    name: p.name ?? null,
    source: p.source,
    match: p.match,
    createdAt: p.createdAt,
    expiresAt: p.expiresAt,
    decision: p.decision ?? null,
    decidedAt: p.decidedAt ?? null,
    decidedBy: p.decidedBy ?? null,
    grants: JSON.stringify(p.grants),
    collectedAt: p.collectedAt ?? null,
    credentialId: p.credentialId ?? null,
  };
}

function parseGrants(text: string | null): CredentialGrants {
  if (text === null) return {};
  const v = JSON.parse(text) as CredentialGrants;
  return v;
}

function toCredential(r: typeof schema.credentials.$inferSelect): CredentialRecord {
  const out: CredentialRecord = {
    id: r.id,
    role: r.role as CredentialRole,
    keyHash: r.keyHash,
    grants: parseGrants(r.grants),
    createdAt: r.createdAt,
  };
  if (r.clientId !== null) out.clientId = r.clientId;
  if (r.name !== null) out.name = r.name;
  if (r.expiresAt !== null) out.expiresAt = r.expiresAt;
  if (r.revokedAt !== null) out.revokedAt = r.revokedAt;
  return out;
}

function fromCredential(c: CredentialRecord): typeof schema.credentials.$inferInsert {
  return {
    id: c.id,
    role: c.role,
    clientId: c.clientId ?? null,
    name: c.name ?? null,
    keyHash: c.keyHash,
    grants: JSON.stringify(c.grants),
    createdAt: c.createdAt,
    expiresAt: c.expiresAt ?? null,
    revokedAt: c.revokedAt ?? null,
  };
}
