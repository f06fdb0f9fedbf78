/**
 * Minecraft routes (seed 003's UI functions): the mod instances (connected, version, last state), a
 * `minecraft_agent` task with its settings, stop an instance (sends `stop`, cancels its tasks), retry a task. The
 * task's status and step log are the ordinary task routes. Bodies are @ccagent/protocol's (snake_case), mapped here to the package's settings.
 */
import type { InstanceInfo, McTaskOperations, MinecraftAgent } from '@ccagent/minecraft';
import {
  MinecraftEmptyBodySchema,
  MinecraftTaskBodySchema,
  type HttpMinecraftInstance,
  type MinecraftInstancesResponse,
  type MinecraftStopResponse,
  type MinecraftTaskBody,
} from '@ccagent/protocol';
import type { Task } from '@ccagent/engine';
import { taskToWire } from '../../wire.js';
import { HttpError, parseWith, readJson, sendJson } from '../http-kit.js';
import type { HttpApiOptions, RouteRequest } from '../route.js';

/** The Minecraft side, or 503 when the mod endpoint does not run in this orchestrator. */
export function agent(d: HttpApiOptions): MinecraftAgent {
  if (d.minecraft === undefined || d.minecraftTasks === undefined) {
    throw new HttpError(
      503,
      'minecraft_unavailable',
      'the Minecraft mod endpoint is not running in this orchestrator',
    );
  }
  return d.minecraft;
}

function operations(d: HttpApiOptions): McTaskOperations {
  agent(d);
  return d.minecraftTasks as McTaskOperations;
}

/** An instance as the HTTP API sends it. */
export function instanceToWire(i: InstanceInfo): HttpMinecraftInstance {
  return {
    instance_id: i.instanceId,
    status: i.status,
    connected: i.status === 'connected',
    version: i.version,
    protocol_version: i.protocolVersion,
    name: i.name,
    platform: i.platform,
    // The mod's own state object, as the mod protocol defines it.
    last_state: i.lastState,
    last_state_at: i.lastStateAt,
    open_action_id: i.openActionId,
    connected_at: i.connectedAt,
    disconnected_at: i.disconnectedAt,
    state_updates: i.stateUpdates,
    state_changes: i.stateChanges,
  };
}

/** `GET /api/minecraft/instances`. */
export function listInstances(d: HttpApiOptions, { res }: RouteRequest): Promise<void> {
  const body: MinecraftInstancesResponse = { instances: agent(d).listInstances().map(instanceToWire) };
  sendJson(res, 200, body);
  return Promise.resolve();
}

/** `POST /api/minecraft/tasks`: a `minecraft_agent` task for an instance, with its settings. */
export async function createMinecraftTask(d: HttpApiOptions, { req, res }: RouteRequest): Promise<void> {
  const b = parseWith(MinecraftTaskBodySchema, await readJson(req), 'body');
  const task = await startMinecraftTask(d, b);
  sendJson(res, 201, { task: taskToWire(task) });
}

/**
 * A `minecraft_agent` task from a task body (snake_case) for `instance_id`: the settings mapped to the package's, its
 * refusals as HTTP errors (400 naming the field, 409 `instance_busy` while the instance runs a task).
 */
export async function startMinecraftTask(
  d: HttpApiOptions,
  b: Omit<MinecraftTaskBody, 'instance_id'> & { instance_id: string },
): Promise<Task> {
  const mc = agent(d);
  const settings = Object.fromEntries(
    Object.entries({
      instanceId: b.instance_id,
      mode: b.mode,
      provider: b.provider,
      model: b.model,
      temperature: b.temperature,
      lmStudioUrl: b.lm_studio_url,
      ollamaUrl: b.ollama_url,
      maxReplans: b.max_replans,
      actionTimeoutMs: b.action_timeout_ms,
      constrained: b.constrained,
      maxTokens: b.max_tokens,
      stateWaitMs: b.state_wait_ms,
    }).filter(([, v]) => v !== undefined),
  );
  const r = await mc.createTask(d.engine, operations(d), { prompt: b.prompt, settings });
  if (!r.ok && r.code === 'instance_busy') throw new HttpError(409, r.code, r.message);
  if (!r.ok && r.code === 'unavailable') throw new HttpError(503, 'unavailable', r.message);
  if (!r.ok) {
    const snake = (r.path ?? []).map((k) =>
      k === 'settings' ? '' : k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`),
    );
    const path = `$${snake
      .filter((k) => k !== '')
      .map((k) => `.${k}`)
      .join('')}`;
    throw new HttpError(400, 'invalid_body', `${path}: ${r.message.replace(/^[^:]*: /, '')}`, path);
  }
  return r.value;
}

/** `POST /api/minecraft/instances/:id/stop`: `stop` to the mod, and its unfinished tasks cancelled. */
export async function stopInstance(d: HttpApiOptions, { req, res, params }: RouteRequest): Promise<void> {
  const mc = agent(d);
  parseWith(MinecraftEmptyBodySchema, await readJson(req, true), 'body');
  const r = await mc.stopInstance(d.engine, params['id'] ?? '');
  const body: MinecraftStopResponse = { stop_sent: r.stopSent, cancelled_tasks: r.cancelled };
  sendJson(res, 200, body);
}

/**
 * `POST /api/minecraft/tasks/:id/retry`: the failed or cancelled task reopened with fresh budgets, as the engine's
 * retry of any task (`POST /api/tasks/:id/retry`); 409 `conflict` for a task in another state.
 */
export async function retryMinecraftTask(
  d: HttpApiOptions,
  { req, res, params }: RouteRequest,
): Promise<void> {
  const mc = agent(d);
  parseWith(MinecraftEmptyBodySchema, await readJson(req, true), 'body');
  const r = await mc.retryTask(d.engine, operations(d), params['id'] ?? '');
  if (!r.ok) {
    const status = r.code === 'not_found' ? 404 : r.code === 'unavailable' ? 503 : 409;
    throw new HttpError(status, r.code, r.message);
  }
  sendJson(res, 200, { task: taskToWire(r.value) });
}
