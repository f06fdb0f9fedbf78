/**
 * The seed's backend channels over HTTP (`/api/minecraft/detect-instances`, `connect-instance`, `send-prompt`,
 * `stop-task`, `get-status`; docs/minecraft.md "The seed's channels") and the per-instance action allow/deny lists.
 */
import { z } from 'zod';
import { PrintableIdSchema } from '../messages.js';
import { HttpMinecraftInstanceSchema, MinecraftTaskBodySchema } from './minecraft-http-schemas.js';

/** Every action type of the mod protocol (as `@ccagent/minecraft`'s `ACTION_TYPES`). */
export const MINECRAFT_ACTION_TYPES = [
  'goto',
  'mine',
  'place',
  'craft',
  'smelt',
  'interact',
  'chat',
  'open_inventory',
] as const;

/** `GET /api/minecraft/detect-instances`: the instances with the game version, name and platform each reported. */
export const MinecraftDetectResponseSchema = z.object({
  instances: z.array(HttpMinecraftInstanceSchema),
  /** The instance a prompt without `instance_id` goes to (`connect-instance`), or null. */
  active_instance: z.string().nullable(),
});

/** Body of `POST /api/minecraft/connect-instance`: the instance prompts go to from now on. */
export const MinecraftConnectBodySchema = z.strictObject({ instance_id: PrintableIdSchema.max(128) });

/** `POST /api/minecraft/connect-instance`: the active instance now, and whether it is connected. */
export const MinecraftConnectResponseSchema = z.object({
  active_instance: z.string(),
  connected: z.boolean(),
});

/**
 * Body of `POST /api/minecraft/send-prompt`: a `minecraft_agent` task's body with `instance_id` optional (the active
 * instance when absent).
 */
export const MinecraftSendPromptBodySchema = MinecraftTaskBodySchema.extend({
  instance_id: PrintableIdSchema.max(128).optional(),
});

/** `POST /api/minecraft/send-prompt`: the new task's id, as the seed's channel answers. */
export const MinecraftSendPromptResponseSchema = z.object({
  task_id: z.string(),
  instance_id: z.string(),
});

/** Body of `POST /api/minecraft/stop-task`: the instance whose current task stops (default the active one). */
export const MinecraftStopTaskBodySchema = z.strictObject({
  instance_id: PrintableIdSchema.max(128).optional(),
});

/** `POST /api/minecraft/stop-task`: the task stopped (null when none ran) and whether `stop` reached the mod. */
export const MinecraftStopTaskResponseSchema = z.object({
  instance_id: z.string(),
  stopped_task: z.string().nullable(),
  stop_sent: z.boolean(),
});

/** The seed's status words. */
export const MINECRAFT_AGENT_STATUSES = ['idle', 'processing', 'complete', 'error'] as const;

/** `GET /api/minecraft/get-status`: everything the seed's UI shows, in one call. */
export const MinecraftStatusResponseSchema = z.object({
  /** `processing` while the active instance's task runs; `complete`/`error` after its last one; `idle` otherwise. */
  status: z.enum(MINECRAFT_AGENT_STATUSES),
  /** The active instance's current task (else its last one): id, status, prompt. */
  current_task: z
    .object({ id: z.string(), status: z.string(), prompt: z.string(), error: z.string().nullable() })
    .nullable(),
  connected_instances: z.array(z.string()),
  active_instance: z.string().nullable(),
});

/** An instance's action lists: `allow` (only these; absent = all types) and `deny` (never these). */
export const MinecraftActionPolicySchema = z.strictObject({
  allow: z.array(z.enum(MINECRAFT_ACTION_TYPES)).max(MINECRAFT_ACTION_TYPES.length).optional(),
  deny: z.array(z.enum(MINECRAFT_ACTION_TYPES)).max(MINECRAFT_ACTION_TYPES.length).optional(),
});

/** `GET`/`POST /api/minecraft/instances/:id/actions`: the instance's lists now. */
export const MinecraftActionPolicyResponseSchema = z.object({
  instance_id: z.string(),
  allow: z.array(z.string()).nullable(),
  deny: z.array(z.string()),
});

/** `send-prompt` body (parsed). */
export type MinecraftSendPromptBody = z.infer<typeof MinecraftSendPromptBodySchema>;
/** `get-status` body. */
export type MinecraftStatusResponse = z.infer<typeof MinecraftStatusResponseSchema>;
/** `detect-instances` body. */
export type MinecraftDetectResponse = z.infer<typeof MinecraftDetectResponseSchema>;
/** `instances/:id/actions` body. */
export type MinecraftActionPolicyResponse = z.infer<typeof MinecraftActionPolicyResponseSchema>;
