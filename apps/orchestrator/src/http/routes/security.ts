/**
 * Security routes: pairing (`POST /api/pair`, open: the enrollment code is the credential), computer and person keys,
 * and the audit log (operator only). Who may call them is declared on the route table and decided by the gate in
 * front of the handlers (security/http-access.ts); the request's `caller` is who the key routes audit under. The
 * bodies are @ccagent/protocol's schemas.
 */
import {
  PairCollectBodySchema,
  PairingApproveBodySchema,
  PairingDenyBodySchema,
  PairRequestBodySchema,
  type HttpPairing,
  type PairRequestResponse,
  type PairingsResponse,
  type PairCollectPending,
  type AuditQuerySchema,
  CreateKeyBodySchema,
  EnrollBodySchema,
  PairBodySchema,
  RevokeBodySchema,
  RotateBodySchema,
  type AuditResponse,
  type CreateKeyResponse,
  type CredentialsResponse,
  type EnrollResponse,
  type HttpAuditEntry,
  type HttpCredential,
  type PairResponse,
  type RevokeResponse,
  type RotateResponse,
} from '@ccagent/protocol';
import type { AuditRecord, CredentialView, PairingView, Principal } from '@ccagent/security';
import { requestSource } from '../../security/request-principal.js';
import { HttpError, parseWith, readJson, sendJson } from '../http-kit.js';
import type { HttpApiOptions, QueryOf, RouteRequest } from '../route.js';

/** `POST /api/pair`: a computer trades an enrollment code for its key. */
export async function pair(d: HttpApiOptions, { req, res }: RouteRequest): Promise<void> {
  const b = parseWith(PairBodySchema, await readJson(req), 'body');
  const r = await d.security.redeem(b.code, b.client_id, requestSource(req));
  if (!r.ok) {
    if (r.code === 'rate_limited') {
      throw new HttpError(429, r.code, r.message, undefined, {
        'retry-after': String(Math.ceil((r.retryAfterMs ?? 1000) / 1000)),
      });
    }
    throw new HttpError(r.code === 'client_taken' ? 409 : 403, r.code, r.message);
  }
  const body: PairResponse = {
    client_id: r.credential.clientId ?? b.client_id,
    key: r.key,
    credential_id: r.credential.id,
  };
  sendJson(res, 200, body, NO_STORE);
}

/** `POST /api/pair/request`: a computer without a code asks to pair; an operator decides. */
export async function pairRequest(d: HttpApiOptions, { req, res }: RouteRequest): Promise<void> {
  const b = parseWith(PairRequestBodySchema, await readJson(req), 'body');
  const r = await d.security.requestPairing(b.client_id, b.name, requestSource(req));
  if (!r.ok) {
    const status =
      r.code === 'rate_limited' || r.code === 'too_many_requests'
        ? 429
        : r.code === 'client_taken'
          ? 409
          : 403;
    throw new HttpError(
      status,
      r.code,
      r.message,
      undefined,
      r.code === 'rate_limited' ? { 'retry-after': String(Math.ceil((r.retryAfterMs ?? 1000) / 1000)) } : {},
    );
  }
  const body: PairRequestResponse = {
    request_id: r.ticket.id,
    secret: r.ticket.secret,
    match: r.ticket.match,
    expires_at: r.ticket.expiresAt,
    state: r.ticket.approved ? 'approved' : 'pending',
  };
  sendJson(res, 202, body, NO_STORE);
}

/** `POST /api/pair/collect`: the computer polls with its request's secret; its key once approved. */
export async function pairCollect(d: HttpApiOptions, { req, res }: RouteRequest): Promise<void> {
  const b = parseWith(PairCollectBodySchema, await readJson(req), 'body');
  const r = await d.security.collectPairing(b.request_id, b.secret, requestSource(req));
  if (r.ok) {
    const body: PairResponse = {
      client_id: r.credential.clientId ?? '',
      key: r.key,
      credential_id: r.credential.id,
    };
    return sendJson(res, 200, body, NO_STORE);
  }
  if (r.code === 'pending') {
    const body: PairCollectPending = { state: 'pending', message: r.message };
    return sendJson(res, 202, body, NO_STORE);
  }
  const status: Record<string, number> = {
    rate_limited: 429,
    unknown_request: 404,
    denied: 403,
    expired: 410,
    collected: 409,
    client_taken: 409,
  };
  throw new HttpError(
    status[r.code] ?? 400,
    r.code,
    r.message,
    undefined,
    r.code === 'rate_limited' ? { 'retry-after': String(Math.ceil((r.retryAfterMs ?? 1000) / 1000)) } : {},
  );
}

/** `GET /api/credentials/pairings`: pairing requests, newest first. */
export async function listPairings(d: HttpApiOptions, { res }: RouteRequest): Promise<void> {
  const body: PairingsResponse = { pairings: (await d.security.listPairings()).map(pairingToWire) };
  sendJson(res, 200, body, NO_STORE);
}

/** `POST /api/credentials/pairings/approve`. */
export async function approvePairing(d: HttpApiOptions, { req, res, caller }: RouteRequest): Promise<void> {
  const b = parseWith(PairingApproveBodySchema, await readJson(req), 'body');
  const grants = {
    ...(b.kinds !== undefined ? { kinds: b.kinds } : {}),
    ...(b.observe_others !== undefined ? { observeOthers: b.observe_others } : {}),
  };
  const p = await d.security.decidePairing(b.id, true, grants, who(caller));
  if (!p) throw new HttpError(404, 'not_found', `no pending pairing request ${b.id}`);
  sendJson(res, 200, { pairing: pairingToWire(p) }, NO_STORE);
}

/** `POST /api/credentials/pairings/deny`. */
export async function denyPairing(d: HttpApiOptions, { req, res, caller }: RouteRequest): Promise<void> {
  const b = parseWith(PairingDenyBodySchema, await readJson(req), 'body');
  const p = await d.security.decidePairing(b.id, false, {}, who(caller));
  if (!p) throw new HttpError(404, 'not_found', `no pending pairing request ${b.id}`);
  sendJson(res, 200, { pairing: pairingToWire(p) }, NO_STORE);
}

/** `GET /api/audit`: newest first. */
export async function listAudit(
  d: HttpApiOptions,
  { res, query: q }: RouteRequest<QueryOf<typeof AuditQuerySchema>>,
): Promise<void> {
  const entries = await d.security.listAudit({
    ...(q.limit !== undefined ? { limit: q.limit } : {}),
    ...(q.before !== undefined ? { beforeId: q.before } : {}),
    ...(q.actor !== undefined ? { actor: q.actor } : {}),
    ...(q.action !== undefined ? { action: q.action } : {}),
  });
  const body: AuditResponse = { entries: entries.map(auditToWire) };
  sendJson(res, 200, body, NO_STORE);
}

/** `GET /api/credentials`. */
export async function listCredentials(d: HttpApiOptions, { res }: RouteRequest): Promise<void> {
  const body: CredentialsResponse = {
    credentials: (await d.security.listCredentials()).map(credentialToWire),
  };
  sendJson(res, 200, body, NO_STORE);
}

/** `POST /api/credentials/enroll`. */
export async function enroll(d: HttpApiOptions, { req, res, caller }: RouteRequest): Promise<void> {
  const b = parseWith(EnrollBodySchema, await readJson(req, true), 'body');
  const t = await d.security.enroll(
    {
      ...(b.client_id !== undefined ? { clientId: b.client_id } : {}),
      ...(b.name !== undefined ? { name: b.name } : {}),
      grants: {
        ...(b.kinds !== undefined ? { kinds: b.kinds } : {}),
        ...(b.observe_others !== undefined ? { observeOthers: b.observe_others } : {}),
      },
      ...(b.ttl_s !== undefined ? { ttlMs: b.ttl_s * 1000 } : {}),
    },
    who(caller),
  );
  const body: EnrollResponse = {
    code: t.code,
    expires_at: t.expiresAt,
    ...(t.clientId !== undefined ? { client_id: t.clientId } : {}),
  };
  sendJson(res, 201, body, NO_STORE);
}

/** `POST /api/credentials/revoke`. */
export async function revoke(d: HttpApiOptions, { req, res, caller }: RouteRequest): Promise<void> {
  const b = parseWith(RevokeBodySchema, await readJson(req), 'body');
  const revoked = await d.security.revoke('id' in b ? { id: b.id } : { clientId: b.client_id }, who(caller));
  if (revoked.length === 0) throw new HttpError(404, 'not_found', 'no live key matches');
  const body: RevokeResponse = { revoked: revoked.map(credentialToWire) };
  sendJson(res, 200, body, NO_STORE);
}

/** `POST /api/credentials/rotate`. */
export async function rotate(d: HttpApiOptions, { req, res, caller }: RouteRequest): Promise<void> {
  const b = parseWith(RotateBodySchema, await readJson(req), 'body');
  const r = await d.security.rotate(b.client_id, who(caller));
  if (!r) throw new HttpError(404, 'not_found', `client "${b.client_id}" has no key to rotate`);
  const body: RotateResponse = {
    key: r.key,
    credential: credentialToWire(r.credential),
    old_valid_until: r.oldValidUntil,
  };
  sendJson(res, 201, body, NO_STORE);
}

/** `POST /api/credentials/keys`. */
export async function createKey(d: HttpApiOptions, { req, res, caller }: RouteRequest): Promise<void> {
  const b = parseWith(CreateKeyBodySchema, await readJson(req), 'body');
  const r = await d.security.createKey(b.role, b.name, who(caller));
  const body: CreateKeyResponse = { key: r.key, credential: credentialToWire(r.credential) };
  sendJson(res, 201, body, NO_STORE);
}

/** Keys are shown once: no cache may keep an answer. */
const NO_STORE = { 'cache-control': 'no-store' };

/** The caller, as the front authenticated it (these routes are never reached without one). */
function who(p: RouteRequest['caller']): Principal {
  if (p === undefined)
    throw new HttpError(401, 'unauthorized', 'no credential', undefined, { 'www-authenticate': 'Bearer' });
  return p;
}

function pairingToWire(p: PairingView): HttpPairing {
  return {
    id: p.id,
    client_id: p.clientId,
    ...(p.name !== undefined ? { name: p.name } : {}),
    source: p.source,
    match: p.match,
    state: p.state,
    created_at: p.createdAt,
    expires_at: p.expiresAt,
    ...(p.decidedAt !== undefined ? { decided_at: p.decidedAt } : {}),
    ...(p.decidedBy !== undefined ? { decided_by: p.decidedBy } : {}),
    ...(p.credentialId !== undefined ? { credential_id: p.credentialId } : {}),
  };
}

function credentialToWire(c: CredentialView): HttpCredential {
  return {
    id: c.id,
    role: c.role,
    ...(c.clientId !== undefined ? { client_id: c.clientId } : {}),
    ...(c.name !== undefined ? { name: c.name } : {}),
    grants: {
      ...(c.grants.kinds !== undefined ? { kinds: c.grants.kinds } : {}),
      ...(c.grants.observeOthers !== undefined ? { observe_others: c.grants.observeOthers } : {}),
    },
    created_at: c.createdAt,
    ...(c.expiresAt !== undefined ? { expires_at: c.expiresAt } : {}),
    ...(c.revokedAt !== undefined ? { revoked_at: c.revokedAt } : {}),
  };
}

function auditToWire(r: AuditRecord): HttpAuditEntry {
  return {
    id: r.id,
    at: r.at,
    actor: r.actor,
    role: r.role,
    source: r.source,
    action: r.action,
    ...(r.target !== undefined ? { target: r.target } : {}),
    outcome: r.outcome,
    ...(r.detail !== undefined ? { detail: r.detail } : {}),
  };
}
