/**
 * {@link CredentialStore} in process memory, for an orchestrator embedded without a database (keys last until exit)
 * and for tests. It applies the same rules (credential-rules.ts) as the SQLite and PostgreSQL stores and passes the
 * same contract suite.
 */
import {
  auditLimit,
  auditMatches,
  credentialProblem,
  decidedPairing,
  hasLiveKey,
  clientTaken,
  mayDecide,
  pairingRefusal,
  redeemClientId,
  redeemRefusal,
  redeemTakenRefusal,
  rotatedExpiry,
  rotationProblem,
} from './credential-rules.js';
import type {
  AuditInput,
  AuditQuery,
  AuditRecord,
  CollectResult,
  CredentialFactory,
  CredentialRecord,
  CredentialStore,
  EnrollmentRecord,
  PairingDecision,
  PairingRecord,
  RedeemResult,
} from './credentials.js';
import { SecurityError } from './security-error.js';

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
    const i = this.pairings.findIndex((x) => x.id === id);
    const p = this.pairings[i];
    if (!mayDecide(p, d.at)) return Promise.resolve(undefined);
    const decided = decidedPairing(p, d);
    this.pairings[i] = decided;
    return Promise.resolve({ ...decided });
  }

  collectPairing(secretHash: string, now: number, credential: CredentialFactory): Promise<CollectResult> {
    const p = this.pairings.find((x) => x.secretHash === secretHash);
    const refused = pairingRefusal(p, now);
    if (refused) return Promise.resolve(refused);
    const req = p as PairingRecord;
    if (hasLiveKey(this.creds, req.clientId, now)) return Promise.resolve(clientTaken(req.clientId));
    const cred = credential(req.clientId, req.grants, req.name);
    this.creds.push({ ...cred });
    req.collectedAt = now;
    req.credentialId = cred.id;
    return Promise.resolve({ ok: true, credential: { ...cred } });
  }

  listCredentials(): Promise<CredentialRecord[]> {
    return Promise.resolve(this.creds.map((c) => ({ ...c })));
  }

  insertCredential(c: CredentialRecord): Promise<void> {
    const problem = credentialProblem(c);
    if (problem) return Promise.reject(new SecurityError('invalid_input', problem));
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
    const problem = rotationProblem(next);
    if (problem) return Promise.reject(new SecurityError('invalid_input', problem));
    const old = this.creds.filter((c) => c.clientId === next.clientId && c.revokedAt === undefined);
    for (const c of old) c.expiresAt = rotatedExpiry(c, oldUntil);
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
    credential: CredentialFactory,
  ): Promise<RedeemResult> {
    const code = this.codes.get(codeHash);
    const refused = redeemRefusal(code, now);
    if (refused) return Promise.resolve(refused);
    const named = code as EnrollmentRecord;
    const clientId = redeemClientId(named, requestedClientId);
    const unrevoked = this.creds.filter((c) => c.clientId === clientId && c.revokedAt === undefined);
    const taken = redeemTakenRefusal(named, clientId, unrevoked, now);
    if (taken) return Promise.resolve(taken);
    const cred = credential(clientId, named.grants, named.name);
    for (const c of unrevoked) c.revokedAt = now;
    this.creds.push({ ...cred });
    named.usedAt = now;
    named.credentialId = cred.id;
    return Promise.resolve({ ok: true, credential: { ...cred }, revoked: unrevoked.map((c) => ({ ...c })) });
  }

  appendAudit(r: AuditInput): Promise<number> {
    const id = this.audit.length + 1;
    this.audit.push({ ...r, id });
    return Promise.resolve(id);
  }

  listAudit(q: AuditQuery = {}): Promise<AuditRecord[]> {
    return Promise.resolve(
      this.audit
        .filter((r) => auditMatches(r, q))
        .reverse()
        .slice(0, auditLimit(q))
        .map((r) => ({ ...r })),
    );
  }
}
