/**
 * The Minecraft routes' bodies (`/api/minecraft/...`, docs/minecraft.md): the mod instances the orchestrator's mod
 * endpoint knows, and the request that starts a `minecraft_agent` task with its per-task settings. The mod protocol
 * itself (what a mod and the backend say over the WebSocket) lives in `@ccagent/minecraft`; here `last_state` is
 * that protocol's `state_update` data as the mod sent it.
 */
import { z } from 'zod';
import { PrintableIdSchema } from '../messages.js';
import { HttpTaskSchema } from './http-schemas.js';

const time = z.number().describe('epoch ms');

/** The seed's three plan modes. */
export const MINECRAFT_PLAN_MODES = ['high-level', 'low-level', 'hybrid'] as const;

/** A mod instance as the orchestrator's mod endpoint knows it (connected, version, last state). */
export const HttpMinecraftInstanceSchema = z.object({
  instance_id: z.string(),
  /** `connected`; `disconnected` (state kept for 30 s while it reconnects); `dead` after that. */
  status: z.string(),
  connected: z.boolean(),
  /** The game version the mod reported (`register.version`, the seed's meaning), e.g. `1.20.1`. */
  version: z.string(),
  /** The mod protocol version it speaks (`register.protocolVersion`; `1.0` when it named none). */
  protocol_version: z.string(),
  /** What the mod calls itself and its platform/loader, when it said (`register.name`, `register.platform`). */
  name: z.string().nullable(),
  platform: z.string().nullable(),
  /** The latest `state_update` data (position, health, hunger, saturation, inventory, dimension, gameMode). */
  last_state: z.unknown().nullable(),
  last_state_at: time.nullable(),
  /** The action the instance is running, if any. */
  open_action_id: z.string().nullable(),
  connected_at: time,
  disconnected_at: time.nullable(),
  /** `state_update`s received (a flood is coalesced into `last_state`). */
  state_updates: z.number(),
  /** `state_update`s that changed something: the history kept as the latest state plus these changes. */
  state_changes: z.number(),
});

/** One `log` line a mod sent (`mc_log` event; `GET /api/minecraft/instances/:id/activity`). */
export const HttpMinecraftLogSchema = z.object({
  instance_id: z.string(),
  /** Numbered per instance from 1 (a gap: lines the server no longer keeps). */
  seq: z.number(),
  at: time,
  /** The mod's text as it sent it (at most 4,096 characters from the bridge): untrusted, show it as text. */
  message: z.string(),
  /** Live stream only: this line stands for this many lines not streamed (over the rate); `seq` is the last of them. */
  dropped: z
    .number()
    .optional()
    .describe('live stream only: this line counts that many lines not streamed; `seq` is the last of them'),
});

/**
 * One action on an instance with its outcome (`mc_action` event, sent when it starts and when it ends;
 * `GET /api/minecraft/instances/:id/activity`).
 */
export const HttpMinecraftActionSchema = z.object({
  instance_id: z.string(),
  action_id: z.string(),
  /** `goto`, `mine`, `place`, … */
  type: z.string(),
  /** The task that issued it (null when the caller named none). */
  task_id: z.string().nullable(),
  started_at: time,
  /** Null while it runs. */
  ended_at: time.nullable(),
  /** `ended_at - started_at`; null while it runs. */
  duration_ms: z.number().nullable(),
  /** Null while it runs. */
  ok: z.boolean().nullable(),
  /** On failure: `action_failed`, `action_timeout`, `action_refused` (an allow/deny list), `stopped`, `closed`, … */
  code: z.string().optional(),
  /** On failure: why (at most 1,000 characters). */
  error: z.string().optional(),
  /** On success: the mod's result as JSON, cut to 300 characters. */
  result: z.string().optional(),
});

/**
 * `GET /api/minecraft/instances/:id/activity`: the instance now, its last log lines and its last actions — those of
 * this run and those the database kept from before a restart.
 */
export const MinecraftActivityResponseSchema = z.object({
  /** Null: the mod has not connected since the server started; `logs` and `actions` are what the database kept. */
  instance: HttpMinecraftInstanceSchema.nullable(),
  /** The last log lines kept (at most 200), oldest first. */
  logs: z.array(HttpMinecraftLogSchema),
  /** The last actions kept (at most 100), oldest first. */
  actions: z.array(HttpMinecraftActionSchema),
});

/**
 * Body of `POST /api/minecraft/tasks`: which instance plays, the prompt, and the settings of this task. The provider
 * is chosen per task: `ollama` (at `ollama_url` or the server's), or `lmstudio` (any OpenAI-compatible server at
 * `lm_studio_url`, default `http://localhost:1234/v1`).
 */
export const MinecraftTaskBodySchema = z.strictObject({
  instance_id: PrintableIdSchema.max(128),
  prompt: z.string().min(1).max(20_000),
  /** Default `hybrid`. */
  mode: z.enum(MINECRAFT_PLAN_MODES).optional(),
  /** Default `ollama`. */
  provider: z.enum(['ollama', 'lmstudio']).optional(),
  model: z.string().min(1).max(200),
  temperature: z.number().min(0).max(2).optional(),
  lm_studio_url: z.url().optional(),
  ollama_url: z.url().optional(),
  /** Re-plans allowed after a failed action or a contradicting state (default 3). */
  max_replans: z.number().int().min(0).max(20).optional(),
  /** Per-action timeout (default 60,000). */
  action_timeout_ms: z.number().int().min(1_000).max(3_600_000).optional(),
  /** Send the plan's JSON Schema as `format` (default true); false for servers that reject it. */
  constrained: z.boolean().optional(),
  /** Most tokens one model answer may have (the seed's `max_tokens`, default 2,000; Ollama's `num_predict`). */
  max_tokens: z.number().int().min(16).max(200_000).optional(),
  /** How long a step waits for the instance to be connected with a state before planning without (default 30,000). */
  state_wait_ms: z.number().int().min(0).max(600_000).optional(),
});

/** Body of `POST /api/minecraft/instances/:id/stop` and `POST /api/minecraft/tasks/:id/retry` (empty, or `{}`). */
export const MinecraftEmptyBodySchema = z.strictObject({});

/** `GET /api/minecraft/instances`. */
export const MinecraftInstancesResponseSchema = z.object({
  instances: z.array(HttpMinecraftInstanceSchema),
});

/** `POST /api/minecraft/tasks` and `POST /api/minecraft/tasks/:id/retry`: the new task. */
export const MinecraftTaskResponseSchema = z.object({ task: HttpTaskSchema });

/** `POST /api/minecraft/instances/:id/stop`: whether `stop` reached the mod, and the tasks cancelled. */
export const MinecraftStopResponseSchema = z.object({
  stop_sent: z.boolean(),
  cancelled_tasks: z.array(z.string()),
});

/** A mod instance as the HTTP API sends it. */
export type HttpMinecraftInstance = z.infer<typeof HttpMinecraftInstanceSchema>;
/** `POST /api/minecraft/tasks` request body (parsed). */
export type MinecraftTaskBody = z.infer<typeof MinecraftTaskBodySchema>;
/** `GET /api/minecraft/instances` body. */
export type MinecraftInstancesResponse = z.infer<typeof MinecraftInstancesResponseSchema>;
/** `POST /api/minecraft/instances/:id/stop` body. */
export type MinecraftStopResponse = z.infer<typeof MinecraftStopResponseSchema>;
/** A mod `log` line as the HTTP API sends it. */
export type HttpMinecraftLog = z.infer<typeof HttpMinecraftLogSchema>;
/** An action on an instance with its outcome, as the HTTP API sends it. */
export type HttpMinecraftAction = z.infer<typeof HttpMinecraftActionSchema>;
/** `GET /api/minecraft/instances/:id/activity` body. */
export type MinecraftActivityResponse = z.infer<typeof MinecraftActivityResponseSchema>;
