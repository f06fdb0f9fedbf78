/**
 * The Minecraft mod protocol: one zod schema per WebSocket message between a mod (or the bridge bot) and the backend.
 * Field names are the seed's (camelCase on this wire, unlike the CC protocol); every frame is one JSON object
 * discriminated on `type`. Extra fields are allowed (a newer mod may send more), missing or mistyped ones are errors.
 */
import { PrintableIdSchema } from '@ccagent/protocol';
import { z } from 'zod';

const finite = z.number();
const int = z.number().int();
const nonEmpty = z.string().min(1);
const count = int.min(1).max(4096);

/**
 * Identifies one mod instance (one player / game client); chosen by the mod, stable across its reconnects. Printable
 * (`@ccagent/protocol`'s id charset: ASCII letters, digits and `. _ - : @ +`), since operators read it in logs, the
 * dashboard and the CLI.
 */
export const InstanceIdSchema = PrintableIdSchema.max(128);
/** An action id: the backend chooses it (`<task>:p<plan>:a<n>`), the mod echoes it. */
const ActionIdSchema = PrintableIdSchema;

/** A block or entity position. */
export const PositionSchema = z.object({ x: finite, y: finite, z: finite });

/** One inventory slot as the mod reports it. */
export const InventorySlotSchema = z.object({ slot: int.min(0), item: nonEmpty, count: int.min(0) });

/** What a `state_update` carries: the player's current state. */
export const PlayerStateSchema = z.object({
  position: PositionSchema,
  health: finite,
  hunger: finite,
  saturation: finite,
  inventory: z.array(InventorySlotSchema).max(512),
  dimension: z.string(),
  gameMode: z.string(),
});

/** Every action type the protocol defines, with its parameters. */
export const ACTION_TYPES = [
  'goto',
  'mine',
  'place',
  'craft',
  'smelt',
  'interact',
  'chat',
  'open_inventory',
] as const;

/**
 * The parameters of each action type (without `id`): what a plan names. The seed's forms are all here: `goto` to a
 * block (`x y z`) or, goal-level, to the nearest `target` (a block or entity name); `mine` by `target` (`quantity`
 * blocks, default 1) or the one block at `x y z`; `craft` with `quantity` (default 1); `interact` with a block at
 * `x y z` or, without coordinates, the nearest entity named `target`; `open_inventory`.
 */
export const ActionParamsSchemas = {
  goto: z.object({
    type: z.literal('goto'),
    x: finite.optional(),
    y: finite.optional(),
    z: finite.optional(),
    target: nonEmpty.max(100).optional(),
  }),
  mine: z.object({
    type: z.literal('mine'),
    target: nonEmpty.max(100).optional(),
    quantity: count.optional(),
    x: int.optional(),
    y: int.optional(),
    z: int.optional(),
  }),
  place: z.object({ type: z.literal('place'), block: nonEmpty, x: int, y: int, z: int }),
  craft: z.object({ type: z.literal('craft'), recipe: nonEmpty, quantity: count.optional() }),
  smelt: z.object({ type: z.literal('smelt'), item: nonEmpty, quantity: count }),
  interact: z.object({
    type: z.literal('interact'),
    target: nonEmpty,
    x: int.optional(),
    y: int.optional(),
    z: int.optional(),
  }),
  chat: z.object({ type: z.literal('chat'), message: z.string().min(1).max(256) }),
  open_inventory: z.object({ type: z.literal('open_inventory') }),
} as const;

type Coords = { x?: number | undefined; y?: number | undefined; z?: number | undefined };

/**
 * What makes an action's optional fields one valid form (zod's object schemas cannot say "either these or that"):
 * coordinates come as all three or none; `goto` has coordinates or a `target`, not both; `mine` has a `target` or
 * coordinates, not both, and `quantity` only with a `target`. Null when the action is well-formed.
 */
export function actionFormIssue(a: { type: string } & Coords & { target?: string; quantity?: number }): {
  message: string;
  path: string[];
} | null {
  const given = [a.x, a.y, a.z].filter((v) => v !== undefined).length;
  if (given !== 0 && given !== 3) {
    const missing = (['x', 'y', 'z'] as const).find((k) => a[k] === undefined) ?? 'x';
    return { message: `${a.type}: give all of x, y and z, or none`, path: [missing] };
  }
  const coords = given === 3;
  if (a.type === 'goto' && coords === (a.target !== undefined)) {
    return {
      message: 'goto: give either x, y and z (a block) or target (the nearest block or entity of that name)',
      path: coords ? ['target'] : ['x'],
    };
  }
  if (a.type === 'mine') {
    if (coords === (a.target !== undefined)) {
      return {
        message: 'mine: give either target (and quantity) or x, y and z (the one block there)',
        path: ['target'],
      };
    }
    if (coords && a.quantity !== undefined) {
      return { message: 'mine: quantity goes with target, not with x, y and z', path: ['quantity'] };
    }
  }
  return null;
}

function checkForm(a: { type: string }, ctx: z.RefinementCtx): void {
  const issue = actionFormIssue(a as Parameters<typeof actionFormIssue>[0]);
  if (issue !== null) ctx.addIssue({ code: 'custom', message: issue.message, path: issue.path });
}

/** An action without its id (a plan's entry). */
export const ActionSpecSchema = z
  .discriminatedUnion('type', [
    ActionParamsSchemas.goto,
    ActionParamsSchemas.mine,
    ActionParamsSchemas.place,
    ActionParamsSchemas.craft,
    ActionParamsSchemas.smelt,
    ActionParamsSchemas.interact,
    ActionParamsSchemas.chat,
    ActionParamsSchemas.open_inventory,
  ])
  .superRefine(checkForm);

const actionId = { id: z.string().min(1).max(200) };

/** An action as sent to the mod: its parameters plus a stable `id` (a repeated id must not run twice). */
export const ActionSchema = z
  .discriminatedUnion('type', [
    ActionParamsSchemas.goto.extend(actionId),
    ActionParamsSchemas.mine.extend(actionId),
    ActionParamsSchemas.place.extend(actionId),
    ActionParamsSchemas.craft.extend(actionId),
    ActionParamsSchemas.smelt.extend(actionId),
    ActionParamsSchemas.interact.extend(actionId),
    ActionParamsSchemas.chat.extend(actionId),
    ActionParamsSchemas.open_inventory.extend(actionId),
  ])
  .superRefine(checkForm);

// ---- mod → backend ----

/**
 * First frame of every connection: who the mod is. As in the seed, `version` is the game's version (`1.20.1`), shown
 * to operators; `protocolVersion` (not in the seed) is the protocol version the mod speaks, `1.0` when absent. `name`
 * and `platform` (optional) are what the mod calls itself and its loader (`fabric`, `forge`, `mineflayer`).
 */
export const RegisterSchema = z.object({
  type: z.literal('register'),
  instanceId: InstanceIdSchema,
  version: nonEmpty.max(64),
  protocolVersion: nonEmpty.max(32).optional(),
  name: nonEmpty.max(100).optional(),
  platform: nonEmpty.max(100).optional(),
});
/** The player's state; sent whenever it changes (the backend keeps only the latest). */
export const StateUpdateSchema = z.object({
  type: z.literal('state_update'),
  instanceId: InstanceIdSchema,
  data: PlayerStateSchema,
});
/** An action finished; `result` is any JSON value the mod chooses (a summary, counts). */
export const ActionCompleteSchema = z.object({
  type: z.literal('action_complete'),
  instanceId: InstanceIdSchema,
  actionId: ActionIdSchema,
  result: z.json().optional(),
});
/** An action could not be done; `error` says why, for the model and the person reading the step log. */
export const ActionFailedSchema = z.object({
  type: z.literal('action_failed'),
  instanceId: InstanceIdSchema,
  actionId: ActionIdSchema,
  error: z.string(),
});
/** A line for the backend's log (shown with the instance). */
export const LogSchema = z.object({
  type: z.literal('log'),
  instanceId: InstanceIdSchema,
  message: z.string().max(4096),
});

/** Any message a mod may send. */
export const ModMessageSchema = z.discriminatedUnion('type', [
  RegisterSchema,
  StateUpdateSchema,
  ActionCompleteSchema,
  ActionFailedSchema,
  LogSchema,
]);

// ---- backend → mod ----

/** Answer to `register`. */
export const RegisteredSchema = z.object({ type: z.literal('registered'), success: z.boolean() });
/** Run one action. The mod answers with `action_complete` or `action_failed` carrying `action.id`. */
export const ExecuteActionSchema = z.object({ type: z.literal('execute_action'), action: ActionSchema });
/** Stop whatever the player is doing (the task was stopped). */
export const StopSchema = z.object({ type: z.literal('stop') });
/**
 * The backend refused a frame (not in the seed): a structured reason. The refused frame changed nothing.
 * `actionId` is set when the frame named one.
 */
export const ErrorFrameSchema = z.object({
  type: z.literal('error'),
  code: nonEmpty,
  message: z.string(),
  path: z.array(z.union([z.string(), z.number()])).optional(),
  actionId: z.string().optional(),
});

/** Any message the backend may send. */
export const BackendMessageSchema = z.discriminatedUnion('type', [
  RegisteredSchema,
  ExecuteActionSchema,
  StopSchema,
  ErrorFrameSchema,
]);

/** A player state. */
export type PlayerState = z.infer<typeof PlayerStateSchema>;
/** One of {@link ACTION_TYPES}. */
export type ActionType = (typeof ACTION_TYPES)[number];
/** An action without its id (a plan entry). */
export type ActionSpec = z.infer<typeof ActionSpecSchema>;
/** An action with its id, as sent in `execute_action`. */
export type Action = z.infer<typeof ActionSchema>;
/** Any mod → backend message. */
export type ModMessage = z.infer<typeof ModMessageSchema>;
/** Any backend → mod message. */
export type BackendMessage = z.infer<typeof BackendMessageSchema>;
