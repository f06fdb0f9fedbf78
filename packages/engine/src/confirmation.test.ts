import { describe, expect, it } from 'vitest';
import { ManualClock } from './clock.js';
import { confirmationQuestionId, isConfirmingAnswer } from './confirmation.js';
import { Engine } from './engine.js';
import { InMemoryTaskStore } from './in-memory-task-store.js';
import type { ConfirmationRule, TaskStrategy, ToolCallRequest, ToolExecutor } from './ports.js';
import type { CommandOutcome, HistoryEntry } from './types.js';

/** Deletes /startup.lua, then completes with what the last tool result said. */
function deleter(): TaskStrategy & { seen: HistoryEntry[][] } {
  const seen: HistoryEntry[][] = [];
  return {
    seen,
    decide(_task, history) {
      seen.push([...history]);
      const last = history.at(-1);
      if (last?.type === 'tool_result')
        return Promise.resolve({ type: 'complete', result: last.outcome as never });
      return Promise.resolve({ type: 'tool_call', command: 'fs_delete', args: { path: '/startup.lua' } });
    },
  };
}

class RecordingExecutor implements ToolExecutor {
  readonly calls: ToolCallRequest[] = [];
  execute(call: ToolCallRequest): Promise<CommandOutcome> {
    this.calls.push(call);
    return Promise.resolve({ ok: true, result: { deleted: true } });
  }
}

const rule: ConfirmationRule = (_task, command, args) =>
  command === 'fs_delete' ? `Allow fs_delete ${JSON.stringify(args)}?` : undefined;

function setup(store = new InMemoryTaskStore()) {
  const clock = new ManualClock(1_000);
  const executor = new RecordingExecutor();
  const strategy = deleter();
  const engine = new Engine({ store, strategies: { demo: strategy }, executor, clock, confirm: rule });
  const until = async (what: string, pred: () => Promise<boolean>) => {
    for (let i = 0; i < 200; i++) {
      if (await pred()) return;
      await clock.advance(0);
    }
    throw new Error(`timed out waiting for ${what}`);
  };
  const status = async (id: string) => (await store.getTask(id))?.status;
  return { store, clock, executor, strategy, engine, until, status };
}

const Q = confirmationQuestionId('t:call:1');

describe('confirmation of destructive calls', () => {
  it('holds a flagged call until a yes: nothing reaches the executor before it, the call runs after it', async () => {
    const h = setup();
    await h.engine.start();
    await h.engine.createTask({ id: 't', kind: 'demo', prompt: 'p' });
    await h.until('question', async () => (await h.status('t')) === 'waiting_for_user');
    await h.clock.advance(100);
    expect(h.executor.calls).toHaveLength(0);
    expect(await h.store.getCommandCall('t:call:1')).toMatchObject({ status: 'awaiting_confirmation' });
    expect(await h.store.listQuestions('t')).toEqual([
      expect.objectContaining({ questionId: Q, question: 'Allow fs_delete {"path":"/startup.lua"}?' }),
    ]);
    await h.engine.answerQuestion('t', Q, 'Yes');
    await h.until('completed', async () => (await h.status('t')) === 'completed');
    expect(h.executor.calls.map((c) => c.command)).toEqual(['fs_delete']);
    expect((await h.store.getTask('t'))?.result).toEqual({ ok: true, result: { deleted: true } });
    await h.engine.stop();
  });

  it('turns any other answer into the call\'s failed result "refused", which the strategy sees; the command never runs', async () => {
    const h = setup();
    await h.engine.start();
    await h.engine.createTask({ id: 't', kind: 'demo', prompt: 'p' });
    await h.until('question', async () => (await h.status('t')) === 'waiting_for_user');
    await h.engine.answerQuestion('t', Q, 'no, keep it');
    await h.until('completed', async () => (await h.status('t')) === 'completed');
    expect(h.executor.calls).toHaveLength(0);
    const result = (await h.store.getTask('t'))?.result as {
      ok: boolean;
      error: { code: string; message: string };
    };
    expect(result.ok).toBe(false);
    expect(result.error.code).toBe('refused');
    expect(result.error.message).toContain('no, keep it');
    expect(await h.store.getCommandCall('t:call:1')).toMatchObject({ status: 'failed' });
  });

  it('keeps a pending confirmation across a restart: the new engine sends nothing until the yes', async () => {
    const store = new InMemoryTaskStore();
    const first = setup(store);
    await first.engine.start();
    await first.engine.createTask({ id: 't', kind: 'demo', prompt: 'p' });
    await first.until('question', async () => (await first.status('t')) === 'waiting_for_user');
    await first.engine.stop();
    const second = setup(store);
    await second.engine.start();
    await second.clock.advance(5_000);
    expect(second.executor.calls).toHaveLength(0);
    expect(await second.status('t')).toBe('waiting_for_user');
    await second.engine.answerQuestion('t', Q, 'y');
    await second.until('completed', async () => (await second.status('t')) === 'completed');
    expect(second.executor.calls).toHaveLength(1);
    expect(first.executor.calls).toHaveLength(0);
  });

  it('cancels the held call with its task', async () => {
    const h = setup();
    await h.engine.start();
    await h.engine.createTask({ id: 't', kind: 'demo', prompt: 'p' });
    await h.until('question', async () => (await h.status('t')) === 'waiting_for_user');
    await h.engine.cancelTask('t');
    expect(await h.store.getCommandCall('t:call:1')).toMatchObject({ status: 'cancelled' });
    expect(h.executor.calls).toHaveLength(0);
  });

  it('counts only a short explicit yes as a yes', () => {
    for (const y of ['yes', 'Y', 'ok.', ' allow ', 'YES!']) expect(isConfirmingAnswer(y)).toBe(true);
    for (const n of ['no', '', 'yes but not that file', 'sure why not', 'nope'])
      expect(isConfirmingAnswer(n)).toBe(false);
  });
});
