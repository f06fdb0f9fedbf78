import { systemClock, type Decision, type JsonValue, type StepContext, type Task } from '@ccagent/engine';
import { OllamaChatModel } from '@ccagent/models';
import { describe, expect, it } from 'vitest';
import { isAgentError } from './agent-error.js';
import { HistoryBuilder } from '../test/support/test-history.js';
import {
  createNativeToolStrategy,
  nativeMemoryValidations,
  nativeOptionsFromEnv,
  toolDefinitions,
} from './native-tool-strategy.js';

describe('nativeOptionsFromEnv', () => {
  it('reads AGENT_MAX_ITERATIONS, AGENT_SYSTEM_PROMPT, AGENT_ENABLED and TOOL_EXECUTION_TIMEOUT in seconds (guards: 30 read as 30 ms)', () => {
    expect(
      nativeOptionsFromEnv({
        AGENT_MAX_ITERATIONS: '25',
        AGENT_SYSTEM_PROMPT: 'Be brief.',
        TOOL_EXECUTION_TIMEOUT: '30',
        AGENT_ENABLED: 'false',
        UNRELATED: 'x',
      }),
    ).toEqual({ maxIterations: 25, systemPrompt: 'Be brief.', toolTimeoutMs: 30_000, agentEnabled: false });
    expect(nativeOptionsFromEnv({ TOOL_EXECUTION_TIMEOUT: '2.5', AGENT_ENABLED: 'YES' })).toEqual({
      toolTimeoutMs: 2500,
      agentEnabled: true,
    });
  });

  it('ignores unset and empty variables', () => {
    expect(nativeOptionsFromEnv({ AGENT_MAX_ITERATIONS: '', AGENT_SYSTEM_PROMPT: undefined })).toEqual({});
  });

  it('rejects an invalid value with the variable name (guards against a typo silently meaning "default")', () => {
    for (const env of [
      { AGENT_MAX_ITERATIONS: 'ten' },
      { AGENT_MAX_ITERATIONS: '0' },
      { TOOL_EXECUTION_TIMEOUT: '0' },
      { TOOL_EXECUTION_TIMEOUT: 'soon' },
      { AGENT_ENABLED: 'maybe' },
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

describe('native conversation window', () => {
  // A model that answers every request with one more `noop` call and keeps the requests it was sent. It stands for
  // the ChatModel port only; the real client against the fake Ollama server is covered in test/native-tool-loop.
  const recording = () => {
    const requests: Array<{ messages: Array<{ role: string; content: string }> }> = [];
    let n = 0;
    const role = {
      name: 'scripted',
      options: { numCtx: 8192 },
      model: {
        provider: 'scripted',
        chat: (req: { messages: Array<{ role: string; content: string }> }) => {
          requests.push({ messages: req.messages });
          return Promise.resolve({
            model: 'scripted',
            message: {
              role: 'assistant' as const,
              content: '',
              toolCalls: [{ name: 'noop', arguments: { i: 10_000 + n++ } }],
            },
            usage: {},
          });
        },
      },
    };
    return { role, requests };
  };
  const modelCtx = (step: number): StepContext => ({
    ...ctxAt(step),
    callModel: (_name, fn) => fn(new AbortController().signal),
  });
  const chars = (messages: Array<{ content: string }>) => messages.reduce((a, m) => a + m.content.length, 0);
  /** A version 2 memory of `count` one-call turns starting at the task's turn `dropped`. */
  const turnsMemory = (count: number, dropped = 0): JsonValue => ({
    v: 2,
    strategy: 'native',
    dropped,
    turns: Array.from({ length: count }, (_, k) => ({
      content: '',
      calls: [noop(dropped + k)],
      callsBefore: dropped + k,
    })),
    modelFailures: 0,
  });

  it('a model step reads the history back only as far as the oldest turn it keeps (guards against every model call scanning a night-long task history: O(n^2) over the task)', async () => {
    const { role, requests } = recording();
    const s = createNativeToolStrategy({ model: role, maxIterations: 10_000 });
    const h = new HistoryBuilder();
    for (let i = 0; i < 5000; i++) h.call('noop', { i }, { ok: true, result: { echo: i } });
    let reads = 0;
    const counted = new Proxy(h.entries, {
      get(target, key, receiver) {
        if (typeof key === 'string' && /^\d+$/.test(key)) reads++;
        return Reflect.get(target, key, receiver) as unknown;
      },
    });
    const d = await s.decide(task(turnsMemory(10, 4990), 5000), counted, modelCtx(h.step));
    expect(d).toMatchObject({ type: 'tool_call', args: { i: 10_000 } });
    // the kept turns' calls and results, and the last step's entries (plus the one before) read for messages and
    // events: a constant, whatever the task's length (5,000 calls here)
    expect(reads).toBeLessThanOrEqual(2 * 10 + 2 + 2);
    // The 10 kept turns, each with its own result, after the task message that says what is left out.
    const m = requests[0]?.messages ?? [];
    expect(m).toHaveLength(2 + 10 * 2);
    expect(m[1]?.content).toContain('4990 earlier model replies and their 4990 tool calls are not shown');
    expect(m.filter((x) => x.role === 'tool').map((x) => JSON.parse(x.content) as unknown)).toEqual(
      Array.from({ length: 10 }, (_, k) => ({ echo: 4990 + k })),
    );
  });

  it('keeps each prompt within contextTokens, always shows the latest turn, and drops the turns left out from the memory (guards against prompts and memory growing with the task)', async () => {
    const { role, requests } = recording();
    const s = createNativeToolStrategy({
      model: role,
      contextTokens: 2000,
      windowChunkTurns: 8,
      maxIterations: 1000,
    });
    const h = new HistoryBuilder();
    const result = (i: number) => ({ ok: true as const, result: { i, text: 'x'.repeat(400) } });
    for (let i = 0; i < 200; i++) h.call('noop', { i }, result(i));
    const d = await s.decide(task(turnsMemory(200), 200), h.entries, modelCtx(h.step));
    const m = requests[0]?.messages ?? [];
    expect(chars(m)).toBeLessThanOrEqual(2000 * 4);
    // The most recent result is there; the window starts at a multiple of 8 turns.
    expect(m[m.length - 1]?.content).toContain('"i":199');
    const shownTurns = m.filter((x) => x.role === 'assistant').length;
    expect(shownTurns).toBeGreaterThan(3);
    expect((200 - shownTurns) % 8).toBe(0);
    expect(m[1]?.content).toContain(`${200 - shownTurns} earlier model replies`);
    // The memory keeps the shown turns and the new one, and counts the rest.
    const mem = d.memory as unknown as { dropped: number; turns: unknown[] };
    expect(mem.dropped).toBe(200 - shownTurns);
    expect(mem.turns).toHaveLength(shownTurns + 1);
  });

  it('over a long loop the prompt stays bounded, its first turn moves once per windowChunkTurns model calls, and the iteration count survives the dropping (guards against a window that rewrites the prompt prefix on every call, and against maxIterations counting only kept turns)', async () => {
    const { role, requests } = recording();
    const s = createNativeToolStrategy({
      model: role,
      contextTokens: 1500,
      windowChunkTurns: 8,
      maxIterations: 120,
    });
    const h = new HistoryBuilder();
    let memory: JsonValue = null;
    for (let k = 0; k < 130; k++) {
      const d = await s.decide(task(memory, k), h.entries, modelCtx(h.step));
      if (d.type !== 'tool_call') {
        expect(k).toBe(120);
        // the summary call got no text back from this scripted model (only tool calls): a failure, as before
        expect(d).toMatchObject({
          type: 'fail',
          error: { code: 'max_iterations', details: { iterations: 120 } },
        });
        break;
      }
      memory = d.memory ?? memory;
      h.call('noop', d.args, { ok: true, result: { k, text: 'y'.repeat(300) } });
    }
    expect(requests).toHaveLength(121); // 120 iterations and the request for a final message
    const sizes = requests.map((r) => chars(r.messages));
    expect(Math.max(...sizes)).toBeLessThanOrEqual(1500 * 4);
    // The prompt's start (the task message with its note, and the first turn shown) changes rarely.
    const starts = new Set(requests.map((r) => JSON.stringify(r.messages.slice(1, 3))));
    expect(starts.size).toBeLessThanOrEqual(Math.ceil(120 / 8) + 1);
    expect((memory as { turns: unknown[] }).turns.length).toBeLessThan(40);
  });
  it('a message sent while a call runs is in the next model request, after that call result; events too (guards: follow-up messages never reaching the model)', async () => {
    const { role, requests } = recording();
    const s = createNativeToolStrategy({ model: role, maxIterations: 50 });
    const h = new HistoryBuilder();
    const d1 = await s.decide(task(null, 0), h.entries, modelCtx(h.step));
    expect(d1.type).toBe('tool_call');
    h.call('noop', (d1 as { args: JsonValue }).args, { ok: true, result: { ran: 1 } });
    h.add({ type: 'message', text: 'Use the birch logs instead.', from: 'http' });
    h.add({ type: 'event', name: 'redstone', data: { side: 'left', on: true } });
    await s.decide(task(d1.memory ?? null, 1), h.entries, modelCtx(h.step));
    const m = requests[1]?.messages ?? [];
    expect(m.slice(-3).map((x) => [x.role, x.content])).toEqual([
      ['tool', JSON.stringify({ ran: 1 })],
      ['user', 'Use the birch logs instead.'],
      ['user', '[event "redstone": {"side":"left","on":true}]'],
    ]);
  });

  it('a resumed task gets a fresh iteration budget and sees why it resumed (guards: a continued task ending at once on max_iterations)', async () => {
    const { role, requests } = recording();
    const s = createNativeToolStrategy({ model: role, maxIterations: 2 });
    const h = new HistoryBuilder();
    let memory: JsonValue = null;
    for (let k = 0; k < 2; k++) {
      const d = await s.decide(task(memory, k), h.entries, modelCtx(h.step));
      memory = d.memory ?? memory;
      h.call('noop', (d as { args: JsonValue }).args, { ok: true, result: { k } });
    }
    // budget used up: the next step asks for a final message (the scripted model gives none: a failure)
    const spent = await s.decide(task(memory, 2), h.entries, modelCtx(h.step));
    expect(spent).toMatchObject({ type: 'fail', error: { code: 'max_iterations' } });
    h.add({ type: 'resume', reason: 'message', from: 'failed' });
    h.add({ type: 'message', text: 'Try once more.' });
    const before = requests.length;
    const again = await s.decide(task(spent.memory ?? memory, 2), h.entries, modelCtx(h.step));
    expect(again.type).toBe('tool_call');
    const m = requests[before]?.messages ?? [];
    expect(m.slice(-2).map((x) => x.content)).toEqual([
      '[The task was failed; it continues with the message below and a fresh budget.]',
      'Try once more.',
    ]);
    expect(again.memory).toMatchObject({ runStart: 2, resumeSeq: h.entries.length - 1 });
  });
});
