/**
 * The bodies of the security routes (pairing, computer keys, the audit log): zod schemas like the rest of the HTTP
 * API's (http-schemas.ts). Request bodies and queries are strict (an unknown field is a 400); response records are
 * open (a newer server may add fields).
 */
import { z } from 'zod';
import { ClientIdSchema } from '../messages.js';

const time = z.number().describe('epoch ms');

/** A key (never its secret: the server keeps only a hash). */
export const HttpCredentialSchema = z.object({
  id: z.string(),
  /** `operator`: everything; `computer`: its own tasks and calls; `viewer`: read only. */
  role: z.enum(['operator', 'computer', 'viewer']),
  /** The computer this key belongs to (computer keys). */
  client_id: z.string().optional(),
  name: z.string().optional(),
  grants: z.object({
    /** Task kinds the computer may create. */
    kinds: z.array(z.string()).optional(),
    /** The computer may read other computers' tasks. */
    observe_others: z.boolean().optional(),
  }),
  created_at: time,
  /** After a rotation: the old key works until then. */
  expires_at: time.optional(),
  revoked_at: time.optional(),
});

/** One entry of the audit log: who did what, from where, when. */
export const HttpAuditEntrySchema = z.object({
  id: z.number().int(),
  at: time,
  /** Credential id (or `token` for the shared operator token). */
  actor: z.string(),
  role: z.string(),
  /** Where the request came from (`http 127.0.0.1`, `ws 127.0.0.1`). */
  source: z.string(),
  /** `task.create`, `task.cancel`, `task.answer`, `client.enroll`, `client.pair`, `client.revoke`, … */
  action: z.string(),
  target: z.string().optional(),
  outcome: z.string(),
  detail: z.unknown().optional(),
});

/** Body of `POST /api/pair`: a computer trades an enrollment code for its key. */
export const PairBodySchema = z.strictObject({
  code: z.string().min(1).max(64),
  client_id: ClientIdSchema,
});

/** Body of `POST /api/credentials/enroll`: an enrollment code for one computer. */
export const EnrollBodySchema = z.strictObject({
  client_id: ClientIdSchema.optional(),
  name: z.string().min(1).max(200).optional(),
  kinds: z.array(z.string().min(1)).optional(),
  observe_others: z.boolean().optional(),
  /** How long the code stays valid, seconds (10 s to 7 days). */
  ttl_s: z
    .number()
    .int()
    .min(10)
    .max(7 * 24 * 3600)
    .optional(),
});

/** Body of `POST /api/credentials/revoke`: one key by id, or every live key of a computer. */
export const RevokeBodySchema = z.union([
  z.strictObject({ id: z.string().min(1) }),
  z.strictObject({ client_id: z.string().min(1) }),
]);

/** Body of `POST /api/credentials/rotate`. */
export const RotateBodySchema = z.strictObject({ client_id: z.string().min(1) });

/** Body of `POST /api/credentials/keys`: a key for a person (an operator or a read-only viewer). */
export const CreateKeyBodySchema = z.strictObject({
  role: z.enum(['viewer', 'operator']),
  name: z.string().min(1).max(200).optional(),
});

/** Query of `GET /api/audit` (newest first). */
export const AuditQuerySchema = z.strictObject({
  limit: z.coerce.number().int().min(1).max(1000).optional(),
  /** Entries with an id below this one (the next page). */
  before: z.coerce.number().int().min(1).optional(),
  actor: z.string().min(1).optional(),
  action: z.string().min(1).optional(),
});

/** `POST /api/pair`: the computer's key, shown once. */
export const PairResponseSchema = z.object({
  client_id: z.string(),
  key: z.string(),
  credential_id: z.string(),
});

/** `POST /api/credentials/enroll`: the code to give the installer. */
export const EnrollResponseSchema = z.object({
  code: z.string(),
  expires_at: time,
  client_id: z.string().optional(),
});

/** `GET /api/credentials`. */
export const CredentialsResponseSchema = z.object({ credentials: z.array(HttpCredentialSchema) });

/** `POST /api/credentials/revoke`. */
export const RevokeResponseSchema = z.object({ revoked: z.array(HttpCredentialSchema) });

/** `POST /api/credentials/rotate`: the new key (shown once); the old one works until `old_valid_until`. */
export const RotateResponseSchema = z.object({
  key: z.string(),
  credential: HttpCredentialSchema,
  old_valid_until: time,
});

/** `POST /api/credentials/keys`: the new key (shown once). */
export const CreateKeyResponseSchema = z.object({ key: z.string(), credential: HttpCredentialSchema });

/** `GET /api/audit`. */
export const AuditResponseSchema = z.object({ entries: z.array(HttpAuditEntrySchema) });

export type HttpCredential = z.infer<typeof HttpCredentialSchema>;
export type HttpAuditEntry = z.infer<typeof HttpAuditEntrySchema>;
export type PairBody = z.infer<typeof PairBodySchema>;
export type EnrollBody = z.infer<typeof EnrollBodySchema>;
export type RevokeBody = z.infer<typeof RevokeBodySchema>;
export type RotateBody = z.infer<typeof RotateBodySchema>;
export type CreateKeyBody = z.infer<typeof CreateKeyBodySchema>;
export type AuditQuery = z.infer<typeof AuditQuerySchema>;
export type PairResponse = z.infer<typeof PairResponseSchema>;
export type EnrollResponse = z.infer<typeof EnrollResponseSchema>;
export type CredentialsResponse = z.infer<typeof CredentialsResponseSchema>;
export type RevokeResponse = z.infer<typeof RevokeResponseSchema>;
export type RotateResponse = z.infer<typeof RotateResponseSchema>;
export type CreateKeyResponse = z.infer<typeof CreateKeyResponseSchema>;
export type AuditResponse = z.infer<typeof AuditResponseSchema>;
