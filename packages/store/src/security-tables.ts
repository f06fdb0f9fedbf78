/**
 * The security tables of schema version 6: credentials (hashes of keys only), enrollment codes and the audit log;
 * pairing requests since version 7 — `@ccagent/security`'s `CredentialStore` port on SQLite. The rules (may a code be
 * redeemed, a request decided or collected, is an id taken) are `@ccagent/security`'s; this file reads rows and
 * persists their outcome. Reached through {@link SqliteStore.security}; writes go through the store's write queue
 * (durable when resolved).
 */
import {
  auditLimit,
  clientTaken,
  credentialProblem,
  decidedPairing,
  hasLiveKey,
  mayDecide,
  pairingRefusal,
  redeemClientId,
  redeemRefusal,
  redeemTakenRefusal,
  rotatedExpiry,
  rotationProblem,
  type AuditInput,
  type AuditQuery,
  type AuditRecord,
  type CollectResult,
  type CredentialFactory,
  type CredentialGrants,
  type CredentialRecord,
  type CredentialRole,
  type CredentialStore,
  type EnrollmentRecord,
  type PairingDecision,
  type PairingRecord,
  type RedeemResult,
} from '@ccagent/security';
import { and, desc, eq, isNull, lt, type SQL } from 'drizzle-orm';
import type { BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import * as schema from './schema.js';
import { StoreError } from '@ccagent/store-core';

/** How the store runs a read or a write (its queue). @internal */
export interface TableAccess {
  orm: BetterSQLite3Database<typeof schema>;
  write<T>(run: () => T): Promise<T>;
  read<T>(run: () => T): Promise<T>;
}

/** Credentials, enrollment codes and the audit log of one SQLite file. */
export class SecurityTables implements CredentialStore {
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

  /** Store a new credential. `invalid_input` for one the rules refuse (`credentialProblem`). */
  insertCredential(c: CredentialRecord): Promise<void> {
    return this.a.write(() => {
      const problem = credentialProblem(c);
      if (problem) throw new StoreError('invalid_input', problem);
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
      const problem = rotationProblem(next);
      if (problem) throw new StoreError('invalid_input', problem);
      const where = and(
        eq(schema.credentials.clientId, next.clientId as string),
        isNull(schema.credentials.revokedAt),
      );
      const old = this.a.orm.select().from(schema.credentials).where(where).all().map(toCredential);
      const rotated = old.map((o) => ({ ...o, expiresAt: rotatedExpiry(o, oldUntil) }));
      for (const o of rotated) {
        this.a.orm
          .update(schema.credentials)
          .set({ expiresAt: o.expiresAt })
          .where(eq(schema.credentials.id, o.id))
          .run();
      }
      this.a.orm.insert(schema.credentials).values(fromCredential(next)).run();
      return rotated;
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

  /** Redeem an enrollment code in one transaction (see `CredentialStore.redeemEnrollment`). */
  redeemEnrollment(
    codeHash: string,
    now: number,
    requestedClientId: string,
    credential: CredentialFactory,
  ): Promise<RedeemResult> {
    return this.a.write((): RedeemResult => {
      const row = this.a.orm
        .select()
        .from(schema.enrollmentCodes)
        .where(eq(schema.enrollmentCodes.codeHash, codeHash))
        .get();
      const code = row ? toEnrollment(row) : undefined;
      const refused = redeemRefusal(code, now);
      if (refused) return refused;
      const named = code as EnrollmentRecord;
      const clientId = redeemClientId(named, requestedClientId);
      const live = and(eq(schema.credentials.clientId, clientId), isNull(schema.credentials.revokedAt));
      const existing = this.a.orm.select().from(schema.credentials).where(live).all().map(toCredential);
      const taken = redeemTakenRefusal(named, clientId, existing, now);
      if (taken) return taken;
      const cred = credential(clientId, named.grants, named.name);
      if (existing.length > 0)
        this.a.orm.update(schema.credentials).set({ revokedAt: now }).where(live).run();
      this.a.orm.insert(schema.credentials).values(fromCredential(cred)).run();
      this.a.orm
        .update(schema.enrollmentCodes)
        .set({ usedAt: now, credentialId: cred.id })
        .where(eq(schema.enrollmentCodes.codeHash, codeHash))
        .run();
      return { ok: true, credential: cred, revoked: existing.map((c) => ({ ...c, revokedAt: now })) };
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

  /** Approve or deny a request still pending and unexpired (`mayDecide`); undefined otherwise (nothing changes). */
  decidePairing(id: string, d: PairingDecision): Promise<PairingRecord | undefined> {
    return this.a.write(() => {
      const row = this.a.orm
        .select()
        .from(schema.pairingRequests)
        .where(eq(schema.pairingRequests.id, id))
        .get();
      const p = row ? toPairing(row) : undefined;
      if (!mayDecide(p, d.at)) return undefined;
      const decided = decidedPairing(p, d);
      const { decision, decidedAt, decidedBy, grants, expiresAt } = fromPairing(decided);
      this.a.orm
        .update(schema.pairingRequests)
        .set({ decision, decidedAt, decidedBy, grants, expiresAt })
        .where(eq(schema.pairingRequests.id, id))
        .run();
      return decided;
    });
  }

  /** The computer collects its key, in one transaction (see `CredentialStore.collectPairing`). */
  collectPairing(secretHash: string, now: number, credential: CredentialFactory): Promise<CollectResult> {
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
      const existing = this.a.orm.select().from(schema.credentials).where(live).all().map(toCredential);
      if (hasLiveKey(existing, req.clientId, now)) return clientTaken(req.clientId);
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
      const limit = auditLimit(q);
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

function toEnrollment(r: typeof schema.enrollmentCodes.$inferSelect): EnrollmentRecord {
  const out: EnrollmentRecord = {
    codeHash: r.codeHash,
    grants: parseGrants(r.grants),
    createdAt: r.createdAt,
    expiresAt: r.expiresAt,
  };
  if (r.clientId !== null) out.clientId = r.clientId;
  if (r.name !== null) out.name = r.name;
  if (r.usedAt !== null) out.usedAt = r.usedAt;
  if (r.credentialId !== null) out.credentialId = r.credentialId;
  return out;
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
