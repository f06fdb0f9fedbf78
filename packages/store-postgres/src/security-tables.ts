/**
 * The security tables in PostgreSQL (schema version 2): credentials (hashes of keys only), enrollment codes, pairing
 * requests and the audit log — `@ccagent/security`'s `CredentialStore` port, judged by its rules (this file reads rows
 * and persists the outcome) and held to its contract suite like the SQLite and in-memory stores, so keys,
 * codes, pending pairings and the audit log survive a restart and are shared by every orchestrator of the database
 * (the active one and its standbys). Writes go through the store's write queue (durable, fenced, when resolved); a
 * write may run twice (the queue re-runs a batch with savepoints after one write failed), so each is a pure function
 * of the database.
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
import { StoreError } from '@ccagent/store-core';
import type pg from 'pg';

/** How the tables reach the database: the store's reads and queued writes. @internal */
export interface PgSecurityAccess {
  read<T>(run: (db: pg.Pool) => Promise<T>): Promise<T>;
  write<T>(run: (c: pg.ClientBase) => Promise<T>): Promise<T>;
}

type Db = pg.ClientBase | pg.Pool;
type Row = Record<string, unknown>;

const CRED_COLS = `"id", "role", "client_id", "name", "key_hash", "grants", "created_at", "expires_at", "revoked_at"`;
const PAIR_COLS = `"id", "secret_hash", "client_id", "name", "source", "match", "created_at", "expires_at", "decision",
  "decided_at", "decided_by", "grants", "collected_at", "credential_id"`;

/** Credentials, enrollment codes, pairing requests and the audit log of one PostgreSQL database. */
export class PgSecurityTables implements CredentialStore {
  /** @internal Use `PostgresStore.security`. */
  constructor(private readonly a: PgSecurityAccess) {}

  /** Every credential, revoked ones included, oldest first. */
  listCredentials(): Promise<CredentialRecord[]> {
    return this.a.read(async (db) =>
      (await db.query<Row>(`SELECT ${CRED_COLS} FROM "credentials" ORDER BY "created_at", "id"`)).rows.map(
        toCredential,
      ),
    );
  }

  /** Store a new credential. `StoreError('invalid_input')` for one the rules refuse (`credentialProblem`). */
  insertCredential(c: CredentialRecord): Promise<void> {
    const problem = credentialProblem(c);
    if (problem) return Promise.reject(new StoreError('invalid_input', problem));
    return this.a.write(async (db) => {
      await insertCredential(db, c);
    });
  }

  /** Revoke the live credentials of one id or of one client; returns those revoked. */
  revokeCredentials(target: { id: string } | { clientId: string }, at: number): Promise<CredentialRecord[]> {
    return this.a.write(async (db) => {
      const where = 'id' in target ? `"id" = $2` : `"client_id" = $2`;
      const r = await db.query<Row>(
        `UPDATE "credentials" SET "revoked_at" = $1 WHERE ${where} AND "revoked_at" IS NULL RETURNING ${CRED_COLS}`,
        [at, 'id' in target ? target.id : target.clientId],
      );
      return r.rows.map(toCredential);
    });
  }

  /** Rotation: store `next`; the client's other live keys work until `oldUntil`. Returns those that now expire. */
  rotate(next: CredentialRecord, oldUntil: number): Promise<CredentialRecord[]> {
    const problem = rotationProblem(next);
    if (problem) return Promise.reject(new StoreError('invalid_input', problem));
    return this.a.write(async (db) => {
      const old = await db.query<Row>(
        `SELECT ${CRED_COLS} FROM "credentials" WHERE "client_id" = $1 AND "revoked_at" IS NULL`,
        [next.clientId ?? null],
      );
      await db.query(
        `UPDATE "credentials" SET "expires_at" = $2
         WHERE "client_id" = $1 AND "revoked_at" IS NULL AND ("expires_at" IS NULL OR "expires_at" > $2)`,
        [next.clientId ?? null, oldUntil],
      );
      await insertCredential(db, next);
      return old.rows.map((row) => {
        const c = toCredential(row);
        return { ...c, expiresAt: rotatedExpiry(c, oldUntil) };
      });
    });
  }

  /** Store a new enrollment code. */
  insertEnrollment(e: EnrollmentRecord): Promise<void> {
    return this.a.write(async (db) => {
      await db.query(
        `INSERT INTO "enrollment_codes" ("code_hash", "client_id", "name", "grants", "created_at", "expires_at")
         VALUES ($1, $2, $3, $4, $5, $6)`,
        [e.codeHash, e.clientId ?? null, e.name ?? null, JSON.stringify(e.grants), e.createdAt, e.expiresAt],
      );
    });
  }

  /** Redeem an enrollment code in one transaction (see `CredentialStore.redeemEnrollment`). */
  redeemEnrollment(
    codeHash: string,
    now: number,
    requestedClientId: string,
    credential: CredentialFactory,
  ): Promise<RedeemResult> {
    return this.a.write(async (db): Promise<RedeemResult> => {
      const row = (
        await db.query<Row>(
          `SELECT "code_hash", "client_id", "name", "grants", "created_at", "expires_at", "used_at", "credential_id"
           FROM "enrollment_codes" WHERE "code_hash" = $1 FOR UPDATE`,
          [codeHash],
        )
      ).rows[0];
      const code = row ? toEnrollment(row) : undefined;
      const refused = redeemRefusal(code, now);
      if (refused) return refused;
      const named = code as EnrollmentRecord;
      const clientId = redeemClientId(named, requestedClientId);
      const existing = (
        await db.query<Row>(
          `SELECT ${CRED_COLS} FROM "credentials" WHERE "client_id" = $1 AND "revoked_at" IS NULL FOR UPDATE`,
          [clientId],
        )
      ).rows.map(toCredential);
      const taken = redeemTakenRefusal(named, clientId, existing, now);
      if (taken) return taken;
      const cred = credential(clientId, named.grants, named.name);
      if (existing.length > 0) {
        await db.query(
          `UPDATE "credentials" SET "revoked_at" = $2 WHERE "client_id" = $1 AND "revoked_at" IS NULL`,
          [clientId, now],
        );
      }
      await insertCredential(db, cred);
      await db.query(
        `UPDATE "enrollment_codes" SET "used_at" = $2, "credential_id" = $3 WHERE "code_hash" = $1`,
        [codeHash, now, cred.id],
      );
      return { ok: true, credential: cred, revoked: existing.map((c) => ({ ...c, revokedAt: now })) };
    });
  }

  /** Store a new pairing request. */
  insertPairing(p: PairingRecord): Promise<void> {
    return this.a.write(async (db) => {
      await db.query(
        `INSERT INTO "pairing_requests" (${PAIR_COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`,
        [
          p.id,
          p.secretHash,
          p.clientId,
          p.name ?? null,
          p.source,
          p.match,
          p.createdAt,
          p.expiresAt,
          p.decision ?? null,
          p.decidedAt ?? null,
          p.decidedBy ?? null,
          JSON.stringify(p.grants),
          p.collectedAt ?? null,
          p.credentialId ?? null,
        ],
      );
    });
  }

  /** Pairing requests, newest first (at most 200). */
  listPairings(): Promise<PairingRecord[]> {
    return this.a.read(async (db) =>
      (
        await db.query<Row>(
          `SELECT ${PAIR_COLS} FROM "pairing_requests" ORDER BY "created_at" DESC, "id" LIMIT 200`,
        )
      ).rows.map(toPairing),
    );
  }

  /** Approve or deny a request still pending and unexpired (`mayDecide`); undefined otherwise (nothing changes). */
  decidePairing(id: string, d: PairingDecision): Promise<PairingRecord | undefined> {
    return this.a.write(async (db) => {
      const row = (
        await db.query<Row>(`SELECT ${PAIR_COLS} FROM "pairing_requests" WHERE "id" = $1 FOR UPDATE`, [id])
      ).rows[0];
      const p = row ? toPairing(row) : undefined;
      if (!mayDecide(p, d.at)) return undefined;
      const decided = decidedPairing(p, d);
      await db.query(
        `UPDATE "pairing_requests"
         SET "decision" = $2, "decided_at" = $3, "decided_by" = $4, "grants" = $5, "expires_at" = $6
         WHERE "id" = $1`,
        [
          id,
          decided.decision,
          decided.decidedAt,
          decided.decidedBy,
          JSON.stringify(decided.grants),
          decided.expiresAt,
        ],
      );
      return decided;
    });
  }

  /** The computer collects its key, in one transaction (see `CredentialStore.collectPairing`). */
  collectPairing(secretHash: string, now: number, credential: CredentialFactory): Promise<CollectResult> {
    return this.a.write(async (db): Promise<CollectResult> => {
      const row = (
        await db.query<Row>(
          `SELECT ${PAIR_COLS} FROM "pairing_requests" WHERE "secret_hash" = $1 FOR UPDATE`,
          [secretHash],
        )
      ).rows[0];
      const p = row ? toPairing(row) : undefined;
      const refused = pairingRefusal(p, now);
      if (refused) return refused;
      const req = p as PairingRecord;
      const unrevoked = (
        await db.query<Row>(
          `SELECT ${CRED_COLS} FROM "credentials" WHERE "client_id" = $1 AND "revoked_at" IS NULL FOR UPDATE`,
          [req.clientId],
        )
      ).rows.map(toCredential);
      if (hasLiveKey(unrevoked, req.clientId, now)) return clientTaken(req.clientId);
      const cred = credential(req.clientId, req.grants, req.name);
      await insertCredential(db, cred);
      await db.query(
        `UPDATE "pairing_requests" SET "collected_at" = $2, "credential_id" = $3 WHERE "id" = $1`,
        [req.id, now, cred.id],
      );
      return { ok: true, credential: cred };
    });
  }

  /** Append one audit row (durable when resolved); returns its id. */
  appendAudit(r: AuditInput): Promise<number> {
    return this.a.write(async (db) => {
      const res = await db.query<{ id: number }>(
        `INSERT INTO "audit_log" ("at", "actor", "role", "source", "action", "target", "outcome", "detail")
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING "id"`,
        [
          r.at,
          r.actor,
          r.role,
          r.source,
          r.action,
          r.target ?? null,
          r.outcome,
          r.detail === undefined ? null : JSON.stringify(r.detail),
        ],
      );
      return Number(res.rows[0]?.id);
    });
  }

  /** Audit rows, newest first. */
  listAudit(q: AuditQuery = {}): Promise<AuditRecord[]> {
    return this.a.read(async (db) => {
      const limit = auditLimit(q);
      const conds: string[] = [];
      const params: unknown[] = [];
      if (q.beforeId !== undefined) conds.push(`"id" < $${params.push(q.beforeId)}`);
      if (q.actor !== undefined) conds.push(`"actor" = $${params.push(q.actor)}`);
      if (q.action !== undefined) conds.push(`"action" = $${params.push(q.action)}`);
      const where = conds.length > 0 ? `WHERE ${conds.join(' AND ')}` : '';
      const r = await db.query<Row>(
        `SELECT "id", "at", "actor", "role", "source", "action", "target", "outcome", "detail" FROM "audit_log"
         ${where} ORDER BY "id" DESC LIMIT $${params.push(limit)}`,
        params,
      );
      return r.rows.map((row) => {
        const out: AuditRecord = {
          id: Number(row.id),
          at: Number(row.at),
          actor: row.actor as string,
          role: row.role as string,
          source: row.source as string,
          action: row.action as string,
          outcome: row.outcome === 'refused' ? 'refused' : 'ok',
        };
        if (row.target !== null) out.target = row.target as string;
        if (row.detail !== null) out.detail = JSON.parse(row.detail as string) as unknown;
        return out;
      });
    });
  }
}

async function insertCredential(db: Db, c: CredentialRecord): Promise<void> {
  await db.query(`INSERT INTO "credentials" (${CRED_COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, [
    c.id,
    c.role,
    c.clientId ?? null,
    c.name ?? null,
    c.keyHash,
    JSON.stringify(c.grants),
    c.createdAt,
    c.expiresAt ?? null,
    c.revokedAt ?? null,
  ]);
}

function parseGrants(text: unknown): CredentialGrants {
  return typeof text === 'string' ? (JSON.parse(text) as CredentialGrants) : {};
}

const num = (v: unknown): number | undefined => (v === null || v === undefined ? undefined : Number(v));

function toCredential(r: Row): CredentialRecord {
  const out: CredentialRecord = {
    id: r.id as string,
    role: r.role as CredentialRole,
    keyHash: r.key_hash as string,
    grants: parseGrants(r.grants),
    createdAt: Number(r.created_at),
  };
  if (r.client_id !== null) out.clientId = r.client_id as string;
  if (r.name !== null) out.name = r.name as string;
  const expires = num(r.expires_at);
  if (expires !== undefined) out.expiresAt = expires;
  const revoked = num(r.revoked_at);
  if (revoked !== undefined) out.revokedAt = revoked;
  return out;
}

function toEnrollment(r: Row): EnrollmentRecord {
  const out: EnrollmentRecord = {
    codeHash: r.code_hash as string,
    grants: parseGrants(r.grants),
    createdAt: Number(r.created_at),
    expiresAt: Number(r.expires_at),
  };
  if (r.client_id !== null) out.clientId = r.client_id as string;
  if (r.name !== null) out.name = r.name as string;
  const usedAt = num(r.used_at);
  if (usedAt !== undefined) out.usedAt = usedAt;
  if (r.credential_id !== null) out.credentialId = r.credential_id as string;
  return out;
}

function toPairing(r: Row): PairingRecord {
  const out: PairingRecord = {
    id: r.id as string,
    secretHash: r.secret_hash as string,
    clientId: r.client_id as string,
    source: r.source as string,
    match: r.match as string,
    createdAt: Number(r.created_at),
    expiresAt: Number(r.expires_at),
    grants: parseGrants(r.grants),
  };
  if (r.name !== null) out.name = r.name as string;
  if (r.decision === 'approved' || r.decision === 'denied') out.decision = r.decision;
  const decidedAt = num(r.decided_at);
  if (decidedAt !== undefined) out.decidedAt = decidedAt;
  if (r.decided_by !== null) out.decidedBy = r.decided_by as string;
  const collectedAt = num(r.collected_at);
  if (collectedAt !== undefined) out.collectedAt = collectedAt;
  if (r.credential_id !== null) out.credentialId = r.credential_id as string;
  return out;
}
