// A resident agent over a simulated week, through the real engine and the real native loop with the `wait` tool, on
// the engine's manual clock (nothing sleeps): an event every hour wakes it, the model (a scripted ChatModel: the
// port only) answers each wake with a note and `wait` for a day. Guards against the three ways a days-long agent
// goes wrong: model calls while it waits (idle must cost nothing), a memory and a prompt that grow with its age
// (compaction must hold them bounded), and a flood of events spending more than the hour's budget.
import {
  Engine,
  InMemoryTaskStore,
  ManualClock,
  PERIOD_METADATA_KEYS,
  type JsonValue,
  type Task,
} from '@ccagent/engine';
import { describe, expect, it } from 'vitest';
import { createNativeToolStrategy } from '../src/index.js';

const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 10, 2);

describe('a resident agent over a simulated week', () => {
  it('makes no model call while idle, keeps memory and prompt bounded over 168 wakes, and holds the hourly step budget', async () => {
    const clock = new ManualClock(T0);
    const prompts: number[] = [];
    const calls: number[] = [];
    let n = 0;
    const model = {
      provider: 'scripted',
      chat: (req: { messages: Array<{ content: string }> }) => {
        calls.push(clock.now());
        const chars = req.messages.reduce((a, m) => a + m.content.length, 0);
        prompts.push(chars);
        n++;
        return Promise.resolve({
          model: 'scripted',
          message: {
            role: 'assistant' as const,
            // a reply of some length, so an unbounded memory would show
            content: `Check ${n}: the wheat is growing; nothing to do. ${'Field notes. '.repeat(20)}`,
            toolCalls: [{ name: 'wait', arguments: { seconds: 86_400, reason: 'next event' } }],
          },
          // counted like a real server: about 4 characters a token (the loop measures its density from this)
          usage: { promptEvalCount: Math.ceil(chars / 4), evalCount: 60 },
        });
      },
    };
    const strategy = createNativeToolStrategy({
      model: { model, name: 'scripted', options: { numCtx: 4096 } },
      waitTool: true,
      maxIterations: 1_000_000,
      contextTokens: 1500,
    });
    const store = new InMemoryTaskStore();
    const engine = new Engine({ store, strategies: { resident: strategy }, clock, tickIntervalMs: 1000 });
    await engine.start();
    const task = await engine.createTask({
      kind: 'resident',
      prompt: 'Watch the farm: when an event says the wheat is ripe, harvest it.',
      metadata: { [PERIOD_METADATA_KEYS.budgets]: { hour: { maxSteps: 3 } } as JsonValue },
    });
    await clock.advance(1);
    expect(calls).toHaveLength(1);

    // idle for 23 hours: not one model call
    await clock.advance(23 * HOUR);
    expect(calls).toHaveLength(1);

    const memoryBytes: number[] = [];
    for (let h = 0; h < 7 * 24; h++) {
      await engine.postToTask(task.id, { type: 'event', name: 'farm', data: { hour: h, ripe: false } });
      await clock.advance(HOUR);
      if (h % 24 === 23) {
        const t = (await store.getTask(task.id)) as Task;
        memoryBytes.push(JSON.stringify(t.memory).length);
      }
    }
    // one wake per event
    expect(calls).toHaveLength(1 + 7 * 24);
    const t = (await store.getTask(task.id)) as Task;
    expect(t.status).toBe('running');
    // memory: bounded — days 3 to 7 no bigger than days 1 and 2 (give or take the window's chunked moves), where
    // without compaction it would grow by a turn an hour (about 12 KB a day here)
    expect(Math.max(...memoryBytes.slice(2))).toBeLessThanOrEqual(1.2 * Math.max(...memoryBytes.slice(0, 2)));
    expect(Math.max(...memoryBytes)).toBeLessThan(8000);
    // prompts: bounded by the context budget (1500 tokens ≈ 6000 characters), not growing with the week
    expect(Math.max(...prompts)).toBeLessThan(6000 + 2000);
    expect(Math.max(...prompts.slice(-24))).toBeLessThanOrEqual(Math.max(...prompts.slice(24, 48)) + 200);

    // a flood: 10 events in one hour give at most 3 model calls in that hour (the hourly maxSteps)
    const before = calls.length;
    const hourStart = Math.ceil(clock.now() / HOUR) * HOUR;
    await clock.advance(hourStart - clock.now());
    for (let i = 0; i < 10; i++) {
      await engine.postToTask(task.id, { type: 'event', name: 'farm', data: { flood: i } });
      await clock.advance(60_000);
    }
    const inHour = calls.slice(before).filter((at) => at >= hourStart && at < hourStart + HOUR);
    expect(inHour.length).toBe(3);
    await clock.advance(HOUR);
    // the next hour's first step sees what was posted meanwhile
    expect(calls.length).toBe(before + 4);
    await engine.stop();
  }, 60_000);
});
