/**
 * The credential domain's records and its storage port: credentials (hashes of keys only), enrollment codes, pairing
 * requests and the audit log, and the {@link CredentialStore} every store implements (SQLite, PostgreSQL, in memory).
 * Times are epoch milliseconds.
 */

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

/** Why an enrollment code cannot be redeemed (see `redeemRefusal`). */
export interface RedeemRefusal {
  ok: false;
  code: 'unknown_code' | 'code_used' | 'code_expired' | 'client_taken';
  message: string;
}

/** Outcome of {@link CredentialStore.redeemEnrollment}; a refusal changes nothing. */
export type RedeemResult =
  { ok: true; credential: CredentialRecord; revoked: CredentialRecord[] } | RedeemRefusal;

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

/** Why a pairing request's key cannot be collected (see `pairingRefusal`, `clientTaken`). */
export interface CollectRefusal {
  ok: false;
  code: 'unknown_request' | 'pending' | 'denied' | 'expired' | 'collected' | 'client_taken';
  message: string;
}

/** Outcome of {@link CredentialStore.collectPairing}; a refusal changes nothing. */
export type CollectResult = { ok: true; credential: CredentialRecord } | CollectRefusal;

/** Decide a pending pairing request (see {@link CredentialStore.decidePairing}). */
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

/** Input of {@link CredentialStore.appendAudit}. */
export type AuditInput = Omit<AuditRecord, 'id'>;

/** Filter of {@link CredentialStore.listAudit}: newest first. */
export interface AuditQuery {
  /** Rows with an id below this (paging). */
  beforeId?: number;
  actor?: string;
  action?: string;
  /** 1..1000, default 100. */
  limit?: number;
}

/**
 * Makes the credential a redemption or a collection stores, from the client id, grants and name the store decided
 * (the key is the caller's: only its hash goes into the record).
 */
export type CredentialFactory = (
  clientId: string,
  grants: CredentialGrants,
  name: string | undefined,
) => CredentialRecord;

/**
 * Where credentials, enrollment codes, pairing requests and the audit log live: the port the `SecurityService` uses,
 * implemented by `@ccagent/store` (SQLite), `@ccagent/store-postgres` and {@link InMemoryCredentialStore}, all passing
 * `runCredentialStoreContract` (`@ccagent/security/testing`). Every write is durable when its promise resolves; the
 * operations that judge (redeem, decide, collect, insert, rotate) apply the rules of credential-rules.ts inside one
 * transaction and only persist their outcome, so a refusal writes nothing.
 */
export interface CredentialStore {
  /** Every credential, revoked ones included, oldest first. */
  listCredentials(): Promise<CredentialRecord[]>;
  /** Store a new credential; refused (`credentialProblem`) for a computer credential without a client id. */
  insertCredential(c: CredentialRecord): Promise<void>;
  /** Revoke the live credentials of one id or of one client (`revokedAt = at`); returns those revoked. */
  revokeCredentials(target: { id: string } | { clientId: string }, at: number): Promise<CredentialRecord[]>;
  /**
   * Rotation: store `next` and let the client's other unrevoked keys work until `oldUntil` (no downtime while the
   * computer switches keys). Returns those keys with their new expiry. Refused (`rotationProblem`) without a client id.
   */
  rotate(next: CredentialRecord, oldUntil: number): Promise<CredentialRecord[]>;
  /** Store a new enrollment code. */
  insertEnrollment(e: EnrollmentRecord): Promise<void>;
  /**
   * Redeem an enrollment code for `credential` in one transaction, by `redeemRefusal` / `redeemTakenRefusal`: the
   * code must exist, be unused and unexpired; the client id is the code's (its earlier keys are revoked: the operator
   * named it) or the computer's own, which must have no live key. A refusal writes nothing.
   */
  redeemEnrollment(
    codeHash: string,
    now: number,
    requestedClientId: string,
    credential: CredentialFactory,
  ): Promise<RedeemResult>;
  /** Store a new pairing request. */
  insertPairing(p: PairingRecord): Promise<void>;
  /** Pairing requests, newest first (at most 200). */
  listPairings(): Promise<PairingRecord[]>;
  /**
   * Approve or deny a request that is still pending and not expired (`mayDecide`); returns it as decided, or
   * undefined (unknown, already decided or expired: nothing changes).
   */
  decidePairing(id: string, d: PairingDecision): Promise<PairingRecord | undefined>;
  /**
   * The computer collects its key: the request (found by the hash of its secret) must be collectable
   * (`pairingRefusal`) and its client id without a live key (`clientTaken`); then `credential` is stored and the
   * request marked collected, in one transaction. A refusal writes nothing.
   */
  collectPairing(secretHash: string, now: number, credential: CredentialFactory): Promise<CollectResult>;
  /** Append one audit row (durable when resolved); returns its id (ids grow). */
  appendAudit(r: AuditInput): Promise<number>;
  /** Audit rows, newest first (`auditLimit` rows at most). */
  listAudit(q?: AuditQuery): Promise<AuditRecord[]>;
}
