// Budgets per period through the real engine on a manual clock: a resident task that is woken far more often than its
// hourly budget allows makes at most that many steps (and model calls) per hour, sleeps until the next hour instead
// of failing, and goes on then with what was posted meanwhile. Tokens come from the step log's usage.
import { describe, expect, it } from 'vitest';
import { ManualClock } from './clock.js';
import { Engine } from './engine.js';
import { InMemoryTaskStore } from './in-memory-task-store.js';
import { PERIOD_METADATA_KEYS, periodExhausted, periodStart, periodUsageOf } from './period-budgets.js';
import type { TaskStrategy } from './ports.js';
import type { Task } from './types.js';

const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 10, 2);

/** A resident strategy: each step "calls the model" (counted, 100 tokens) and waits a day for the next event. */
function resident(calls: number[]): TaskStrategy {
  return {
    async decide(_task, history, ctx) {
      calls.push(ctx.clock.now());
      await ctx.logStep({ kind: 'native', usage: { promptTokens: 80, completionTokens: 20 } });
      const events = history.filter((h) => h.type === 'event').length;
      return { type: 'continue', wakeAfterMs: 24 * HOUR, memory: { seen: events } };
    },
  };
}

async function setup(budgets: Record<string, unknown>) {
  const clock = new ManualClock(T0);
  const store = new InMemoryTaskStore();
  const calls: number[] = [];
  const engine = new Engine({
    store,
    strategies: { resident: resident(calls) },
    clock,
    tickIntervalMs: 1000,
  });
  await engine.start();
  const task = await engine.createTask({
    kind: 'resident',
    prompt: 'watch the farm',
    metadata: { [PERIOD_METADATA_KEYS.budgets]: budgets as never },
  });
  await clock.advance(1);
  return { clock, store, engine, calls, id: task.id };
}

describe('budgets per period', () => {
  it('an idle resident task makes no model call while it waits (guards against a busy wait costing tokens)', async () => {
    const { clock, engine, calls, id } = await setup({ hour: { maxSteps: 5 } });
    expect(calls).toHaveLength(1);
    await clock.advance(23 * HOUR);
    expect(calls).toHaveLength(1);
    await engine.postToTask(id, { type: 'event', name: 'redstone', data: { on: true } });
    await clock.advance(1);
    expect(calls).toHaveLength(2);
    await engine.stop();
  });

  it('at most maxSteps steps per hour however often it is woken; the rest wait for the next hour (guards against a flood of events spending the day budget in an hour)', async () => {
    const { clock, engine, store, calls, id } = await setup({
      hour: { maxSteps: 3 },
      day: { maxTokens: 1000 },
    });
    for (let i = 0; i < 10; i++) {
      await engine.postToTask(id, { type: 'event', name: 'redstone', data: { i } });
      await clock.advance(60_000);
    }
    // 1 step at creation + 2 woken ones, then the hour's budget is used
    expect(calls).toHaveLength(3);
    let task = (await store.getTask(id)) as Task;
    expect(task.status).toBe('running');
    expect(task.wakeAt).toBe(T0 + HOUR);
    expect(periodExhausted(task, clock.now())).toMatchObject({
      period: 'hour',
      budget: 'maxSteps',
      limit: 3,
    });
    const steps = await store.getSteps(id);
    expect(steps.filter((s) => s.kind === 'period_budget')).toHaveLength(1);
    // next hour: it wakes by itself and sees all ten events in one step
    await clock.advance(HOUR);
    expect(calls).toHaveLength(4);
    expect(calls[3]).toBe(T0 + HOUR);
    task = (await store.getTask(id)) as Task;
    expect(task.memory).toEqual({ seen: 10 });
    expect(periodUsageOf(task, clock.now()).hour).toMatchObject({ start: T0 + HOUR, steps: 1, tokens: 100 });
    expect(periodUsageOf(task, clock.now()).day).toMatchObject({ start: T0, steps: 4, tokens: 400 });
    await engine.stop();
  });

  it('tokens per day: the day budget stops it until the next day, across a restart (guards against usage kept only in memory)', async () => {
    const { clock, engine, store, calls, id } = await setup({ day: { maxTokens: 300 } });
    for (let i = 0; i < 5; i++) {
      await engine.postToTask(id, { type: 'event', name: 'tick' });
      await clock.advance(2 * HOUR);
    }
    expect(calls).toHaveLength(3); // 3 × 100 tokens
    await engine.stop();
    // a new engine over the same store (a restart): still asleep until the next day
    const calls2: number[] = [];
    const again = new Engine({
      store,
      strategies: { resident: resident(calls2) },
      clock,
      tickIntervalMs: 1000,
    });
    await again.start();
    await again.postToTask(id, { type: 'event', name: 'tick' });
    await clock.advance(HOUR);
    expect(calls2).toHaveLength(0);
    await clock.advance(periodStart('day', clock.now()) + 24 * HOUR - clock.now());
    expect(calls2).toHaveLength(1);
    expect(calls2[0]).toBe(T0 + 24 * HOUR);
    await again.stop();
  });

  it('tasks without period budgets are not limited per period', async () => {
    const { clock, engine, calls, id } = await setup({});
    for (let i = 0; i < 6; i++) {
      await engine.postToTask(id, { type: 'event', name: 'tick' });
      await clock.advance(1000);
    }
    expect(calls).toHaveLength(7);
    await engine.stop();
  });
});
