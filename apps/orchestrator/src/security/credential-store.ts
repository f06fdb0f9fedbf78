/**
 * Where credentials, enrollment codes and the audit log live: the SQLite store's security tables, or process memory
 * when the orchestrator is embedded without a database (then keys last until exit).
 */
import {
  clientTaken,
  pairingRefusal,
  type CollectResult,
  type PairingDecision,
  type PairingRecord,
} from '@ccagent/store';
import type {
  AuditInput,
  AuditQuery,
  AuditRecord,
  CredentialGrants,
  CredentialRecord,
  EnrollmentRecord,
  RedeemResult,
  SecurityTables,
} from '@ccagent/store';

/** The storage the security service needs (what `SqliteStore.security` provides). */
export type CredentialStore = Pick<
  SecurityTables,
  | 'listCredentials'
  | 'insertCredential'
  | 'revokeCredentials'
  | 'rotate'
  | 'insertEnrollment'
  | 'redeemEnrollment'
  | 'appendAudit'
  | 'listAudit'
  | 'insertPairing'
  | 'listPairings'
  | 'decidePairing'
  | 'collectPairing'
>;

/** {@link CredentialStore} in memory (lost on exit). */
export class InMemoryCredentialStore implements CredentialStore {
  private readonly creds: CredentialRecord[] = [];
  private readonly codes = new Map<string, EnrollmentRecord>();
  private readonly audit: AuditRecord[] = [];
  private readonly pairings: PairingRecord[] = [];

  insertPairing(p: PairingRecord): Promise<void> {
    this.pairings.push({ ...p });
    return Promise.resolve();
  }

  listPairings(): Promise<PairingRecord[]> {
    return Promise.resolve(
      [...this.pairings]
        .sort((a, b) => b.createdAt - a.createdAt)
        .slice(0, 200)
        .map((p) => ({ ...p })),
    );
  }

  decidePairing(id: string, d: PairingDecision): Promise<PairingRecord | undefined> {
    const p = this.pairings.find((x) => x.id === id);
    if (!p || p.decision !== undefined || p.expiresAt <= d.at) return Promise.resolve(undefined);
    p.decision = d.approved ? 'approved' : 'denied';
    p.decidedAt = d.at;
    p.decidedBy = d.by;
    p.grants = d.grants;
    if (d.approved) p.expiresAt = d.expiresAt;
    return Promise.resolve({ ...p });
  }

  collectPairing(
    secretHash: string,
    now: number,
    credential: (clientId: string, grants: CredentialGrants, name: string | undefined) => CredentialRecord,
  ): Promise<CollectResult> {
    const p = this.pairings.find((x) => x.secretHash === secretHash);
    const refused = pairingRefusal(p, now);
    if (refused) return Promise.resolve(refused);
    const req = p as PairingRecord;
    const live = this.creds.filter(
      (c) =>
        c.clientId === req.clientId &&
        c.revokedAt === undefined &&
        (c.expiresAt === undefined || c.expiresAt > now),
    );
    if (live.length > 0) return Promise.resolve(clientTaken(req.clientId));
    const cred = credential(req.clientId, req.grants, req.name);
    this.creds.push({ ...cred });
    req.collectedAt = now;
    req.credentialId = cred.id;
    return Promise.resolve({ ok: true, credential: cred });
  }

  listCredentials(): Promise<CredentialRecord[]> {
    return Promise.resolve(this.creds.map((c) => ({ ...c })));
  }

  insertCredential(c: CredentialRecord): Promise<void> {
    this.creds.push({ ...c });
    return Promise.resolve();
  }

  revokeCredentials(target: { id: string } | { clientId: string }, at: number): Promise<CredentialRecord[]> {
    const hit = this.creds.filter(
      (c) =>
        c.revokedAt === undefined && ('id' in target ? c.id === target.id : c.clientId === target.clientId),
    );
    for (const c of hit) c.revokedAt = at;
    return Promise.resolve(hit.map((c) => ({ ...c })));
  }

  rotate(next: CredentialRecord, oldUntil: number): Promise<CredentialRecord[]> {
    const old = this.creds.filter((c) => c.clientId === next.clientId && c.revokedAt === undefined);
    for (const c of old) c.expiresAt = Math.min(c.expiresAt ?? oldUntil, oldUntil);
    this.creds.push({ ...next });
    return Promise.resolve(old.map((c) => ({ ...c })));
  }

  insertEnrollment(e: EnrollmentRecord): Promise<void> {
    this.codes.set(e.codeHash, { ...e });
    return Promise.resolve();
  }

  redeemEnrollment(
    codeHash: string,
    now: number,
    requestedClientId: string,
    credential: (clientId: string, grants: CredentialGrants, name: string | undefined) => CredentialRecord,
  ): Promise<RedeemResult> {
    const code = this.codes.get(codeHash);
    if (!code)
      return Promise.resolve({ ok: false, code: 'unknown_code', message: 'no such enrollment code' });
    if (code.usedAt !== undefined)
      return Promise.resolve({
        ok: false,
        code: 'code_used',
        message: 'this enrollment code was already used',
      });
    if (code.expiresAt <= now)
      return Promise.resolve({
        ok: false,
        code: 'code_expired',
        message: 'this enrollment code has expired',
      });
    const clientId = code.clientId ?? requestedClientId;
    const live = this.creds.filter((c) => c.clientId === clientId && c.revokedAt === undefined);
    if (code.clientId === undefined && live.some((c) => c.expiresAt === undefined || c.expiresAt > now)) {
      return Promise.resolve({
        ok: false,
        code: 'client_taken',
        message: `client "${clientId}" already has a key`,
      });
    }
    const cred = credential(clientId, code.grants, code.name);
    for (const c of live) c.revokedAt = now;
    this.creds.push({ ...cred });
    code.usedAt = now;
    code.credentialId = cred.id;
    return Promise.resolve({ ok: true, credential: cred, revoked: live.map((c) => ({ ...c })) });
  }

  appendAudit(r: AuditInput): Promise<number> {
    const id = this.audit.length + 1;
    this.audit.push({ ...r, id });
    return Promise.resolve(id);
  }

  listAudit(q: AuditQuery = {}): Promise<AuditRecord[]> {
    const limit = Math.min(Math.max(q.limit ?? 100, 1), 1000);
    return Promise.resolve(
      this.audit
        .filter(
          (r) =>
            (q.beforeId === undefined || r.id < q.beforeId) &&
            (q.actor === undefined || r.actor === q.actor) &&
            (q.action === undefined || r.action === q.action),
        )
        .reverse()
        .slice(0, limit),
    );
  }
}
