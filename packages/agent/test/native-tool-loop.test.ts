// The native tool-calling strategy through the real stack: Ollama `tools` built from the commands' JSON Schemas,
// tool results fed back as `tool` messages, unknown tools and tool errors answered to the model, iteration limit and
// per-tool timeout.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Engine, InMemoryTaskStore, type Task } from '@ccagent/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_NUM_PREDICT, createNativeToolStrategy, type NativeToolOptions } from '../src/index.js';
import { nativeMemoryValidations } from '../src/native-tool-strategy.js';
import { MAX_EMPTY_REPLIES } from '../src/native/record.js';
import { createLuaToolExecutor, removeRoot, runTask, startModels } from '@ccagent/agent/testing';

let models: Awaited<ReturnType<typeof startModels>>;
beforeAll(async () => {
  models = await startModels();
});
afterAll(async () => {
  await models.close();
});

let n = 0;
type Script = Parameters<typeof models.fake.script>[1];
type WireMessage = { role: string; content: string; tool_name?: string; tool_calls?: unknown[] };

async function runNative(
  script: Script,
  options: Partial<NativeToolOptions> = {},
  files: Record<string, string> = { 'hello.lua': 'print("Hello world")\n' },
  input: { budgets?: { maxToolCalls?: number }; allowedCommands?: string[] } = {},
) {
  const name = `native-${++n}`;
  models.fake.script(name, script);
  const strategy = createNativeToolStrategy({ model: models.role(name), ...options });
  const run = await runTask(
    strategy,
    { prompt: 'hello.lua must print "Hello, world!". Fix it.', kind: 'native', ...input },
    { files },
  );
  await removeRoot(run.root);
  const requests = models.fake.chatRequests(name);
  const body = (i: number) =>
    requests[i]?.body as {
      messages: WireMessage[];
      tools?: Array<{ function: { name: string; parameters: unknown } }>;
    };
  return { ...run, requests, body };
}

const call = (name: string, args: Record<string, unknown>, content = '') => ({
  content,
  toolCalls: [{ name, arguments: args }],
});

describe('native tool loop', () => {
  it('offers the commands as Ollama tools, feeds results back, and ends when the model answers without tools', async () => {
    const run = await runNative([
      call('fs_read', { path: 'hello.lua' }, 'Let me look at the file.'),
      call('fs_write', { path: 'hello.lua', content: 'print("Hello, world!")\n' }),
      call('run_program', { path: 'hello.lua', args: [] }),
      'Fixed: hello.lua now prints "Hello, world!" (the run printed exactly that).',
    ]);
    expect(run.task.status).toBe('completed');
    expect(run.task.result).toEqual({
      message: 'Fixed: hello.lua now prints "Hello, world!" (the run printed exactly that).',
      iterations: 4,
    });
    // Tools come from the executor's command descriptors, JSON Schemas included, limited to the task's
    // allowed_commands (the executor also offers fs_delete, which this task may not use).
    const tools = run.body(0).tools ?? [];
    expect(tools.map((t) => t.function.name)).toEqual([
      'shell_exec',
      'fs_list',
      'fs_read',
      'fs_write',
      'run_program',
    ]);
    expect(tools.find((t) => t.function.name === 'run_program')?.function.parameters).toMatchObject({
      required: ['path'],
    });
    // The last request carries the whole exchange: assistant tool calls and their results as tool messages.
    const last = run.body(3).messages;
    expect(last.map((m) => m.role)).toEqual([
      'system',
      'user',
      'assistant',
      'tool',
      'assistant',
      'tool',
      'assistant',
      'tool',
    ]);
    expect(last[2]?.content).toBe('Let me look at the file.');
    expect(last[3]).toMatchObject({ tool_name: 'fs_read' });
    expect(JSON.parse(last[3]?.content ?? '{}')).toMatchObject({ content: 'print("Hello world")\n' });
    expect(JSON.parse(last[7]?.content ?? '{}')).toEqual({ ok: true, output: 'Hello, world!' });
    // Each iteration's prompt extends the previous one (prompt-cache friendly).
    for (let i = 1; i < 4; i++) {
      const prev = run.body(i - 1).messages;
      expect(run.body(i).messages.slice(0, prev.length)).toEqual(prev);
    }
    expect(run.steps.filter((s) => s.kind === 'native')).toHaveLength(4);
  });

  it('a long task sends prompts bounded by contextTokens, shows the latest results, and keeps a bounded memory (guards against prompts, step-log records and the memory growing with every model call of a night-long task)', async () => {
    const replies = 60;
    const file = `-- ${'padding '.repeat(30)}\nprint("Hello world")\n`;
    const run = await runNative(
      [
        ...Array.from({ length: replies }, (_, k) => call('fs_read', { path: 'hello.lua' }, `Pass ${k}.`)),
        'Read it 60 times.',
      ],
      { contextTokens: 3000, windowChunkTurns: 8, maxIterations: 100 },
      { 'hello.lua': file },
    );
    expect(run.task.status).toBe('completed');
    expect(run.task.result).toEqual({ message: 'Read it 60 times.', iterations: replies + 1 });
    expect(run.executor.calls).toHaveLength(replies);
    const sizes = run.requests.map((_, i) => run.body(i).messages.reduce((a, m) => a + m.content.length, 0));
    expect(sizes).toHaveLength(replies + 1);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(3000 * 4);
    // The last prompt ends with the last result and says how much is left out before it.
    const last = run.body(replies).messages;
    expect(last[last.length - 2]?.content).toBe(`Pass ${replies - 1}.`);
    expect(JSON.parse(last[last.length - 1]?.content ?? '{}')).toMatchObject({ content: file });
    expect(last[1]?.content).toMatch(/\[\d+ earlier model replies and their \d+ tool calls are not shown/);
    // The prompt start changes once per 8 model calls at most, and the memory holds about one window of turns.
    const starts = new Set(run.requests.map((_, i) => JSON.stringify(run.body(i).messages.slice(1, 3))));
    expect(starts.size).toBeLessThanOrEqual(Math.ceil((replies + 1) / 8) + 1);
    const memory = run.task.memory as { dropped: number; turns: unknown[] };
    // exactly the turns the last prompt showed, and the final answer
    expect(memory.turns).toHaveLength(last.filter((m) => m.role === 'assistant').length + 1);
    expect(memory.dropped).toBeGreaterThan(replies / 2);
    expect(memory.dropped + memory.turns.length).toBe(replies + 1);
  });

  it('validates the task memory once per run, not once per step (guards against re-parsing the memory every step)', async () => {
    const before = nativeMemoryValidations();
    const run = await runNative([
      {
        content: '',
        toolCalls: [0, 1, 2, 3].map((i) => ({ name: 'fs_list', arguments: { path: `/d${i}` } })),
      },
      'Listed.',
    ]);
    expect(run.task.status).toBe('completed');
    expect(run.steps.filter((s) => s.kind === 'decision')).toHaveLength(5);
    // Only the task's initial memory (null) is validated; every later step gets the memory the last one built.
    expect(nativeMemoryValidations() - before).toBe(1);
  });

  it('answers an unknown tool with an error message and continues', async () => {
    const run = await runNative([
      call('cat', { file: 'hello.lua' }),
      call('fs_read', { path: 'hello.lua' }),
      'hello.lua prints "Hello world".',
    ]);
    expect(run.task.status).toBe('completed');
    const msgs = run.body(1).messages;
    expect(msgs[3]).toMatchObject({ role: 'tool', tool_name: 'cat' });
    expect(msgs[3]?.content).toContain(
      'unknown tool \\"cat\\"; the available tools are: shell_exec, fs_list',
    );
    expect(run.executor.calls.map((c) => c.command)).toEqual(['fs_read']);
  });

  it('gives a failing tool its error as the result', async () => {
    const run = await runNative([call('fs_read', { path: 'missing.lua' }), 'There is no missing.lua.']);
    expect(run.task.status).toBe('completed');
    expect(JSON.parse(run.body(1).messages[3]?.content ?? '{}')).toEqual({
      error: 'no such file: missing.lua',
      code: 'not_found',
    });
  });

  it('dispatches several tool calls of one reply one after the other, then asks the model once', async () => {
    const run = await runNative([
      {
        content: '',
        toolCalls: [
          { name: 'run_program', arguments: { path: 'hello.lua' } },
          { name: 'nope', arguments: {} },
          { name: 'fs_list', arguments: {} },
        ],
      },
      'Done looking.',
    ]);
    expect(run.task.status).toBe('completed');
    expect(run.requests).toHaveLength(2);
    expect(run.executor.calls.map((c) => c.command)).toEqual(['run_program', 'fs_list']);
    expect(run.body(1).messages.map((m) => m.tool_name ?? m.role)).toEqual([
      'system',
      'user',
      'assistant',
      'run_program',
      'nope',
      'fs_list',
    ]);
  });

  it('ends after maxIterations model calls with a final message to the user: what was done, what is left (guards: a bare max_iterations failure)', async () => {
    const loop = Array.from({ length: 3 }, (_, i) =>
      call('run_program', { path: 'hello.lua', args: [String(i)] }),
    );
    const summary = 'I ran hello.lua three times; it prints "Hello world". Left: add the comma.';
    const run = await runNative([...loop, summary], { maxIterations: 3 });
    expect(run.task.status).toBe('completed');
    expect(run.task.result).toEqual({ message: summary, iterations: 3, stopped: 'max_iterations' });
    expect(run.requests).toHaveLength(4);
    const last = run.body(3);
    expect(last.tools ?? []).toEqual([]); // the final request offers no tools
    expect(last.messages.at(-1)?.content).toContain('used all 3 model calls');
    expect(last.messages.filter((m) => m.role === 'tool')).toHaveLength(3); // it saw what was done
  });

  it('still fails with max_iterations when the final message is empty', async () => {
    const loop = Array.from({ length: 10 }, (_, i) =>
      call('run_program', { path: 'hello.lua', args: [String(i)] }),
    );
    const run = await runNative(loop, { maxIterations: 3 });
    expect(run.task.status).toBe('failed');
    expect(run.task.error).toMatchObject({ code: 'max_iterations', details: { iterations: 3 } });
    expect(run.requests).toHaveLength(4);
  });

  it('AGENT_ENABLED=false: the model is offered no tools and its answer completes the task (direct chat)', async () => {
    const run = await runNative(['Hello! I am a chat.'], { agentEnabled: false });
    expect(run.task.status).toBe('completed');
    expect(run.body(0).tools ?? []).toEqual([]);
    expect(run.task.result).toMatchObject({ message: 'Hello! I am a chat.' });
  });

  it('nudges the model after an empty reply instead of completing with nothing', async () => {
    const run = await runNative([
      '',
      call('fs_read', { path: 'hello.lua' }),
      'hello.lua prints "Hello world".',
    ]);
    expect(run.task.status).toBe('completed');
    expect(run.body(1).messages.at(-1)).toMatchObject({
      role: 'user',
      content: expect.stringContaining('empty'),
    });
    // recorded as a tolerated deviation
    const notes = run.history.filter((e) => e.type === 'note').map((e) => e.text);
    expect(notes).toEqual([expect.stringMatching(/^tolerated: .*empty/)]);
  });

  it(`a model that keeps returning empty replies fails with empty_replies after ${MAX_EMPTY_REPLIES} in a row, not after every iteration (guards against an empty-reply loop burning the whole budget)`, async () => {
    expect(MAX_EMPTY_REPLIES).toBe(3);
    // a reply that is only a reasoning block is empty too
    const run = await runNative(['', '<think>hmm</think>', '   ', 'never read'], { maxIterations: 20 });
    expect(run.task.status).toBe('failed');
    expect(run.task.error).toMatchObject({
      code: 'empty_replies',
      details: { emptyReplies: 3, iterations: 3 },
    });
    expect(run.requests).toHaveLength(3);
    expect(run.executor.calls).toHaveLength(0);
    const notes = run.history.filter((e) => e.type === 'note').map((e) => e.text);
    expect(notes).toEqual([
      expect.stringMatching(/^tolerated: .*empty.*1 of 2/),
      expect.stringMatching(/^tolerated: .*empty.*2 of 2/),
    ]);
  });

  it('counts only empty replies in a row: a reply with a call in between starts the count again', async () => {
    const read = call('fs_read', { path: 'hello.lua' });
    const run = await runNative(['', '', read, '', '', read, 'hello.lua prints "Hello world".'], {
      maxIterations: 20,
    });
    expect(run.task.status).toBe('completed');
    expect(run.task.result).toEqual({ message: 'hello.lua prints "Hello world".', iterations: 7 });
    expect(run.executor.calls).toHaveLength(2);
  });

  it('a retry after empty_replies starts a fresh count (the failed run’s empty replies are not counted again)', async () => {
    const root = await mkdtemp(path.join(tmpdir(), 'ccagent-empty-'));
    const name = `native-${++n}`;
    models.fake.script(name, ['', '', '', '', 'FINAL: nothing to do.']);
    const engine = new Engine({
      store: new InMemoryTaskStore(),
      strategies: { native: createNativeToolStrategy({ model: models.role(name), maxIterations: 20 }) },
      executor: createLuaToolExecutor({ root }),
      tickIntervalMs: 0,
    });
    /** The task's next end (completed, failed or cancelled). */
    const ended = (id: string) =>
      new Promise<Task>((resolve) => {
        const off = engine.on('taskUpdated', ({ task }) => {
          if (task.id === id && ['completed', 'failed', 'cancelled'].includes(task.status)) {
            off();
            resolve(task);
          }
        });
      });
    await engine.start();
    try {
      const created = await engine.createTask({ kind: 'native', prompt: 'Say hi.', clientId: null });
      const failed = await ended(created.id);
      expect(failed.error).toMatchObject({ code: 'empty_replies', details: { emptyReplies: 3 } });
      const again = ended(created.id);
      await engine.reopenTask(created.id, { reason: 'retry', budgets: {} });
      // one empty reply in the new run is nudged, not the fourth in a row
      const done = await again;
      expect(done.error).toBeUndefined();
      expect(done.status).toBe('completed');
      expect(done.result).toMatchObject({ message: 'nothing to do.' });
      expect(models.fake.chatRequests(name)).toHaveLength(5);
    } finally {
      await engine.stop();
      await rm(root, { recursive: true, force: true });
    }
  });

  it('a first reply in prose that calls no tool is not the result: one nudge, recorded, and the model then does the work (guards: "Sure, I will now write the file" completing the task with nothing done)', async () => {
    const run = await runNative([
      'Sure, I will now fix hello.lua so it prints "Hello, world!".',
      call('fs_write', { path: 'hello.lua', content: 'print("Hello, world!")\n' }),
      'Fixed: hello.lua now prints "Hello, world!".',
    ]);
    expect(run.task.status).toBe('completed');
    expect(run.task.result).toEqual({
      message: 'Fixed: hello.lua now prints "Hello, world!".',
      iterations: 3,
    });
    expect(run.executor.calls.map((c) => c.command)).toEqual(['fs_write']);
    // The model sees its prose reply and the nudge, which says how to end without a tool.
    const nudged = run.body(1).messages;
    expect(nudged.at(-2)).toMatchObject({ role: 'assistant', content: expect.stringContaining('Sure') });
    expect(nudged.at(-1)).toMatchObject({ role: 'user', content: expect.stringContaining('FINAL:') });
    // Recorded as a tolerated deviation in the task's history (the step log has the model call itself).
    const notes = run.history.filter((e) => e.type === 'note').map((e) => e.text);
    expect(notes).toEqual([expect.stringMatching(/^tolerated: .*no tool/)]);
  });

  it('a model that keeps answering in prose without a tool fails with no_tool_call after the one nudge, not a loop', async () => {
    const run = await runNative([
      'Sure, I will now write the file.',
      'Okay! I am writing the file now.',
      'never asked for',
    ]);
    expect(run.task.status).toBe('failed');
    expect(run.task.error).toMatchObject({
      code: 'no_tool_call',
      message: expect.stringContaining('FINAL:'),
      details: { iterations: 2, lastMessage: 'Okay! I am writing the file now.' },
    });
    expect(run.requests).toHaveLength(2);
    expect(run.executor.calls).toHaveLength(0);
  });

  it('an answer marked FINAL: is the result without any tool call, first or after the nudge (the marker removed)', async () => {
    const first = await runNative(['FINAL: hello.lua prints "Hello world" without the comma.']);
    expect(first.task.status).toBe('completed');
    expect(first.task.result).toEqual({
      message: 'hello.lua prints "Hello world" without the comma.',
      iterations: 1,
    });
    expect(first.requests).toHaveLength(1);
    const after = await runNative([
      'It prints Hello world.',
      '<think>no tool needed</think>**Final answer:** it prints "Hello world".',
    ]);
    expect(after.task.status).toBe('completed');
    expect(after.task.result).toEqual({ message: 'it prints "Hello world".', iterations: 2 });
  });

  it('a task offered no tools still ends on its first prose answer', async () => {
    // AGENT_ENABLED=false (above) is one case; a computer that registers no command the task may use is the other.
    const run = await runNative(['Nothing I can do here: no tools.'], {}, undefined, {
      allowedCommands: ['no_such_command'],
    });
    expect(run.task.status).toBe('completed');
    expect(run.body(0).tools ?? []).toEqual([]);
    expect(run.requests).toHaveLength(1);
  });

  it('applies the per-tool timeout to every call and reports the timeout to the model', async () => {
    const run = await runNative(
      [call('run_program', { path: 'spin.lua' }), 'spin.lua never finishes.'],
      { toolTimeoutMs: 300 },
      { 'spin.lua': 'while true do end\n' },
    );
    expect(run.task.status).toBe('completed');
    const decision = run.steps.find(
      (s) => s.kind === 'decision' && (s.directive as { type?: string }).type === 'tool_call',
    );
    expect(decision?.directive).toMatchObject({ timeoutMs: 300 });
    expect(run.body(1).messages[3]?.content).toMatch(/timed out after 300 ms|Too long without yielding/);
  });

  it('records a memory only on steps that change it: the model steps, not the steps that hand out the next call (guards against re-encoding, hashing and rewriting the memory on every round trip)', async () => {
    const run = await runNative([
      {
        content: '',
        toolCalls: [0, 1, 2, 3].map((i) => ({ name: 'fs_list', arguments: { path: `/d${i}` } })),
      },
      'Listed.',
    ]);
    expect(run.task.status).toBe('completed');
    const decisions = run.steps
      .filter((s) => s.kind === 'decision')
      .map((s) => s.directive as { type: string; memoryBytes?: number });
    expect(decisions.map((d) => [d.type, d.memoryBytes !== undefined])).toEqual([
      ['tool_call', true], // the model's reply: a new turn
      ['tool_call', false],
      ['tool_call', false],
      ['tool_call', false],
      ['complete', true],
    ]);
    expect(run.executor.calls.map((c) => c.args)).toEqual([0, 1, 2, 3].map((i) => ({ path: `/d${i}` })));
  });

  it('a call that times out in the middle of a turn is answered with the timeout and the next call runs (guards against a timed-out call being handed out again or taking the next call with it)', async () => {
    const run = await runNative(
      [
        {
          content: '',
          toolCalls: [
            { name: 'run_program', arguments: { path: 'spin.lua' } },
            { name: 'fs_read', arguments: { path: 'spin.lua' } },
          ],
        },
        'spin.lua never finishes.',
      ],
      { toolTimeoutMs: 300 },
      { 'spin.lua': 'while true do end\n' },
    );
    expect(run.task.status).toBe('completed');
    expect(run.history.filter((e) => e.type === 'tool_call').map((e) => e.command)).toEqual([
      'run_program',
      'fs_read',
    ]);
    const tools = run.body(1).messages.filter((m) => m.role === 'tool');
    expect(tools.map((m) => m.tool_name)).toEqual(['run_program', 'fs_read']);
    expect(tools[0]?.content).toMatch(/timed out after 300 ms|Too long without yielding/);
    expect(JSON.parse(tools[1]?.content ?? '{}')).toMatchObject({ content: 'while true do end\n' });
  });

  it('stops at the maxToolCalls budget in the middle of a turn (guards against a call being handed out past the budget)', async () => {
    const run = await runNative(
      [
        {
          content: '',
          toolCalls: [0, 1, 2, 3].map((i) => ({ name: 'fs_list', arguments: { path: `/d${i}` } })),
        },
        'Listed.',
      ],
      {},
      undefined,
      { budgets: { maxToolCalls: 2 } },
    );
    expect(run.task.status).toBe('failed');
    expect(run.task.error).toMatchObject({ code: 'budget_exhausted', details: { budget: 'maxToolCalls' } });
    expect(run.executor.calls).toHaveLength(2);
    expect(run.requests).toHaveLength(1);
  });

  it('every model call carries an output bound: the role’s numPredict, else DEFAULT_NUM_PREDICT (guards against a runaway model generating until the call times out)', async () => {
    const numPredict = (r: { body: unknown }) =>
      (r.body as { options?: { num_predict?: number } }).options?.num_predict;
    expect(DEFAULT_NUM_PREDICT).toBe(4096);
    const plain = await runNative([call('fs_read', { path: 'hello.lua' }), 'It prints Hello world.']);
    expect(plain.task.status).toBe('completed');
    expect(plain.requests.map(numPredict)).toEqual([DEFAULT_NUM_PREDICT, DEFAULT_NUM_PREDICT]);
    // The step log shows the options the call was sent with.
    const logged = plain.steps.filter((s) => s.kind === 'native').map((s) => s.input as { options?: object });
    expect(logged.map((i) => i.options)).toEqual(
      logged.map(() => ({ temperature: 0, numCtx: 8192, numPredict: DEFAULT_NUM_PREDICT })),
    );
    // runNative scripts the model it names next (native-<n+1>); this role is that model with a bound of its own.
    const own = await runNative(['FINAL: it prints Hello world.'], {
      model: models.role(`native-${n + 1}`, { options: { numPredict: 300 } }),
    });
    expect(own.task.status).toBe('completed');
    expect(own.requests.map(numPredict)).toEqual([300]);
  });

  it('uses the configured system prompt in every request of a run that completes (guards against the test passing on a failed run)', async () => {
    const run = await runNative(
      [
        call('fs_write', { path: 'hello.lua', content: 'print("Hello, world!")\n' }),
        call('run_program', { path: 'hello.lua', args: [] }),
        'Fixed: it prints "Hello, world!".',
      ],
      { systemPrompt: 'You are terse.' },
    );
    expect(run.task.status).toBe('completed');
    expect(run.task.result).toEqual({ message: 'Fixed: it prints "Hello, world!".', iterations: 3 });
    expect(run.requests).toHaveLength(3);
    for (let i = 0; i < 3; i++) {
      expect(run.body(i).messages[0]).toEqual({ role: 'system', content: 'You are terse.' });
    }
  });
});
