/**
 * A Minecraft instance's activity (the dashboard's instance page): the instance now, its mod's last `log` lines and
 * its last actions with their outcomes and durations. What follows is pushed on `GET /api/events` (`mc_instance`,
 * `mc_log`, `mc_action`, see ../minecraft-events.ts) in these same shapes.
 */
import type { McActionRecord, McLogRecord } from '@ccagent/engine';
import type { ModActionRecord, ModLogLine } from '@ccagent/minecraft';
import type { HttpMinecraftAction, HttpMinecraftLog, MinecraftActivityResponse } from '@ccagent/protocol';
import { HttpError, sendJson } from '../http-kit.js';
import type { HttpApiOptions, RouteRequest } from '../route.js';
import { agent, instanceToWire } from './minecraft.js';

/** Log lines the activity route sends (the endpoint keeps more). */
export const ACTIVITY_LOG_LINES = 200;
/** Actions the activity route sends (the endpoint's default memory; the database keeps its own number). */
export const ACTIVITY_ACTIONS = 100;
/** Longest `error` an action record carries. */
export const ACTION_ERROR_CHARS = 1_000;
/** Longest `result` (as JSON) an action record carries. */
export const ACTION_RESULT_CHARS = 300;

/** A `log` line as the HTTP API sends it. */
export function logToWire(instanceId: string, l: ModLogLine): HttpMinecraftLog {
  return { instance_id: instanceId, seq: l.seq, at: l.at, message: l.message };
}

/** An action record as the HTTP API sends it: its outcome's error and result cut to a preview. */
export function actionToWire(instanceId: string, a: ModActionRecord): HttpMinecraftAction {
  const out: HttpMinecraftAction = {
    instance_id: instanceId,
    action_id: a.actionId,
    type: a.type,
    task_id: a.taskId,
    started_at: a.startedAt,
    ended_at: a.endedAt,
    duration_ms: a.endedAt === null ? null : a.endedAt - a.startedAt,
    ok: a.outcome === null ? null : a.outcome.ok,
  };
  if (a.outcome !== null && !a.outcome.ok) {
    out.code = a.outcome.code;
    out.error = a.outcome.error.slice(0, ACTION_ERROR_CHARS);
  }
  if (a.outcome?.ok === true && a.outcome.result !== null && a.outcome.result !== undefined) {
    let text: string;
    try {
      text = JSON.stringify(a.outcome.result) ?? '';
    } catch {
      text = String(a.outcome.result);
    }
    out.result = text.slice(0, ACTION_RESULT_CHARS);
  }
  return out;
}

/** A stored action in the HTTP API's shape. */
export function storedActionToWire(r: McActionRecord): HttpMinecraftAction {
  const out: HttpMinecraftAction = {
    instance_id: r.instanceId,
    action_id: r.actionId,
    type: r.type,
    task_id: r.taskId,
    started_at: r.startedAt,
    ended_at: r.endedAt,
    duration_ms: r.endedAt - r.startedAt,
    ok: r.ok,
  };
  if (r.code !== undefined) out.code = r.code;
  if (r.error !== undefined) out.error = r.error;
  if (r.result !== undefined) out.result = r.result;
  return out;
}

/** A stored line in the HTTP API's shape. */
export function storedLogToWire(l: McLogRecord): HttpMinecraftLog {
  return { instance_id: l.instanceId, seq: l.seq, at: l.at, message: l.message };
}

/**
 * `GET /api/minecraft/instances/:id/activity`: what the endpoint holds, over what the database kept (after a restart,
 * the stored lines and ended actions; `instance` null while the instance has not come back). 404 `not_found` for an
 * instance neither knows.
 */
export async function instanceActivity(d: HttpApiOptions, { res, params }: RouteRequest): Promise<void> {
  const endpoint = agent(d).endpoint;
  const id = params['id'] ?? '';
  const inst = endpoint.getInstance(id);
  const stored = d.minecraftActivity !== undefined ? await d.minecraftActivity.read(id) : undefined;
  if (
    inst === undefined &&
    (stored === undefined || (stored.logs.length === 0 && stored.actions.length === 0))
  )
    throw new HttpError(404, 'not_found', `no Minecraft instance ${id}`);
  const logs = new Map<number, HttpMinecraftLog>();
  for (const l of stored?.logs ?? []) logs.set(l.seq, storedLogToWire(l));
  for (const l of endpoint.logsSince(id)) logs.set(l.seq, logToWire(id, l));
  const actions = new Map<string, HttpMinecraftAction>();
  for (const a of stored?.actions ?? []) actions.set(a.actionId, storedActionToWire(a));
  for (const a of endpoint.actionsOf(id)) actions.set(a.actionId, actionToWire(id, a));
  const body: MinecraftActivityResponse = {
    instance: inst === undefined ? null : instanceToWire(inst),
    logs: [...logs.values()].sort((a, b) => a.seq - b.seq).slice(-ACTIVITY_LOG_LINES),
    actions: [...actions.values()]
      .sort((a, b) => a.started_at - b.started_at || (a.action_id < b.action_id ? -1 : 1))
      .slice(-ACTIVITY_ACTIONS),
  };
  sendJson(res, 200, body);
}
