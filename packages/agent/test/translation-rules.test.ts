// The translation rules of the planner/executor loop (issue 19), each through the real stack: Engine + in-memory
// store, the real `ollama` client over HTTP to the scripted fake server, Lua 5.2 for the programs. Each test is named
// for the failure it guards against.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OpenAICompatibleChatModel } from '@ccagent/models';
import { createNativeToolStrategy, createPlannerExecutorStrategy } from '../src/index.js';
import { policyEvents, removeRoot, runTask, startModels } from '@ccagent/agent/testing';
import { D, HELLO_FILES, HELLO_PROMPT, runHello, X } from './support/hello.js';

let models: Awaited<ReturnType<typeof startModels>>;
beforeAll(async () => {
  models = await startModels();
});
afterAll(async () => {
  await models.close();
});

const tool = (t: string, parameters: unknown) =>
  JSON.stringify({ kind: 'tool', explanation: 'x', tool: t, parameters });
const shell = (command: string) => tool('cc_shell', { command });
const calls = (run: { history: Array<{ type: string; command?: string; args?: unknown }> }) =>
  run.history
    .filter((h) => h.type === 'tool_call')
    .map((h) => `${h.command ?? ''} ${JSON.stringify(h.args)}`);
const validationErrors = (
  run: { steps: Array<{ kind: string; validationErrors?: string[] }> },
  kind: string,
) => run.steps.filter((s) => s.kind === kind).flatMap((s) => s.validationErrors ?? []);

describe('class 1: the executor only translates', () => {
  it('never dispatches rm -rf / from a reply holding two objects for SHELL "ls" (it was run as "first wins")', async () => {
    const run = await runHello(
      models,
      {
        planner: ['SHELL\nCOMMAND: "ls"\nEXPECT: files', D.fix, D.done],
        executor: [`${shell('rm -rf /')}\n${shell('ls')}`, shell('ls'), X.fix, X.done],
      },
      { mode: 'model' },
    );
    expect(calls(run).some((c) => c.includes('rm -rf'))).toBe(false);
    expect(calls(run)).toContain('shell_exec {"command":"ls"}');
    expect(validationErrors(run, 'executor')[0]).toMatch(/json: The reply contains 2 JSON objects/);
    expect(run.task.status).toBe('completed');
  });

  it('does not run the first of an array of two calls; after the repair fails too it bounces to the planner', async () => {
    const two = `[${tool('cc_run_program', { path: 'hello.lua' })}, ${tool('cc_run_program', { path: 'hello.lua', args: ['again'] })}]`;
    const run = await runHello(
      models,
      { planner: [D.run, D.fix, D.done], executor: [two, two, X.fix, X.done] },
      { mode: 'model' },
    );
    expect(policyEvents(run.steps)).toContain('executor_invalid');
    expect(
      calls(run)
        .filter((c) => c.startsWith('run_program'))
        .every((c) => !c.includes('again')),
    ).toBe(true);
    expect(run.executorRequests.length).toBe(4);
    expect(run.task.status).toBe('completed');
  });

  it('does not run a call whose arguments the directive did not give (RUN list → remove 1 is repaired, then bounced)', async () => {
    const changed = tool('cc_run_program', { path: 'hello.lua', args: ['remove', '1'] });
    const run = await runHello(
      models,
      { planner: [D.run, D.fix, D.done], executor: [changed, changed, X.fix, X.done] },
      { mode: 'model' },
    );
    expect(calls(run).some((c) => c.includes('remove'))).toBe(false);
    expect(validationErrors(run, 'executor_repair')[0]).toMatch(
      /derivation: the call is not a translation of the RUN directive/,
    );
    expect(policyEvents(run.steps)[0]).toBe('executor_invalid');
  });

  it('bounces a directive whose path leaves the computer root, in every mode, without a model guess or a dispatch', async () => {
    for (const mode of ['parser', 'model', 'parser-then-model'] as const) {
      const run = await runHello(
        models,
        { planner: ['RUN\nPATH: ../../../etc/passwd\nEXPECT: x', D.fix, D.done], executor: [X.fix, X.done] },
        { mode },
      );
      expect(
        calls(run).some((c) => c.includes('passwd')),
        mode,
      ).toBe(false);
      expect(policyEvents(run.steps)[0], mode).toBe('path_outside');
      expect(run.task.status, mode).toBe('completed');
    }
  });
});

describe('class 2: tolerated deviations are logged, strict mode is per kind', () => {
  it('writes a tolerated: entry for "args" given as a string (it ran with no validationErrors entry)', async () => {
    const run = await runHello(
      models,
      {
        planner: [D.run, D.fix, D.done],
        executor: [tool('cc_run_program', { path: 'hello.lua', args: '' }), X.fix, X.done],
      },
      { mode: 'model' },
    );
    expect(validationErrors(run, 'executor')).toContain(
      'tolerated: args given as a string, split into words',
    );
    expect(run.task.status).toBe('completed');
  });

  it('in strict mode repairs a trailing comma instead of tolerating it', async () => {
    const sloppy =
      '{"kind":"tool","explanation":"x","tool":"cc_run_program","parameters":{"path":"hello.lua","args":[],},}';
    const run = await runHello(
      models,
      { planner: [D.run, D.fix, D.done], executor: [sloppy, X.run, X.fix, X.done] },
      { mode: 'model', strict: true },
    );
    expect(run.steps.filter((s) => s.kind === 'executor_repair')).toHaveLength(1);
    expect(validationErrors(run, 'executor')[0]).toMatch(/^strict: .*trailing commas/);
    expect(run.task.status).toBe('completed');
  });
});

describe("class 3: the spec's own directive forms", () => {
  it('runs seed 001\'s "1 RUN /TODO.lua list" THEN line as TODO.lua list, not as a program named "1"', async () => {
    const write =
      'WRITE_FILE\nPATH: hello.lua\nLANGUAGE: lua\nCONTENT:\n```lua\nprint("Hello, world!")\n```\nTHEN:\n1 RUN /hello.lua list';
    for (const mode of ['parser', 'parser-then-model'] as const) {
      const run = await runHello(models, { planner: [write, D.done] }, { mode });
      expect(calls(run), mode).toContain('run_program {"path":"/hello.lua","args":["list"]}');
      expect(run.task.status, mode).toBe('completed');
    }
  });

  it('sends ls, not "ls" with its quotes, to the shell for COMMAND: "ls"', async () => {
    const run = await runHello(models, { planner: ['SHELL\nCOMMAND: "ls"\nEXPECT: files', D.fix, D.done] });
    expect(calls(run)).toContain('shell_exec {"command":"ls"}');
  });

  it('recognises **DIRECTIVE:** RUN in parser mode (it was bounced as no directive)', async () => {
    const run = await runHello(models, {
      planner: ['**DIRECTIVE:** RUN\n**PATH:** hello.lua', D.fix, D.done],
    });
    expect(policyEvents(run.steps)).toEqual([]);
    expect(calls(run)[1]).toBe('run_program {"path":"hello.lua","args":[]}');
  });
});

describe('class 4: no usable directive goes back to the planner', () => {
  it('does not fail with agent_gave_up when an executor answers "final success:false" to planner prose', async () => {
    const giveUp = JSON.stringify({
      kind: 'final',
      explanation: 'no directive',
      result: { success: false, message: 'there is no directive to translate', details: '' },
    });
    const run = await runHello(
      models,
      { planner: ['Let me look at the file first.', D.fix, D.done], executor: [giveUp, giveUp] },
      { mode: 'parser-then-model' },
    );
    expect(run.task.status).toBe('completed');
    expect(run.executorRequests).toHaveLength(0);
    expect(policyEvents(run.steps)).toEqual(['directive_no_directive']);
  });

  it('bounces an unknown directive name with its name and the format reminder instead of inventing a run', async () => {
    const run = await runHello(
      models,
      {
        planner: ['EDIT_FILE\nPATH: hello.lua\nREPLACE: world\nWITH: , world!', D.fix, D.done],
        executor: [X.run],
      },
      { mode: 'parser-then-model' },
    );
    expect(run.executorRequests).toHaveLength(0);
    expect(run.plannerSaw(1)).toContain('EDIT_FILE is not a directive');
    expect(run.plannerSaw(1)).toContain('Write exactly one directive');
  });

  it('fails planner_unusable after maxFormatBounces replies without a directive in one task, even with good steps between', async () => {
    const run = await runHello(
      models,
      { planner: ['Hmm.', D.run, 'Well.', D.fix, 'So.', D.done] },
      { mode: 'parser', policy: { maxFormatBounces: 3 } },
    );
    expect(run.task.status).toBe('failed');
    expect(run.task.error).toMatchObject({ code: 'planner_unusable' });
    expect(run.task.error?.message).toContain('3 planner replies of this task had no usable directive');
  });
});

describe('class 5: final.result.details as the spec shows it', () => {
  it('completes without a repair when the executor writes details as an object (it needed a repair)', async () => {
    const final = JSON.stringify({
      kind: 'final',
      explanation: 'done',
      result: {
        success: true,
        message: 'hello.lua prints the greeting',
        details: { runs: 1, output: 'Hello, world!' },
      },
    });
    const run = await runHello(
      models,
      { planner: [D.fix, D.done], executor: [X.fix, final] },
      { mode: 'model' },
    );
    expect(run.task.status).toBe('completed');
    expect(run.steps.filter((s) => s.kind === 'executor_repair')).toHaveLength(0);
    expect(run.task.result).toMatchObject({ details: { runs: 1, output: 'Hello, world!' } });
  });
});

describe('class 6: output cut off at the limit', () => {
  it('never runs a RUN whose ARGS were cut mid-word; asks once more with a larger limit', async () => {
    const cut = { content: 'RUN\nPATH: hello.lua\nARGS: add "Buy mi', doneReason: 'length' };
    const run = await runHello(
      models,
      { planner: [cut, D.fix, D.done] },
      { mode: 'parser' },
      {},
      {},
      { planner: { lengthRetryNumPredict: 4096 } },
    );
    expect(calls(run).some((c) => c.includes('Buy mi'))).toBe(false);
    expect(validationErrors(run, 'planner')[0]).toMatch(
      /^truncated: the reply was cut off at the output limit/,
    );
    const retry = run.plannerRequests[1]?.body as {
      options?: { num_predict?: number };
      messages: Array<{ content: string }>;
    };
    expect(retry.options?.num_predict).toBe(4096);
    expect(retry.messages.at(-1)?.content).toContain('was cut off at the output limit');
    expect(run.task.status).toBe('completed');
  });

  it('repairs a cut executor reply once instead of parsing its prefix, with the larger limit', async () => {
    const cutJson = {
      content:
        '{"kind":"tool","explanation":"run","tool":"cc_run_program","parameters":{"path":"hello.lua"}}',
      doneReason: 'length',
    };
    const run = await runHello(
      models,
      { planner: [D.run, D.fix, D.done], executor: [cutJson, X.run, X.fix, X.done] },
      { mode: 'model' },
      {},
      {},
      { executor: { lengthRetryNumPredict: 2048 } },
    );
    expect(validationErrors(run, 'executor')[0]).toMatch(/^truncated: your reply was cut off/);
    const repair = run.executorRequests[1]?.body as { options?: { num_predict?: number } };
    expect(repair.options?.num_predict).toBe(2048);
    expect(run.task.status).toBe('completed');
  });

  it('treats an OpenAI-compatible finish_reason "length" like Ollama\'s done_reason (never runs the cut RUN)', async () => {
    const openai = new OpenAICompatibleChatModel({ baseUrl: `${models.fake.url}/v1`, retry: { retries: 0 } });
    const name = 'planner-openai-cut';
    models.fake.script(name, [
      { content: 'RUN\nPATH: hello.lua\nARGS: add "Buy mi', doneReason: 'length' },
      D.fix,
      D.done,
    ]);
    const strategy = createPlannerExecutorStrategy({
      planner: { model: openai, name },
      executor: models.role('executor-openai-unused'),
      mode: 'parser',
    });
    const run = await runTask(strategy, { prompt: HELLO_PROMPT }, { files: HELLO_FILES });
    await removeRoot(run.root);
    const wire = models.fake.chatRequests(name);
    expect(wire[0]?.path).toBe('/v1/chat/completions');
    expect(calls(run).some((c) => c.includes('Buy mi'))).toBe(false);
    expect(validationErrors(run, 'planner')[0]).toMatch(/^truncated:/);
    expect(run.task.status).toBe('completed');
  });

  it('fails a planner that is cut off twice in a row as a format bounce, running nothing from either reply', async () => {
    const cut = { content: 'RUN\nPATH: hello.lua\nARGS: add "Buy mi', doneReason: 'length' };
    const run = await runHello(models, { planner: [cut, cut, D.fix, D.done] });
    expect(policyEvents(run.steps)[0]).toBe('output_truncated');
    expect(calls(run).some((c) => c.includes('Buy mi'))).toBe(false);
    expect(run.task.status).toBe('completed');
  });
});

describe('class 6 in the native loop', () => {
  let n = 0;
  async function runNative(script: Parameters<typeof models.fake.script>[1], extra = {}) {
    const name = `native-rules-${++n}`;
    models.fake.script(name, script);
    const strategy = createNativeToolStrategy({ model: { ...models.role(name), ...extra } });
    const run = await runTask(
      strategy,
      { prompt: 'Fix hello.lua.', kind: 'native' },
      {
        files: { 'hello.lua': 'print("Hello world")\n' },
      },
    );
    await removeRoot(run.root);
    return { ...run, requests: models.fake.chatRequests(name) };
  }
  const write = {
    toolCalls: [{ name: 'fs_write', arguments: { path: 'hello.lua', content: 'print("Hello, world!")\n' } }],
  };

  it('does not complete with a reply cut off at the output limit as its answer; retries with the larger limit', async () => {
    const run = await runNative(
      [{ content: 'The task is done: hello.lua now pri', doneReason: 'length' }, write, 'Fixed hello.lua.'],
      { lengthRetryNumPredict: 3000 },
    );
    expect(run.task.status).toBe('completed');
    expect(run.task.result).toMatchObject({ message: 'Fixed hello.lua.' });
    expect((run.requests[1]?.body as { options?: { num_predict?: number } }).options?.num_predict).toBe(3000);
    const body = run.requests[1]?.body as { messages: Array<{ content: string }> };
    expect(body.messages.at(-1)?.content).toContain('cut off at the output limit');
  });

  it('runs none of the calls of a cut-off reply, and fails output_truncated when the retry is cut off too', async () => {
    const cutWithCall = { ...write, content: 'Writing', doneReason: 'length' };
    const run = await runNative([cutWithCall, cutWithCall, 'never read']);
    expect(run.history.filter((h) => h.type === 'tool_call')).toHaveLength(0);
    expect(run.task.status).toBe('failed');
    expect(run.task.error).toMatchObject({ code: 'output_truncated' });
  });

  it('does not take a <tool_call> written as text for the final answer', async () => {
    const text =
      '<tool_call>\n{"name": "fs_write", "arguments": {"path": "hello.lua", "content": "x"}}\n</tool_call>';
    const run = await runNative([text, write, '<think>check</think>Fixed hello.lua.']);
    expect(run.task.status).toBe('completed');
    expect(run.task.result).toMatchObject({ message: 'Fixed hello.lua.' });
  });
});
