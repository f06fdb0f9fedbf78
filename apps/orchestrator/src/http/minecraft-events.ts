/**
 * The Minecraft side on the live stream (`GET /api/events`): an instance's state as `mc_instance` (connected,
 * disconnected, a new state), its mod's `log` lines as `mc_log`, and each action as `mc_action` when it starts and
 * when it ends with its outcome. A bot reports its state up to 5 times a second while it moves; `mc_instance` is sent
 * at most once per {@link MC_STATE_INTERVAL_MS} per instance (the latest state wins; the last one is never dropped),
 * so state cannot crowd the task records out of the hub's replay buffer. Logs and actions are sent as they come:
 * each is already bounded by the mod endpoint's rate limit.
 */
import type { MinecraftEndpoint } from '@ccagent/minecraft';
import type { EventHub } from './event-hub.js';
import { actionToWire, logToWire } from './routes/minecraft-activity.js';
import { instanceToWire } from './routes/minecraft.js';

/** Shortest interval between two `mc_instance` records of one instance (ms). */
export const MC_STATE_INTERVAL_MS = 250;

/** Publish the endpoint's instances, log lines and actions on `hub`; returns the function that stops it. */
export function publishMinecraftEvents(
  hub: EventHub,
  endpoint: MinecraftEndpoint,
  intervalMs = MC_STATE_INTERVAL_MS,
): () => void {
  const lastSent = new Map<string, number>();
  const timers = new Map<string, NodeJS.Timeout>();
  const sendState = (id: string): void => {
    const inst = endpoint.getInstance(id);
    if (inst === undefined) return;
    lastSent.set(id, Date.now());
    hub.publish('mc_instance', instanceToWire(inst));
  };
  const offState = endpoint.onState((id) => {
    if (timers.has(id)) return;
    const wait = (lastSent.get(id) ?? -Infinity) + intervalMs - Date.now();
    if (wait <= 0) return sendState(id);
    const t = setTimeout(() => {
      timers.delete(id);
      sendState(id);
    }, wait);
    t.unref();
    timers.set(id, t);
  });
  const offActivity = endpoint.onActivity((a) => {
    if (a.kind === 'log') hub.publish('mc_log', logToWire(a.instanceId, a.line));
    else hub.publish('mc_action', actionToWire(a.instanceId, a.action));
  });
  return () => {
    offState();
    offActivity();
    for (const t of timers.values()) clearTimeout(t);
    timers.clear();
  };
}
