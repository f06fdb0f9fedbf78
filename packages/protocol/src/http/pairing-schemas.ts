/**
 * Pairing by request and approval over HTTP: a computer without an enrollment code asks to pair
 * (`POST /api/pair/request`), an operator approves or denies it (`/api/credentials/pairings/…`), and the computer
 * collects its key with the request's secret (`POST /api/pair/collect`). Request bodies are strict, answers open.
 */
import { z } from 'zod';
import { ClientIdSchema } from '../messages.js';

const time = z.number().describe('epoch ms');
// The id a computer asks for is shown to the operator who approves it: printable, or refused at the door.
const clientId = ClientIdSchema;

/** Body of `POST /api/pair/request` (open): the id the computer wants and an optional display name. */
export const PairRequestBodySchema = z.strictObject({
  client_id: clientId,
  name: z.string().min(1).max(200).optional(),
});

/**
 * Answer of `POST /api/pair/request` (202): the secret to collect the key with (shown once), and the match code the
 * computer shows so the operator approves the right request. `state` is `approved` at once with trust on first use.
 */
export const PairRequestResponseSchema = z.object({
  request_id: z.string(),
  secret: z.string(),
  match: z.string(),
  expires_at: time,
  state: z.enum(['pending', 'approved']),
});

/** Body of `POST /api/pair/collect` (open; the secret is the credential). */
export const PairCollectBodySchema = z.strictObject({
  request_id: z.string().min(1).max(100),
  secret: z.string().min(1).max(200),
});

/** A pairing request as operators see it. */
export const HttpPairingSchema = z.object({
  id: z.string(),
  client_id: z.string(),
  name: z.string().optional(),
  source: z.string(),
  match: z.string(),
  state: z.enum(['pending', 'approved', 'denied', 'collected', 'expired']),
  created_at: time,
  expires_at: time,
  decided_at: time.optional(),
  decided_by: z.string().optional(),
  credential_id: z.string().optional(),
});

/** Answer of `GET /api/credentials/pairings`: newest first. */
export const PairingsResponseSchema = z.object({ pairings: z.array(HttpPairingSchema) });

/** Body of `POST /api/credentials/pairings/approve`: which request, and what the computer may do besides its own tasks. */
export const PairingApproveBodySchema = z.strictObject({
  id: z.string().min(1),
  kinds: z.array(z.string().min(1)).optional(),
  observe_others: z.boolean().optional(),
});

/** Answer of `POST /api/pair/collect` while no operator has decided (202). */
export const PairCollectPendingSchema = z.object({ state: z.literal('pending'), message: z.string() });

/** Answer of `POST /api/credentials/pairings/approve` and `/deny`. */
export const PairingDecisionResponseSchema = z.object({ pairing: HttpPairingSchema });

/** Body of `POST /api/credentials/pairings/deny`. */
export const PairingDenyBodySchema = z.strictObject({ id: z.string().min(1) });

/** A pairing request as operators see it. */
export type HttpPairing = z.infer<typeof HttpPairingSchema>;
/** Answer of `POST /api/pair/request`. */
export type PairRequestResponse = z.infer<typeof PairRequestResponseSchema>;
/** Answer of `GET /api/credentials/pairings`. */
export type PairingsResponse = z.infer<typeof PairingsResponseSchema>;
/** Answer of `POST /api/pair/collect` while pending. */
export type PairCollectPending = z.infer<typeof PairCollectPendingSchema>;
