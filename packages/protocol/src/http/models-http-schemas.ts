/**
 * `GET /api/models`: the model roles and, for roles served by a pool of servers, each server's state and figures —
 * what `ccagent models` lists and the dashboard's Models panel shows.
 */
import { z } from 'zod';

/** One server of a pool, as the pool sees it now. */
export const HttpModelServerSchema = z.object({
  name: z.string().describe('the server (its base URL)'),
  provider: z.string().describe('`ollama` or `openai-compatible`'),
  state: z.enum(['up', 'down']).describe('`down`: failed, out of rotation until a probe answers'),
  concurrency: z.number(),
  in_flight: z.number(),
  /** Calls waiting in the pool for this server (their task's warm server). */
  queued: z.number(),
  calls: z.number(),
  failures: z.number(),
  failovers: z.number().describe('calls that failed here and went to another server'),
  wait_ms_total: z.number().describe('queue wait of the calls started here, summed'),
  wait_ms_max: z.number(),
  affinity_hits: z.number(),
  affinity_misses: z.number(),
  affinity_hit_rate: z.number().nullable().describe('null before a task made a second call'),
  last_error: z
    .object({ code: z.string(), message: z.string(), at: z.number().describe('epoch ms') })
    .optional(),
  next_probe_at: z.number().optional().describe('epoch ms; down servers'),
});

/** A pool of servers (`models.<role>.servers`). */
export const HttpModelPoolSchema = z.object({
  name: z.string().describe('its servers, comma-separated'),
  queued: z.number().describe('calls waiting in the pool'),
  servers: z.array(HttpModelServerSchema),
});

/** `GET /api/models`. */
export const ModelsResponseSchema = z.object({
  roles: z.array(
    z.object({
      role: z.string(),
      name: z.string().describe('the model'),
      provider: z.string().describe('`ollama`, `openai-compatible`, or `pool`'),
      url: z.string().describe('the server, or the pool’s name'),
    }),
  ),
  pools: z.array(HttpModelPoolSchema),
});

/** `GET /api/models` body. */
export type ModelsResponse = z.infer<typeof ModelsResponseSchema>;
/** One pool server in `GET /api/models`. */
export type HttpModelServer = z.infer<typeof HttpModelServerSchema>;
