// A finished task's progress message says how it finished. Through the real Engine and the in-memory store: a task
// whose last in-flight message was "calling fs_list" must not keep showing it once completed, failed or cancelled.
import { describe, expect, it } from 'vitest';
import { ManualClock } from './clock.js';
import { Engine } from './engine.js';
import { InMemoryTaskStore } from './in-memory-task-store.js';
import type { TaskStrategy, ToolCallRequest, ToolExecutor } from './ports.js';
import type { CommandOutcome, Decision, Task } from './types.js';

const CALL: Decision = { type: 'tool_call', command: 'fs_list', args: {}, message: 'calling fs_list' };

/** Runs one task: the strategy answers `first` then `then` forever; every call succeeds at once. */
async function run(then: Decision, opts: { maxToolCalls?: number; cancel?: string } = {}): Promise<Task> {
  const clock = new ManualClock(1_000);
  const store = new InMemoryTaskStore();
  let n = 0;
  const strategy: TaskStrategy = { decide: () => Promise.resolve(n++ === 0 ? CALL : then) };
  let release: (() => void) | undefined;
  const executor: ToolExecutor = {
    listCommands: () => [{ name: 'fs_list' }],
    execute: (_call: ToolCallRequest): Promise<CommandOutcome> =>
      opts.cancel !== undefined
        ? new Promise((resolve) => (release = () => resolve({ ok: true, result: null })))
        : Promise.resolve({ ok: true, result: ['a.lua'] }),
  };
  const engine = new Engine({
    store,
    strategies: { demo: strategy },
    executor,
    clock,
    tickIntervalMs: 1_000,
  });
  await engine.start();
  const budgets = opts.maxToolCalls !== undefined ? { maxToolCalls: opts.maxToolCalls } : {};
  const task = await engine.createTask({ kind: 'demo', prompt: 'p', budgets });
  for (let i = 0; i < 100; i++) {
    const t = await store.getTask(task.id);
    if (opts.cancel !== undefined && t?.status === 'waiting_for_command') {
      expect(t.progressMessage).toBe('calling fs_list');
      await engine.cancelTask(task.id, opts.cancel);
      release?.();
    }
    if (t && ['completed', 'failed', 'cancelled'].includes(t.status)) break;
    await clock.advance(0);
  }
  const done = (await store.getTask(task.id)) as Task;
  await engine.stop();
  return done;
}

describe('a finished task says how it finished (guards against a stale "calling …" on a done task)', () => {
  it('completed without a message of its own: the result message', async () => {
    const t = await run({ type: 'complete', result: { message: 'startup.lua has 3 lines', iterations: 2 } });
    expect(t.status).toBe('completed');
    expect(t.progressMessage).toBe('startup.lua has 3 lines');
  });

  it('completed with a message (the planner summary): that message', async () => {
    const t = await run({ type: 'complete', result: 'x', message: 'countdown works' });
    expect(t.progressMessage).toBe('countdown works');
  });

  it('completed with a result that has no text: "completed"', async () => {
    const t = await run({ type: 'complete', result: { lines: 3 } });
    expect(t.progressMessage).toBe('completed');
  });

  it('failed by its strategy: the error', async () => {
    const t = await run({
      type: 'fail',
      error: { code: 'agent_gave_up', message: 'no way to reach the chest' },
    });
    expect(t.status).toBe('failed');
    expect(t.progressMessage).toBe('failed: no way to reach the chest');
  });

  it('failed by the tool-call budget: the budget error, not the call it refused', async () => {
    const t = await run({ ...CALL, message: 'calling fs_read' }, { maxToolCalls: 1 });
    expect(t.status).toBe('failed');
    expect(t.error?.code).toBe('budget_exhausted');
    expect(t.progressMessage).toMatch(/^failed: /);
    expect(t.progressMessage).not.toContain('calling');
  });

  it('cancelled while a call runs: the cancel reason', async () => {
    const t = await run({ type: 'complete', result: 'x' }, { cancel: 'changed my mind' });
    expect(t.status).toBe('cancelled');
    expect(t.progressMessage).toBe('cancelled: changed my mind');
  });

  it('a message longer than one line of 200 characters is cut to one line', async () => {
    const t = await run({ type: 'complete', result: `line one\n${'x'.repeat(400)}` });
    expect(t.progressMessage?.length).toBe(200);
    expect(t.progressMessage).not.toContain('\n');
  });
});
