/**
 * A Minecraft instance's activity (the dashboard's instance page): the instance now, its mod's last `log` lines and
 * its last actions with their outcomes and durations. What follows is pushed on `GET /api/events` (`mc_instance`,
 * `mc_log`, `mc_action`, see ../minecraft-events.ts) in these same shapes.
 */
import type { ModActionRecord, ModLogLine } from '@ccagent/minecraft';
import type { HttpMinecraftAction, HttpMinecraftLog, MinecraftActivityResponse } from '@ccagent/protocol';
import { HttpError, sendJson } from '../http-kit.js';
import type { HttpApiOptions, RouteRequest } from '../route.js';
import { agent, instanceToWire } from './minecraft.js';

/** Log lines the activity route sends (the endpoint keeps more). */
export const ACTIVITY_LOG_LINES = 200;
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

/** `GET /api/minecraft/instances/:id/activity`; 404 `not_found` for an instance the endpoint does not know. */
export function instanceActivity(d: HttpApiOptions, { res, params }: RouteRequest): Promise<void> {
  const endpoint = agent(d).endpoint;
  const id = params['id'] ?? '';
  const inst = endpoint.getInstance(id);
  if (inst === undefined) throw new HttpError(404, 'not_found', `no Minecraft instance ${id}`);
  const body: MinecraftActivityResponse = {
    instance: instanceToWire(inst),
    logs: endpoint
      .logsSince(id)
      .slice(-ACTIVITY_LOG_LINES)
      .map((l) => logToWire(id, l)),
    actions: endpoint.actionsOf(id).map((a) => actionToWire(id, a)),
  };
  sendJson(res, 200, body);
  return Promise.resolve();
}
