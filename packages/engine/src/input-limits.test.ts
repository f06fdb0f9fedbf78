import { DEFAULT_INPUT_LIMITS } from '@ccagent/protocol';
import { describe, expect, it } from 'vitest';
import { ManualClock } from './clock.js';
import { Engine } from './engine.js';
import { isEngineError } from './engine-error.js';
import { InMemoryTaskStore } from './in-memory-task-store.js';
import { taskInputProblem } from './input-limits.js';
import type { JsonValue } from './types.js';

/** An object nested `depth` levels deep (built without recursion). */
function nested(depth: number): JsonValue {
  let v: JsonValue = {};
  for (let i = 1; i < depth; i++) v = { a: v };
  return v;
}

function engine(limits?: { maxPromptBytes?: number; maxContextBytes?: number; maxDepth?: number }) {
  const store = new InMemoryTaskStore();
  const e = new Engine({
    store,
    strategies: {},
    clock: new ManualClock(0),
    tickIntervalMs: 0,
    ...(limits ? { inputLimits: limits } : {}),
  });
  return { e, store };
}

async function refusal(p: Promise<unknown>): Promise<{ code: string; field: unknown; message: string }> {
  try {
    await p;
  } catch (err) {
    if (isEngineError(err)) return { code: err.code, field: err.details?.['field'], message: err.message };
    throw err;
  }
  throw new Error('the task was created');
}

describe('the size rule of a new task', () => {
  it('refuses a prompt over maxPromptBytes (UTF-8 bytes) by default, and stores nothing (guards against a 15 MiB prompt stored and listed)', async () => {
    const { e, store } = engine();
    const max = DEFAULT_INPUT_LIMITS.maxPromptBytes;
    // Two bytes a character: half the limit in characters is exactly the limit.
    await e.createTask({ kind: 'k', prompt: 'é'.repeat(max / 2) });
    const r = await refusal(e.createTask({ kind: 'k', prompt: `${'é'.repeat(max / 2)}x` }));
    expect(r).toMatchObject({ code: 'invalid_input', field: 'prompt' });
    expect(r.message).toContain('maxPromptBytes');
    expect(await store.listTasks({})).toHaveLength(1);
  });

  it('refuses a context nested thousands deep without overflowing the stack, and one over maxContextBytes', async () => {
    const { e, store } = engine({ maxContextBytes: 1000 });
    expect(await refusal(e.createTask({ kind: 'k', prompt: 'p', context: nested(100_000) }))).toMatchObject({
      code: 'invalid_input',
      field: 'context',
    });
    expect(await refusal(e.createTask({ kind: 'k', prompt: 'p', context: nested(65) }))).toMatchObject({
      field: 'context',
    });
    expect(
      await refusal(e.createTask({ kind: 'k', prompt: 'p', context: { text: 'x'.repeat(1000) } })),
    ).toMatchObject({ field: 'context' });
    await e.createTask({ kind: 'k', prompt: 'p', context: nested(64) });
    expect(await store.listTasks({})).toHaveLength(1);
  });

  it('takes its limits from the engine options', () => {
    const limits = { maxPromptBytes: 4, maxContextBytes: 10, maxDepth: 2 };
    expect(taskInputProblem({ prompt: 'abcd' }, limits)).toBeUndefined();
    expect(taskInputProblem({ prompt: 'abcde' }, limits)?.field).toBe('prompt');
    expect(taskInputProblem({ prompt: '', context: [[1]] }, limits)).toBeUndefined();
    expect(taskInputProblem({ prompt: '', context: [[[1]]] }, limits)?.field).toBe('context');
    expect(taskInputProblem({ prompt: '', context: 'x'.repeat(9) }, limits)?.field).toBe('context');
  });
});
