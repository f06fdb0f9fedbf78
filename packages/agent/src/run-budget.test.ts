import {
  systemClock,
  type Decision,
  type HistoryEntry,
  type StepContext,
  type StoredStep,
  type Task,
} from '@ccagent/engine';
import { describe, expect, it } from 'vitest';
import { withRunBudget } from './run-budget.js';

const task = (over: Partial<Task> = {}): Task => ({
  id: 't-1',
  kind: 'k',
  status: 'running',
  clientId: null,
  prompt: 'p',
  allowedCommands: [],
  memory: null,
  metadata: {},
  budgets: {},
  counters: { steps: 4, toolCalls: 0, questions: 0 },
  createdAt: 0,
  updatedAt: 0,
  ...over,
});
const ctx = (step: number): StepContext => ({
  signal: new AbortController().signal,
  clock: systemClock,
  logger: { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} },
  step,
  callModel: (_m, fn) => fn(new AbortController().signal),
  logStep: (r) => Promise.resolve({ ...r, taskId: 't-1', seq: 1, step, at: 0 }),
  availableCommands: () => [],
});
const model = (step: number, prompt: number, content = ''): StoredStep => ({
  taskId: 't-1',
  seq: step,
  step,
  at: 0,
  kind: 'native',
  output: { content },
  usage: { promptTokens: prompt, completionTokens: 5 },
});

describe('withRunBudget', () => {
  it('rebuilds the run’s token counts from the step log after a restart, from the last resume on (guards: a restart giving a run fresh tokens)', async () => {
    let asked = 0;
    const inner = {
      decide: (): Promise<Decision> => {
        asked++;
        return Promise.resolve({ type: 'continue' });
      },
    };
    const steps = [model(1, 900, 'old run'), model(3, 400, 'checked the farm'), model(4, 700)];
    const history = [
      { type: 'resume', reason: 'message', from: 'completed', step: 2, taskId: 't-1', seq: 1, at: 0 },
    ] as HistoryEntry[];
    const s = withRunBudget(inner, {
      budgetOf: () => ({ maxPromptTokens: 1000 }),
      readSteps: () => Promise.resolve(steps),
    });
    const d = await s.decide(task(), history, ctx(5));
    expect(asked).toBe(0);
    expect(d).toMatchObject({
      type: 'complete',
      result: { stopped: 'token_budget', tokens: { prompt: 1100 } },
    });
    const message = (d as unknown as { result: { message: string } }).result.message;
    expect(message).toContain('1100 of its 1000 prompt tokens');
    expect(message).toContain('checked the farm');
    expect(message).not.toContain('old run');
  });

  it('passes a task without token budgets through, adding only the progress of its step budget', async () => {
    let reads = 0;
    const s = withRunBudget(
      { decide: () => Promise.resolve({ type: 'continue', message: 'thinking' } as Decision) },
      {
        budgetOf: () => ({ maxSteps: 10 }),
        readSteps: () => {
          reads++;
          return Promise.resolve([]);
        },
      },
    );
    const d = await s.decide(task(), [], ctx(5));
    expect(reads).toBe(0);
    expect(d).toEqual({ type: 'continue', message: 'thinking · step 5/10', progress: 0.5 });
  });
});
