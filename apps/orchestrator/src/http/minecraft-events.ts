/**
 * The Minecraft side on the live stream (`GET /api/events`): an instance's state as `mc_instance` (connected,
 * disconnected, a new state), its mod's `log` lines as `mc_log`, and each action as `mc_action` when it starts and
 * when it ends with its outcome. A bot reports its state up to 5 times a second while it moves; `mc_instance` is sent
 * at most once per {@link MC_STATE_INTERVAL_MS} per instance (the latest state wins; the last one is never dropped),
 * so state cannot crowd the task records out of the hub's replay buffer. Log lines are sent at most
 * {@link MC_LOG_LINES_PER_SECOND} a second per instance (a burst of {@link MC_LOG_BURST}): the lines over that are
 * counted, and one `mc_log` line with `dropped` (the count; its `seq` and `at` those of the last line left out) is sent
 * once lines flow again, or after {@link MC_LOG_MARKER_MS} when the flood stopped. The instance keeps every line
 * (its activity route). Actions are sent as they come: each is already bounded by the mod endpoint's rate limit.
 */
import type { MinecraftEndpoint, ModLogLine } from '@ccagent/minecraft';
import type { EventHub } from './event-hub.js';
import { actionToWire, logToWire } from './routes/minecraft-activity.js';
import { instanceToWire } from './routes/minecraft.js';

/** Shortest interval between two `mc_instance` records of one instance (ms). */
export const MC_STATE_INTERVAL_MS = 250;
/**
 * `mc_log` lines sent per second per instance, on average, after a burst of {@link MC_LOG_BURST}: the mod endpoint's
 * default frame rate, so the stream only counts lines where a server admits more (a raised `server.rateLimit`).
 */
export const MC_LOG_LINES_PER_SECOND = 50;
/** `mc_log` lines one instance may send at once before the rate applies. */
export const MC_LOG_BURST = 200;
/** Longest wait before lines left out are counted on the stream when no line follows them (ms). */
export const MC_LOG_MARKER_MS = 1000;

/** One instance's log budget: tokens, and the lines left out since the last one sent. */
interface LogBudget {
  tokens: number;
  refilledAt: number;
  dropped: number;
  last: ModLogLine | undefined;
  timer: NodeJS.Timeout | undefined;
}

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
  const budgets = new Map<string, LogBudget>();
  const sendDropped = (id: string, b: LogBudget): void => {
    if (b.timer !== undefined) clearTimeout(b.timer);
    b.timer = undefined;
    if (b.dropped === 0 || b.last === undefined) return;
    const n = b.dropped;
    hub.publish('mc_log', {
      instance_id: id,
      seq: b.last.seq,
      at: b.last.at,
      message: `… ${n.toLocaleString('en-US')} line${n === 1 ? '' : 's'} not streamed (over ${MC_LOG_LINES_PER_SECOND}/s); the instance keeps its latest lines`,
      dropped: n,
    });
    b.dropped = 0;
    b.last = undefined;
  };
  const log = (id: string, line: ModLogLine): void => {
    const now = Date.now();
    let b = budgets.get(id);
    if (b === undefined) {
      b = { tokens: MC_LOG_BURST, refilledAt: now, dropped: 0, last: undefined, timer: undefined };
      budgets.set(id, b);
    }
    b.tokens = Math.min(MC_LOG_BURST, b.tokens + ((now - b.refilledAt) * MC_LOG_LINES_PER_SECOND) / 1000);
    b.refilledAt = now;
    if (b.tokens >= 1) {
      b.tokens -= 1;
      sendDropped(id, b);
      hub.publish('mc_log', logToWire(id, line));
      return;
    }
    b.dropped += 1;
    b.last = line;
    if (b.timer === undefined) {
      const budget = b;
      budget.timer = setTimeout(() => sendDropped(id, budget), MC_LOG_MARKER_MS);
      budget.timer.unref();
    }
  };
  const offActivity = endpoint.onActivity((a) => {
    if (a.kind === 'log') log(a.instanceId, a.line);
    else hub.publish('mc_action', actionToWire(a.instanceId, a.action));
  });
  return () => {
    offState();
    offActivity();
    for (const t of timers.values()) clearTimeout(t);
    timers.clear();
    for (const b of budgets.values()) if (b.timer !== undefined) clearTimeout(b.timer);
    budgets.clear();
  };
}
