import { systemClock, type Decision, type JsonValue, type StepContext, type Task } from '@ccagent/engine';
import { OllamaChatModel } from '@ccagent/ollama';
import { describe, expect, it } from 'vitest';
import { isAgentError } from './agent-error.js';
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

describe('native memory validation cache', () => {
  // No model is reached in these steps: the calls come from the memory's queue, and a step that would call the model
  // is stopped at the engine's limiter (ctx.callModel) with a marker error.
  const strategy = createNativeToolStrategy({
    model: { model: new OllamaChatModel({ host: 'http://127.0.0.1:9' }), name: 'unused' },
  });
  const noModel = new Error('the model would have been called');
  const logged: string[] = [];
  const ctx: StepContext = {
    signal: new AbortController().signal,
    clock: systemClock,
    logger: { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} },
    step: 1,
    callModel: () => Promise.reject(noModel),
    logStep: (record) => {
      logged.push(record.kind);
      return Promise.resolve({ ...record, taskId: 'native-cache', seq: logged.length, step: 1, at: 1 });
    },
    availableCommands: () => [{ name: 'noop' }],
  };
  const task = (memory: JsonValue): Task => ({
    id: 'native-cache',
    kind: 'native',
    status: 'running',
    clientId: null,
    prompt: 'loop',
    allowedCommands: [],
    memory,
    metadata: {},
    budgets: {},
    counters: { steps: 0, toolCalls: 0, questions: 0 },
    createdAt: 1,
    updatedAt: 1,
  });
  const queuedTurn = {
    content: '',
    calls: [0, 1, 2].map((i) => ({ name: 'noop', arguments: { i }, status: 'queued' })),
  };
  const stored = (): JsonValue => ({ v: 1, strategy: 'native', turns: [queuedTurn], modelFailures: 0 });
  const argsOf = (d: Decision) => (d.type === 'tool_call' ? d.args : d.type);

  it('validates a memory object once: the memories it returns and objects seen before are not validated again (guards against re-parsing kilobytes of memory every step)', async () => {
    const m0 = stored();
    const before = nativeMemoryValidations();
    const d1 = await strategy.decide(task(m0), [], ctx);
    expect(argsOf(d1)).toEqual({ i: 0 });
    expect(nativeMemoryValidations()).toBe(before + 1);
    const d2 = await strategy.decide(task(d1.memory ?? null), [], ctx);
    const d3 = await strategy.decide(task(d2.memory ?? null), [], ctx);
    expect([argsOf(d2), argsOf(d3)]).toEqual([{ i: 1 }, { i: 2 }]);
    expect(nativeMemoryValidations()).toBe(before + 1);
    // The step did not change the memory it was given: the same object still hands out the first call.
    expect(argsOf(await strategy.decide(task(m0), [], ctx))).toEqual({ i: 0 });
    expect(nativeMemoryValidations()).toBe(before + 1);
  });

  it('re-validates a new object, also a changed copy of a known memory, and never serves a stale validation (guards against a cache keyed by content or reused for a different object)', async () => {
    const d1 = await strategy.decide(task(stored()), [], ctx);
    const known = d1.memory as { turns: Array<{ calls: Array<{ status: string }> }> };
    // A copy in which call 1 was dispatched too: validated again, and its content counts.
    const copy = structuredClone(known);
    (copy.turns[0]?.calls[1] as { status: string }).status = 'dispatched';
    let count = nativeMemoryValidations();
    expect(argsOf(await strategy.decide(task(copy as unknown as JsonValue), [], ctx))).toEqual({ i: 2 });
    expect(nativeMemoryValidations()).toBe(count + 1);
    // A copy that no longer fits the schema is validated and refused: the strategy starts afresh (asks the model,
    // which the limiter refuses here: one model failure on an empty memory).
    const broken = { ...structuredClone(known), turns: 'not a list' };
    count = nativeMemoryValidations();
    logged.length = 0;
    const fresh = await strategy.decide(task(broken as unknown as JsonValue), [], ctx);
    expect(nativeMemoryValidations()).toBe(count + 1);
    expect(logged).toEqual(['native']);
    expect(fresh).toMatchObject({ type: 'continue', memory: { turns: [], modelFailures: 1 } });
  });

  it('the memories it returns cannot be changed in place (guards against a cached validation going stale)', async () => {
    const d = await strategy.decide(task(stored()), [], ctx);
    const mem = d.memory as { modelFailures: number; turns: Array<{ calls: unknown[] }> };
    expect(() => {
      mem.modelFailures = 7;
    }).toThrow(TypeError);
    expect(() => mem.turns.push({ calls: [] })).toThrow(TypeError);
    expect(() => mem.turns[0]?.calls.pop()).toThrow(TypeError);
    expect(mem.modelFailures).toBe(0);
  });
});
