/**
 * The seed's backend channels over HTTP (docs/minecraft.md, "The seed's channels"): detect-instances,
 * connect-instance, send-prompt, stop-task, get-status; and an instance's action allow/deny lists. The task a prompt
 * starts is an ordinary `minecraft_agent` task (the same as `POST /api/minecraft/tasks`).
 */
import {
  MinecraftActionPolicySchema,
  MinecraftConnectBodySchema,
  MinecraftSendPromptBodySchema,
  MinecraftStopTaskBodySchema,
  type MinecraftActionPolicyResponse,
  type MinecraftDetectResponse,
  type MinecraftStatusResponse,
} from '@ccagent/protocol';
import { HttpError, parseWith, readJson, sendJson } from '../http-kit.js';
import type { HttpApiOptions, RouteRequest } from '../route.js';
import { agent, instanceToWire, startMinecraftTask } from './minecraft.js';

/** The instance a body names, else the active one; 409 `no_instance` when there is neither. */
function chosen(d: HttpApiOptions, named: string | undefined): string {
  const id = named ?? agent(d).activeInstance();
  if (id === null) {
    throw new HttpError(
      409,
      'no_instance',
      'no instance_id given and no active instance: connect one first (POST /api/minecraft/connect-instance)',
    );
  }
  return id;
}

/** `GET /api/minecraft/detect-instances`. */
export function detectInstances(d: HttpApiOptions, { res }: RouteRequest): Promise<void> {
  const mc = agent(d);
  const body: MinecraftDetectResponse = {
    instances: mc.listInstances().map(instanceToWire),
    active_instance: mc.activeInstance(),
  };
  sendJson(res, 200, body);
  return Promise.resolve();
}

/** `POST /api/minecraft/connect-instance`: the active instance (it need not be connected yet). */
export async function connectInstance(d: HttpApiOptions, { req, res }: RouteRequest): Promise<void> {
  const mc = agent(d);
  const b = parseWith(MinecraftConnectBodySchema, await readJson(req), 'body');
  const r = await mc.connectInstance(b.instance_id);
  if (!r.ok) throw new HttpError(503, 'unavailable', r.message);
  const now = mc.listInstances().find((i) => i.instanceId === b.instance_id);
  sendJson(res, 200, { active_instance: b.instance_id, connected: now?.status === 'connected' });
}

/** `POST /api/minecraft/send-prompt`: a task on the named or the active instance; answers with its id. */
export async function sendPrompt(d: HttpApiOptions, { req, res }: RouteRequest): Promise<void> {
  const b = parseWith(MinecraftSendPromptBodySchema, await readJson(req), 'body');
  const instanceId = chosen(d, b.instance_id);
  const task = await startMinecraftTask(d, { ...b, instance_id: instanceId });
  sendJson(res, 201, { task_id: task.id, instance_id: instanceId });
}

/** `POST /api/minecraft/stop-task`: the current task of the named or active instance stops, in the game too. */
export async function stopTask(d: HttpApiOptions, { req, res }: RouteRequest): Promise<void> {
  const mc = agent(d);
  const b = parseWith(MinecraftStopTaskBodySchema, await readJson(req, true), 'body');
  const instanceId = chosen(d, b.instance_id);
  const r = await mc.stopInstance(d.engine, instanceId);
  sendJson(res, 200, {
    instance_id: instanceId,
    stopped_task: r.cancelled[0] ?? null,
    stop_sent: r.stopSent,
  });
}

/** `GET /api/minecraft/get-status`. */
export async function getStatus(d: HttpApiOptions, { res }: RouteRequest): Promise<void> {
  const mc = agent(d);
  const active = mc.activeInstance();
  const task = active === null ? undefined : await mc.currentTask(d.engine, active);
  const status: MinecraftStatusResponse['status'] =
    task === undefined
      ? 'idle'
      : task.status === 'completed'
        ? 'complete'
        : task.status === 'failed'
          ? 'error'
          : task.status === 'cancelled'
            ? 'idle'
            : 'processing';
  const body: MinecraftStatusResponse = {
    status,
    current_task:
      task === undefined
        ? null
        : { id: task.id, status: task.status, prompt: task.prompt, error: task.error?.message ?? null },
    connected_instances: mc
      .listInstances()
      .filter((i) => i.status === 'connected')
      .map((i) => i.instanceId),
    active_instance: active,
  };
  sendJson(res, 200, body);
}

function policyToWire(d: HttpApiOptions, instanceId: string): MinecraftActionPolicyResponse {
  const p = agent(d).actionPolicy(instanceId);
  return { instance_id: instanceId, allow: p?.allow ?? null, deny: p?.deny ?? [] };
}

/** `GET /api/minecraft/instances/:id/actions`. */
export function getActionPolicy(d: HttpApiOptions, { res, params }: RouteRequest): Promise<void> {
  sendJson(res, 200, policyToWire(d, params['id'] ?? ''));
  return Promise.resolve();
}

/** `POST /api/minecraft/instances/:id/actions`: replace the lists (`{}` removes them). */
export async function setActionPolicy(d: HttpApiOptions, { req, res, params }: RouteRequest): Promise<void> {
  const id = params['id'] ?? '';
  const b = parseWith(MinecraftActionPolicySchema, await readJson(req, true), 'body');
  const r = await agent(d).setActionPolicy(id, b);
  if (!r.ok && r.code === 'unavailable') throw new HttpError(503, 'unavailable', r.message);
  if (!r.ok) throw new HttpError(400, 'invalid_body', r.message);
  sendJson(res, 200, policyToWire(d, id));
}
