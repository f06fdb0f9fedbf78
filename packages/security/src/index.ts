/**
 * `@ccagent/security`: who may call a ccagent orchestrator. The `SecurityService` (per-computer keys, enrollment
 * codes, pairing by approval, rotation and revocation, the failure limiter, the audit log), the `CredentialStore`
 * port it stores through, the rules every implementation of that port applies (credential-rules.ts) and an in-memory
 * implementation. `@ccagent/store` (SQLite) and `@ccagent/store-postgres` implement the port; the contract suite
 * they all pass is `@ccagent/security/testing`.
 */

/** Version of this package, kept equal to package.json's by a test. */
export const VERSION = '0.1.0';

export {
  CREDENTIAL_ROLES,
  type AuditInput,
  type AuditQuery,
  type AuditRecord,
  type CollectRefusal,
  type CollectResult,
  type CredentialFactory,
  type CredentialGrants,
  type CredentialRecord,
  type CredentialRole,
  type CredentialStore,
  type EnrollmentRecord,
  type PairingDecision,
  type PairingRecord,
  type RedeemRefusal,
  type RedeemResult,
} from './credentials.js';
export {
  auditLimit,
  auditMatches,
  clientTaken,
  credentialProblem,
  decidedPairing,
  hasLiveKey,
  isLive,
  mayDecide,
  pairingRefusal,
  redeemClientId,
  redeemRefusal,
  redeemTakenRefusal,
  rotatedExpiry,
  rotationProblem,
} from './credential-rules.js';
export { InMemoryCredentialStore } from './in-memory-credential-store.js';
export { SecurityError, type SecurityErrorCode } from './security-error.js';
export {
  SecurityService,
  type AuthFailure,
  type AuthResult,
  type CredentialView,
  type EnrollmentTicket,
  type PairingTicket,
  type PairingView,
  type Principal,
  type RevokedListener,
  type Role,
  type SecurityOptions,
} from './security-service.js';
export { FailureLimiter, sourceAddress, type FailureLimits } from './failure-limiter.js';
export {
  KEY_PREFIX,
  hashEnrollmentCode,
  hashSecret,
  newCredentialId,
  newEnrollmentCode,
  newKey,
  newPairingId,
  secretMatches,
} from './keys.js';
