import { type z } from 'zod';
import {
  ActionCompleteSchema,
  ActionFailedSchema,
  ActionParamsSchemas,
  ErrorFrameSchema,
  ExecuteActionSchema,
  LogSchema,
  RegisteredSchema,
  RegisterSchema,
  StateUpdateSchema,
  StopSchema,
  type ActionType,
} from './messages.js';

/** One message of the mod protocol, for docs and JSON Schemas. */
export interface McCatalogEntry {
  type: string;
  direction: 'mod → backend' | 'backend → mod';
  schema: z.ZodType;
  description: string;
  example: Record<string, unknown>;
}

/** Every message of the protocol in the order the docs list them. */
export const MC_MESSAGE_CATALOG: readonly McCatalogEntry[] = [
  {
    type: 'register',
    direction: 'mod → backend',
    schema: RegisterSchema,
    description:
      'First frame of every connection. `instanceId` names the player/game client and stays the same across ' +
      'reconnects; `version` is the protocol version the mod speaks (major `1`). Anything else before it is ' +
      'refused with `not_registered`.',
    example: { type: 'register', instanceId: 'alex-laptop', version: '1.0' },
  },
  {
    type: 'state_update',
    direction: 'mod → backend',
    schema: StateUpdateSchema,
    description:
      'The player state, whenever it changes. Updates are coalesced: the backend keeps only the latest one per ' +
      'instance, so a mod may send them as often as it likes without growing a queue.',
    example: {
      type: 'state_update',
      instanceId: 'alex-laptop',
      data: {
        position: { x: 10.5, y: 64, z: -3.5 },
        health: 20,
        hunger: 18,
        saturation: 5,
        inventory: [{ slot: 36, item: 'oak_planks', count: 12 }],
        dimension: 'overworld',
        gameMode: 'survival',
      },
    },
  },
  {
    type: 'action_complete',
    direction: 'mod → backend',
    schema: ActionCompleteSchema,
    description:
      'The action with `actionId` finished. `result` is any JSON value (a summary the model reads). Refused with ' +
      '`unknown_action` when the backend never sent that id to this instance, `action_closed` when it is already ' +
      'closed (completed, failed or timed out).',
    example: { type: 'action_complete', instanceId: 'alex-laptop', actionId: 't1:p1:a0', result: 'arrived' },
  },
  {
    type: 'action_failed',
    direction: 'mod → backend',
    schema: ActionFailedSchema,
    description: 'The action could not be done; `error` says why. Same refusals as `action_complete`.',
    example: {
      type: 'action_failed',
      instanceId: 'alex-laptop',
      actionId: 't1:p1:a1',
      error: 'no path to 100 64 100',
    },
  },
  {
    type: 'log',
    direction: 'mod → backend',
    schema: LogSchema,
    description: "A line for the backend's log.",
    example: { type: 'log', instanceId: 'alex-laptop', message: 'pathfinder: 40 nodes' },
  },
  {
    type: 'registered',
    direction: 'backend → mod',
    schema: RegisteredSchema,
    description:
      'Answer to `register`. `success: false` when the version is not supported (an `error` frame says why and ' +
      'the connection closes).',
    example: { type: 'registered', success: true },
  },
  {
    type: 'execute_action',
    direction: 'backend → mod',
    schema: ExecuteActionSchema,
    description:
      'Run one action. At most one action per instance is open at a time. `action.id` is stable: after a ' +
      'reconnect or a backend restart the same action may be sent again, and the mod must not run it twice — it ' +
      'drops the repeat and reports the earlier outcome again (or, if it is still running, reports it when done).',
    example: { type: 'execute_action', action: { id: 't1:p1:a0', type: 'goto', x: 10, y: 64, z: -3 } },
  },
  {
    type: 'stop',
    direction: 'backend → mod',
    schema: StopSchema,
    description:
      'Stop what the player is doing (the task was stopped). The open action may be reported as failed.',
    example: { type: 'stop' },
  },
  {
    type: 'error',
    direction: 'backend → mod',
    schema: ErrorFrameSchema,
    description:
      'Not in the seed: the backend refused a frame, and the frame changed nothing. `code` is one of the codes ' +
      'below, `path` the JSON path of the offending field, `actionId` the action the frame named.',
    example: {
      type: 'error',
      code: 'invalid_message',
      message: 'state_update: data.health: Invalid input',
      path: ['data', 'health'],
    },
  },
];

/** What each action type does, for docs and prompts. */
export const MC_ACTION_CATALOG: ReadonlyArray<{
  type: ActionType;
  schema: z.ZodType;
  description: string;
}> = [
  {
    type: 'goto',
    schema: ActionParamsSchemas.goto,
    description: 'Walk to the block at x y z (pathfinding).',
  },
  {
    type: 'mine',
    schema: ActionParamsSchemas.mine,
    description:
      '`quantity` blocks named `target` (e.g. `stone`) near the player: walk to each and break it.',
  },
  {
    type: 'place',
    schema: ActionParamsSchemas.place,
    description: 'Place one `block` (an item name) at x y z; the block needs a solid neighbour.',
  },
  {
    type: 'craft',
    schema: ActionParamsSchemas.craft,
    description: 'Craft `recipe` (an item name) `quantity` times.',
  },
  {
    type: 'smelt',
    schema: ActionParamsSchemas.smelt,
    description: 'Smelt `quantity` of `item` in a furnace near the player.',
  },
  {
    type: 'interact',
    schema: ActionParamsSchemas.interact,
    description:
      'Use (right-click) the block `target` at x y z (a door, a lever, a chest), or without x y z the nearest ' +
      'entity named `target` (a villager, a cow).',
  },
  { type: 'chat', schema: ActionParamsSchemas.chat, description: 'Say `message` in chat.' },
];
