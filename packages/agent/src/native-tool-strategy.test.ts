import { systemClock, type Decision, type JsonValue, type StepContext, type Task } from '@ccagent/engine';
import { OllamaChatModel } from '@ccagent/ollama';
import { describe, expect, it } from 'vitest';
import { isAgentError } from './agent-error.js';
import { HistoryBuilder } from './test-history.js';
import {
  createNativeToolStrategy,
  nativeMemoryValidations,
  nativeOptionsFromEnv,
  toolDefinitions,
} from './native-tool-strategy.js';

describe('nativeOptionsFromEnv', () => {
  it('reads AGENT_MAX_ITERATIONS, AGENT_SYSTEM_PROMPT and TOOL_EXECUTION_TIMEOUT', () => {
    expect(
      nativeOptionsFromEnv({
        AGENT_MAX_ITERATIONS: '25',
        AGENT_SYSTEM_PROMPT: 'Be brief.',
        TOOL_EXECUTION_TIMEOUT: '30000',
        UNRELATED: 'x',
      }),
    ).toEqual({ maxIterations: 25, systemPrompt: 'Be brief.', toolTimeoutMs: 30000 });
  });

  it('ignores unset and empty variables', () => {
    expect(nativeOptionsFromEnv({ AGENT_MAX_ITERATIONS: '', AGENT_SYSTEM_PROMPT: undefined })).toEqual({});
  });

  it('rejects an invalid value with the variable name (guards against a typo silently meaning "default")', () => {
    for (const env of [
      { AGENT_MAX_ITERATIONS: 'ten' },
      { AGENT_MAX_ITERATIONS: '0' },
      { TOOL_EXECUTION_TIMEOUT: '1.5' },
    ]) {
      let caught: unknown;
      try {
        nativeOptionsFromEnv(env);
      } catch (err) {
        caught = err;
      }
      expect(isAgentError(caught, 'invalid_config')).toBe(true);
      expect((caught as Error).message).toContain(Object.keys(env)[0]);
    }
  });
});

describe('toolDefinitions', () => {
  it('uses each command JSON Schema as the tool parameters, and an empty object schema when there is none', () => {
    expect(
      toolDefinitions([
        { name: 'fs_read', description: 'Read a file.', argsSchema: { type: 'object', required: ['path'] } },
        { name: 'ping' },
      ]),
    ).toEqual([
      { name: 'fs_read', description: 'Read a file.', parameters: { type: 'object', required: ['path'] } },
      { name: 'ping', description: 'ping', parameters: { type: 'object', properties: {} } },
    ]);
  });
});

// No model is reached in these tests unless they say so: the calls come from the memory's turns and the history,
// and a step that would call the model is stopped at the engine's limiter (ctx.callModel) with a marker error.
const strategy = createNativeToolStrategy({
  model: { model: new OllamaChatModel({ host: 'http://127.0.0.1:9' }), name: 'unused' },
});
const noModel = new Error('the model would have been called');
const logged: string[] = [];
const ctxAt = (step: number, commands = ['noop']): StepContext => ({
  signal: new AbortController().signal,
  clock: systemClock,
  logger: { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} },
  step,
  callModel: () => Promise.reject(noModel),
  logStep: (record) => {
    logged.push(record.kind);
    return Promise.resolve({ ...record, taskId: 't1', seq: logged.length, step, at: 1 });
  },
  availableCommands: () => commands.map((name) => ({ name })),
});
const task = (memory: JsonValue, toolCalls = 0): Task => ({
  id: 't1',
  kind: 'native',
  status: 'running',
  clientId: null,
  prompt: 'loop',
  allowedCommands: [],
  memory,
  metadata: {},
  budgets: {},
  counters: { steps: 0, toolCalls, questions: 0 },
  createdAt: 1,
  updatedAt: 1,
});
const noop = (i: number) => ({ name: 'noop', arguments: { i } });
/** A stored version 2 memory whose last turn asked for `calls`. */
const stored = (calls: JsonValue[] = [0, 1, 2].map(noop), callsBefore = 0): JsonValue => ({
  v: 2,
  strategy: 'native',
  turns: [{ content: '', calls, callsBefore }],
  modelFailures: 0,
});
const ok = { ok: true as const, result: null };
const argsOf = (d: Decision) => (d.type === 'tool_call' ? d.args : d.type);
/**
 * Decide the next step of a task with `memory` after `h`, as the engine would: the step is the builder's next, the
 * task's tool call counter the number of tool_call entries (the engine raises it in the same commit as each entry).
 */
const decideAfter = (memory: JsonValue, h: HistoryBuilder, commands?: string[]) =>
  strategy.decide(
    task(memory, h.entries.filter((e) => e.type === 'tool_call').length),
    h.entries,
    ctxAt(h.step, commands),
  );

describe('native dispatch from the history', () => {
  it('hands out one call per step and returns no memory on those steps (guards against re-encoding, hashing and rewriting the memory on every round trip)', async () => {
    const m = stored();
    const h = new HistoryBuilder();
    for (const i of [0, 1, 2]) {
      const d = await decideAfter(m, h);
      expect(d).toMatchObject({ type: 'tool_call', command: 'noop', args: { i } });
      expect(d).not.toHaveProperty('memory');
      h.call('noop', { i }, ok);
    }
    // Every call is in the history: the next step asks the model (refused here), with the memory it was given.
    logged.length = 0;
    const after = await decideAfter(m, h);
    expect(logged).toEqual(['native']);
    expect(after).toMatchObject({
      type: 'continue',
      memory: { turns: [{ calls: [noop(0), noop(1), noop(2)] }] },
    });
  });

  it('counts only the tool_call entries after the last turn began (guards against skipping or repeating a call of the current turn)', async () => {
    const m: JsonValue = {
      v: 2,
      strategy: 'native',
      turns: [
        { content: 'first', calls: [noop(0), noop(1)], callsBefore: 0 },
        { content: 'second', calls: [noop(10), noop(11)], callsBefore: 2 },
      ],
      modelFailures: 0,
    };
    const h = new HistoryBuilder().call('noop', { i: 0 }, ok).call('noop', { i: 1 }, ok);
    expect(argsOf(await decideAfter(m, h))).toEqual({ i: 10 });
    h.call('noop', { i: 10 }, ok);
    expect(argsOf(await decideAfter(m, h))).toEqual({ i: 11 });
  });

  it('rejects an unknown tool in a new memory and hands out the next call in the same step (guards against running or re-checking it)', async () => {
    const m = stored([{ name: 'cat', arguments: {} }, noop(1)]);
    const h = new HistoryBuilder();
    const d = await decideAfter(m, h);
    expect(d).toMatchObject({ type: 'tool_call', args: { i: 1 } });
    const changed = d.memory as { turns: Array<{ calls: Array<{ rejected?: string }> }> };
    expect(changed.turns[0]?.calls[0]?.rejected).toBe('unknown tool "cat"; the available tools are: noop');
    h.call('noop', { i: 1 }, ok);
    // With the new memory, the rejected call counts as done: the model is asked next.
    logged.length = 0;
    await decideAfter(d.memory ?? null, h);
    expect(logged).toEqual(['native']);
  });

  it('a call the engine refused (a note, no tool_call entry) is rejected with the note and not handed out again (guards against an endless loop of refused calls)', async () => {
    const m = stored();
    const h = new HistoryBuilder().call('noop', { i: 0 }, ok);
    expect(argsOf(await decideAfter(m, h))).toEqual({ i: 1 });
    const refusal = 'command "noop" is not allowed for this task; allowed: other';
    h.note(refusal);
    const d = await decideAfter(m, h);
    expect(d).toMatchObject({ type: 'tool_call', args: { i: 2 } });
    const changed = d.memory as { turns: Array<{ calls: Array<{ rejected?: string }> }> };
    expect(changed.turns[0]?.calls.map((c) => c.rejected)).toEqual([undefined, refusal, undefined]);
    h.call('noop', { i: 2 }, ok);
    logged.length = 0;
    expect(await decideAfter(d.memory ?? null, h)).toMatchObject({ type: 'continue' });
    expect(logged).toEqual(['native']);
  });

  it('a note older than the previous step refuses nothing (guards against rejecting a call that was never handed out)', async () => {
    const h = new HistoryBuilder().note('an old note');
    h.step++;
    const d = await decideAfter(stored(), h);
    expect(d).toMatchObject({ type: 'tool_call', args: { i: 0 } });
    expect(d).not.toHaveProperty('memory');
  });

  it('a memory counting more calls than the task made (given at creation) is re-anchored once, then handed out call by call (guards against handing out its first call forever)', async () => {
    const m = stored([noop(0), noop(1)], 5);
    const h = new HistoryBuilder();
    const d1 = await decideAfter(m, h);
    expect(d1).toMatchObject({ type: 'tool_call', args: { i: 0 }, memory: { turns: [{ callsBefore: 0 }] } });
    h.call('noop', { i: 0 }, ok);
    const d2 = await decideAfter(d1.memory ?? null, h);
    expect(d2).toMatchObject({ type: 'tool_call', args: { i: 1 } });
    expect(d2).not.toHaveProperty('memory');
  });

  it('resumes a version 1 memory written by earlier builds: dispatched calls are matched to the history, queued ones handed out in order (guards against a stored task skipping or repeating calls after an upgrade)', async () => {
    const v1: JsonValue = {
      v: 1,
      strategy: 'native',
      turns: [
        {
          content: 'first',
          calls: [
            { name: 'noop', arguments: { i: 0 }, status: 'dispatched' },
            { name: 'cat', arguments: {}, status: 'rejected', error: 'unknown tool "cat"' },
          ],
        },
        {
          content: 'second',
          calls: [
            { name: 'noop', arguments: { i: 1 }, status: 'dispatched' },
            { name: 'noop', arguments: { i: 2 }, status: 'queued' },
            { name: 'noop', arguments: { i: 3 }, status: 'queued' },
          ],
        },
      ],
      modelFailures: 0,
    };
    const h = new HistoryBuilder().call('noop', { i: 0 }, ok).call('noop', { i: 1 }, ok);
    const before = nativeMemoryValidations();
    for (const i of [2, 3]) {
      const d = await decideAfter(v1, h);
      expect(d).toMatchObject({ type: 'tool_call', args: { i } });
      expect(d).not.toHaveProperty('memory');
      h.call('noop', { i }, ok);
    }
    expect(nativeMemoryValidations()).toBe(before + 1);
    // Done: the model is asked, and a memory it writes is version 2 with both turns.
    const after = await decideAfter(v1, h);
    expect(after).toMatchObject({
      type: 'continue',
      memory: {
        v: 2,
        turns: [
          {
            content: 'first',
            callsBefore: 0,
            calls: [noop(0), { name: 'cat', rejected: 'unknown tool "cat"' }],
          },
          { content: 'second', callsBefore: 1, calls: [noop(1), noop(2), noop(3)] },
        ],
        modelFailures: 1,
      },
    });
  });
});

describe('native memory validation cache', () => {
  it('validates a memory object once: the memories it returns and objects seen before are not validated again (guards against re-parsing kilobytes of memory every step)', async () => {
    const m0 = stored();
    const h = new HistoryBuilder();
    const before = nativeMemoryValidations();
    expect(argsOf(await decideAfter(m0, h))).toEqual({ i: 0 });
    expect(nativeMemoryValidations()).toBe(before + 1);
    h.call('noop', { i: 0 }, ok);
    expect(argsOf(await decideAfter(m0, h))).toEqual({ i: 1 });
    h.call('noop', { i: 1 }, ok);
    expect(argsOf(await decideAfter(m0, h))).toEqual({ i: 2 });
    expect(nativeMemoryValidations()).toBe(before + 1);
    // A memory the strategy built (a rejection) is registered as valid: the next step does not validate it.
    const built = await decideAfter(
      stored([{ name: 'cat', arguments: {} }, noop(1), noop(2)]),
      new HistoryBuilder(),
    );
    const count = nativeMemoryValidations();
    const h2 = new HistoryBuilder().call('noop', { i: 1 }, ok);
    expect(argsOf(await decideAfter(built.memory ?? null, h2))).toEqual({ i: 2 });
    expect(nativeMemoryValidations()).toBe(count);
  });

  it('re-validates a new object, also a changed copy of a known memory, and never serves a stale validation (guards against a cache keyed by content or reused for a different object)', async () => {
    const m0 = stored();
    const h = new HistoryBuilder().call('noop', { i: 0 }, ok);
    expect(argsOf(await decideAfter(m0, h))).toEqual({ i: 1 });
    // A copy in which call 1 is rejected: validated again, and its content counts.
    const copy = structuredClone(m0) as { turns: Array<{ calls: Array<{ rejected?: string }> }> };
    (copy.turns[0]?.calls[1] as { rejected?: string }).rejected = 'not run';
    let count = nativeMemoryValidations();
    expect(argsOf(await decideAfter(copy as unknown as JsonValue, h))).toEqual({ i: 2 });
    expect(nativeMemoryValidations()).toBe(count + 1);
    // A copy that no longer fits the schema is validated and refused: the strategy starts afresh (asks the model,
    // which the limiter refuses here: one model failure on an empty memory).
    const broken = { ...structuredClone(m0 as object), turns: 'not a list' };
    count = nativeMemoryValidations();
    logged.length = 0;
    const fresh = await decideAfter(broken as unknown as JsonValue, h);
    expect(nativeMemoryValidations()).toBe(count + 1);
    expect(logged).toEqual(['native']);
    expect(fresh).toMatchObject({ type: 'continue', memory: { v: 2, turns: [], modelFailures: 1 } });
  });

  it('the memories it returns cannot be changed in place (guards against a cached validation going stale)', async () => {
    const d = await decideAfter(stored([{ name: 'cat', arguments: {} }, noop(1)]), new HistoryBuilder());
    const mem = d.memory as { modelFailures: number; turns: Array<{ calls: unknown[] }> };
    expect(() => {
      mem.modelFailures = 7;
    }).toThrow(TypeError);
    expect(() => mem.turns.push({ calls: [] })).toThrow(TypeError);
    expect(() => mem.turns[0]?.calls.pop()).toThrow(TypeError);
    expect(mem.modelFailures).toBe(0);
  });
});
