/**
 * What a step does with the instance before it plans: wait (bounded) for a mod that is not connected with a state yet
 * — after an orchestrator restart the model would otherwise plan with "state unknown" before the mod's 5 s
 * reconnect — and keep the mod's `log` lines with the task (a `mc_mod_log` record each, streamed like every step).
 */
import type { JsonValue, StepContext } from '@ccagent/engine';
import type { InstanceInfo, ModLogLine } from '../endpoint/mc-endpoint.js';

/** The instance reads a step needs (the mod endpoint satisfies it; the two optional ones are its extras). */
export interface InstanceReads {
  getInstance(instanceId: string): InstanceInfo | undefined;
  waitForState?(instanceId: string, ms: number, signal?: AbortSignal): Promise<boolean>;
  logsSince?(instanceId: string, afterSeq?: number): ModLogLine[];
}

/**
 * The instance as the step should see it: now, if it is connected with a state; else after waiting up to `waitMs`
 * for it (a `mc_state_wait` record says how long and whether it came), and as it is then.
 */
export async function instanceForStep(
  states: InstanceReads,
  instanceId: string,
  waitMs: number,
  ctx: StepContext,
): Promise<InstanceInfo | undefined> {
  const now = states.getInstance(instanceId);
  if (states.waitForState === undefined || waitMs <= 0) return now;
  if (now !== undefined && now.status === 'connected' && now.lastState !== null) return now;
  const startedAt = ctx.clock.now();
  const came = await states.waitForState(instanceId, waitMs, ctx.signal);
  await ctx.logStep({
    kind: 'mc_state_wait',
    output: {
      instanceId,
      waitedMs: ctx.clock.now() - startedAt,
      limitMs: waitMs,
      connected: came,
      ...(came ? {} : { note: 'the instance did not connect in time; the step goes on with what is known' }),
    } as JsonValue,
  });
  return states.getInstance(instanceId);
}

/** Write the mod's `log` lines after `afterSeq` as `mc_mod_log` records; returns the number of the last one written. */
export async function keepModLogs(
  states: InstanceReads,
  instanceId: string,
  afterSeq: number,
  ctx: StepContext,
): Promise<number> {
  let lines = states.logsSince?.(instanceId, afterSeq) ?? [];
  // The endpoint numbers lines from 1 again after a restart: start over when its last line is before ours.
  const all = lines.length === 0 ? (states.logsSince?.(instanceId, 0) ?? []) : [];
  if (all.length > 0 && (all.at(-1)?.seq ?? 0) < afterSeq) lines = all;
  if (lines.length === 0) return afterSeq;
  await ctx.logStep({
    kind: 'mc_mod_log',
    output: { instanceId, lines: lines.map((l) => ({ seq: l.seq, at: l.at, message: l.message })) },
  });
  return lines.at(-1)?.seq ?? afterSeq;
}
