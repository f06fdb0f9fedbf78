// Every rule of the planner/executor loop, each through the real stack: Engine + in-memory store, the real `ollama`
// client against the scripted fake server, and Lua 5.2 running the programs.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { policyEvents, startModels } from '@ccagent/agent/testing';
import { D, runHello, X } from './support/hello.js';

let models: Awaited<ReturnType<typeof startModels>>;
beforeAll(async () => {
  models = await startModels();
});
afterAll(async () => {
  await models.close();
});

const notes = (history: Array<{ type: string; text?: string }>) =>
  history.filter((h) => h.type === 'note').map((h) => h.text ?? '');
const runCalls = (run: { executor: { calls: Array<{ command: string }> } }) =>
  run.executor.calls.filter((c) => c.command === 'run_program').length;

describe('happy path and memory', () => {
  it('reads the named file first, shows it under FILES, and completes after a successful run', async () => {
    const run = await runHello(models, { planner: [D.fix, D.done] });
    expect(run.task.status).toBe('completed');
    // Gather: fs_read before the first planner call, its content in the prompt.
    expect(run.executor.calls[0]).toMatchObject({ command: 'fs_read', args: { path: 'hello.lua' } });
    const first = run.plannerSaw(0);
    for (const s of ['# TASK', '# FILES', '# HISTORY', '# USER ANSWERS', '# PLAN (pinned)', '# STATE']) {
      expect(first).toContain(s);
    }
    expect(first).toMatch(
      /## hello\.lua \(version 1, sha [0-9a-f]{12}, read at #2\)\n```\nprint\("Hello world"\)\n```/,
    );
    // The second prompt repeats the first, then the planner's own new version, the write and the run output.
    const second = run.plannerSaw(1);
    expect(second.startsWith(first)).toBe(true);
    expect(second).toContain('```lua\nprint("Hello, world!")\n```');
    expect(second).toMatch(/OK fs_write hello\.lua \(\d+ lines, sha [0-9a-f]{12}\)/);
    expect(second).toContain('OK run_program hello.lua\n    Hello, world!');
    expect(run.task.result).toMatchObject({
      success: true,
      evidence: [{ call: 'run_program hello.lua', output: 'Hello, world!' }],
    });
  });
});

describe('executor repair and bounce', () => {
  it('retries once with the validation error appended, then executes the repaired call', async () => {
    const run = await runHello(
      models,
      {
        planner: [D.run, D.fix, D.done],
        executor: ['{"kind":"tool","tool":"cc_run_program"}', X.run, X.fix, X.done],
      },
      { mode: 'model' },
    );
    expect(run.task.status).toBe('completed');
    expect(run.executorRequests).toHaveLength(4); // RUN twice (repair), then WRITE_FILE and DONE once each
    const repair = run.executorSaw(1).messages;
    expect(repair.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user']);
    expect(repair[2]?.content).toBe('{"kind":"tool","tool":"cc_run_program"}');
    expect(repair[3]?.content).toMatch(/schema: explanation: .*; parameters: /);
    expect(run.steps.filter((s) => s.kind === 'executor_repair')).toHaveLength(1);
    // The repaired call ran (the broken program printed the old greeting).
    expect(run.history.find((h) => h.type === 'tool_result' && h.command === 'run_program')).toMatchObject({
      outcome: { ok: true, result: { ok: true, output: 'Hello world' } },
    });
  });

  it('bounces to the planner after the repair also fails, and calls no tool for that directive', async () => {
    const run = await runHello(
      models,
      {
        planner: [D.run, D.fix, D.done],
        executor: ['I will run hello.lua now.', '{"kind":"tool",', X.fix, X.done],
      },
      { mode: 'model' },
    );
    expect(run.task.status).toBe('completed');
    expect(policyEvents(run.steps)).toContain('executor_invalid');
    // Only the gather read, the write and the THEN run: the bounced RUN was never executed.
    expect(run.executor.calls.map((c) => c.command)).toEqual(['fs_read', 'fs_write', 'run_program']);
    const bounce = notes(run.history).find((n) => n.includes('executor could not'));
    expect(bounce).toMatch(/json: The JSON object is not closed/);
    // The planner saw the bounce in its next prompt.
    expect(run.plannerSaw(1)).toContain('NOTE: Your last reply was not carried out: the executor could not');
  });
});

describe('budgets', () => {
  it('fails on the agent step budget with the last plan and the last error', async () => {
    const planner = [
      'PLAN:\n1. run it\n2. fix it\n\nRUN\nPATH: hello.lua\nARGS: one',
      'RUN\nPATH: nothere.lua',
      'RUN\nPATH: hello.lua\nARGS: two',
    ];
    const run = await runHello(models, { planner }, { policy: { maxSteps: 4 } });
    expect(run.task.status).toBe('failed');
    expect(run.task.error).toMatchObject({
      code: 'budget_exhausted',
      details: {
        budget: 'maxSteps',
        limit: 4,
        lastPlan: '1. run it\n2. fix it',
        // Step 4 is the last: its directive is reported, not executed.
        lastDirective: 'RUN\nPATH: hello.lua\nARGS: two\nEXPECT: ',
        lastError: 'no such program: nothere.lua',
      },
    });
    expect(run.task.counters.steps).toBe(4);
    expect(runCalls(run)).toBe(2); // "one" and "nothere.lua"; "two" was not dispatched
  });

  it("uses the last step of a task budget to fail with its own report instead of the engine's bare one", async () => {
    const run = await runHello(
      models,
      { planner: [D.run, 'RUN\nPATH: hello.lua\nARGS: x', D.done] },
      {},
      { budgets: { maxSteps: 3 } },
    );
    expect(run.task.status).toBe('failed');
    expect(run.task.error).toMatchObject({
      code: 'budget_exhausted',
      details: { budget: 'maxSteps', limit: 3 },
    });
    expect((run.task.error?.details as { lastDirective: string }).lastDirective).toContain('ARGS: x');
  });

  it('accepts a proven DONE on the very last step', async () => {
    // gather, write, THEN run, DONE: four steps.
    const run = await runHello(models, { planner: [D.fix, D.done] }, {}, { budgets: { maxSteps: 4 } });
    expect(run.task.status).toBe('completed');
    expect(run.task.counters.steps).toBe(4);
  });

  it('fails on the tool-call budget with the last plan and last error, before dispatching the extra call', async () => {
    const planner = ['PLAN:\n1. look\n\nRUN\nPATH: missing.lua', D.fix];
    const run = await runHello(models, { planner }, { policy: { maxToolCalls: 3 } });
    expect(run.task.status).toBe('failed');
    expect(run.task.error).toMatchObject({
      code: 'budget_exhausted',
      details: {
        budget: 'maxToolCalls',
        limit: 3,
        used: 3,
        lastPlan: '1. look',
        lastError: 'no such program: missing.lua',
      },
    });
    expect(run.executor.calls).toHaveLength(3);
  });
});

describe('duplicate suppression', () => {
  it('does not run the same call twice in a row and gives the planner the previous result as evidence', async () => {
    const run = await runHello(models, { planner: [D.run, D.run, D.fix, D.done] });
    expect(run.task.status).toBe('completed');
    expect(runCalls(run)).toBe(2); // the first RUN and the fix's THEN run — not the repeat
    const note = notes(run.history).find((n) => n.includes('was not run again'));
    expect(note).toContain(
      'run_program hello.lua was not run again: it is the same call as the previous one',
    );
    expect(note).toContain('it succeeded and printed: Hello world');
    expect(run.plannerSaw(2)).toContain('was not run again');
  });

  it('stops the task after the configured number of suppressed repeats in a row', async () => {
    const run = await runHello(
      models,
      { planner: [D.run, D.run, D.run, D.run, D.run] },
      { policy: { duplicateHardStop: 3 } },
    );
    expect(run.task.status).toBe('failed');
    expect(run.task.error).toMatchObject({ code: 'repetition' });
    expect(run.task.error?.message).toContain('run_program hello.lua');
    expect(runCalls(run)).toBe(1);
    expect(run.plannerRequests).toHaveLength(4);
  });

  it('counts a repeat after a changed file as new (the threshold is "in a row")', async () => {
    const run = await runHello(models, { planner: [D.run, D.write, D.run, D.done] });
    expect(run.task.status).toBe('completed');
    expect(runCalls(run)).toBe(2);
    expect(policyEvents(run.steps)).not.toContain('duplicate_suppressed');
  });
});

describe('ask_user', () => {
  it('asks when the planner wrote ASK_USER with a WHY, and puts the answer in USER ANSWERS', async () => {
    const run = await runHello(
      models,
      { planner: [D.ask, D.fix, D.done] },
      {},
      {},
      { answers: ['Yes, with "!"'] },
    );
    expect(run.task.status).toBe('completed');
    expect(run.asked).toEqual(['Should the greeting end with "!"?']);
    expect(run.history.find((h) => h.type === 'question')).toMatchObject({
      why: 'the task text could be read both ways',
    });
    expect(run.plannerSaw(1)).toContain(
      '# USER ANSWERS (new)\nQ: Should the greeting end with "!"?\nA: Yes, with "!"',
    );
  });

  it('refuses ASK_USER without a WHY and asks nobody', async () => {
    const run = await runHello(models, { planner: ['ASK_USER\nQUESTION: Shall I start?', D.fix, D.done] });
    expect(run.task.status).toBe('completed');
    expect(run.asked).toEqual([]);
    expect(policyEvents(run.steps)).toEqual(['ask_refused']);
    expect(run.plannerSaw(1)).toContain('ASK_USER needs a WHY');
  });

  it('allows at most two questions per task, unless the strategy is interactive', async () => {
    const script = { planner: [D.ask, D.ask, D.ask, D.fix, D.done] };
    const limited = await runHello(models, script, {}, {}, { answers: ['a', 'b', 'c'] });
    expect(limited.task.status).toBe('completed');
    expect(limited.asked).toHaveLength(2);
    expect(policyEvents(limited.steps)).toEqual(['ask_refused']);
    expect(notes(limited.history).join('\n')).toContain('the 2 questions allowed for this task are used up');

    const interactive = await runHello(
      models,
      script,
      { interactive: true },
      {},
      { answers: ['a', 'b', 'c'] },
    );
    expect(interactive.task.status).toBe('completed');
    expect(interactive.asked).toHaveLength(3);
  });

  it('never turns a non-ASK directive into a question, even if the executor model tries', async () => {
    const sneaky = JSON.stringify({
      kind: 'tool',
      explanation: 'better ask',
      tool: 'ask_user',
      parameters: { question: 'Run it?', why: 'unsure' },
    });
    const run = await runHello(
      models,
      { planner: [D.run, D.fix, D.done], executor: [sneaky, X.run, X.fix, X.done] },
      { mode: 'model' },
    );
    expect(run.task.status).toBe('completed');
    expect(run.asked).toEqual([]);
    // ask_user is not even offered for a RUN directive: not in the format schema, rejected by validation.
    expect(JSON.stringify(run.executorSaw(0).format)).not.toContain('ask_user');
    expect(run.executorSaw(1).messages[3]?.content).toMatch(/tool: Invalid/);
  });
});

describe('completion criteria', () => {
  it('rejects DONE without any executed run, then accepts it once a run proves the fix', async () => {
    const run = await runHello(models, { planner: [D.done, D.write, D.done, D.run, D.done] });
    expect(run.task.status).toBe('completed');
    expect(policyEvents(run.steps)).toEqual(['done_rejected', 'done_rejected']);
    const texts = notes(run.history);
    expect(texts[0]).toBe(
      'DONE rejected: nothing has been run yet; run the program and check its output before DONE.',
    );
    // A write after the last run invalidates earlier proof.
    expect(texts[1]).toContain('no program has run successfully since the last file write');
    expect(run.task.result).toMatchObject({
      evidence: [{ call: 'run_program hello.lua', output: 'Hello, world!' }],
    });
  });

  it('rejects DONE when the last run failed', async () => {
    const broken =
      'WRITE_FILE\nPATH: hello.lua\nCONTENT:\n```lua\nprint("Hello, world!"\n```\nTHEN:\n- hello.lua';
    const run = await runHello(models, { planner: [broken, D.done, D.fix, D.done] });
    expect(run.task.status).toBe('completed');
    expect(notes(run.history)[0]).toMatch(
      /^DONE rejected: no program has run successfully since the last file write/,
    );
  });

  it('enforces required runs from the task metadata, and fails after too many unproven DONEs', async () => {
    const run = await runHello(
      models,
      { planner: [D.fix, D.done, D.done, D.done] },
      {},
      { metadata: { completion: { requiredRuns: [{ path: 'hello.lua', args: ['--check'] }] } } },
    );
    expect(run.task.status).toBe('failed');
    expect(run.task.error).toMatchObject({ code: 'completion_unproven' });
    expect(run.task.error?.message).toContain('a successful run of "hello.lua --check"');
  });

  it('requires the configured commands to have succeeded', async () => {
    const run = await runHello(
      models,
      { planner: [D.fix, D.done, 'SHELL\nCOMMAND: hello\nEXPECT: Hello, world!', D.done] },
      { completion: { requiredCommands: ['shell_exec'] } },
    );
    expect(run.task.status).toBe('completed');
    expect(notes(run.history)[0]).toBe(
      'DONE rejected: a successful shell_exec call is required before DONE and there is none.',
    );
  });
});

describe('allowed commands and directive parsing', () => {
  it('bounces a directive whose command the task may not use, without running anything', async () => {
    const run = await runHello(
      models,
      { planner: ['SHELL\nCOMMAND: rm hello.lua', D.fix, D.done] },
      {},
      { allowedCommands: ['fs_read', 'fs_write', 'run_program'] },
    );
    expect(run.task.status).toBe('completed');
    expect(run.executor.calls.some((c) => c.command === 'shell_exec')).toBe(false);
    expect(notes(run.history)[0]).toContain('no command available to this task can carry out SHELL');
  });

  it('takes the first of two directives and tells the planner the second was ignored', async () => {
    const run = await runHello(models, { planner: [`${D.fix}\n\n${D.done}`, D.done] });
    expect(run.task.status).toBe('completed');
    expect(run.plannerRequests).toHaveLength(2);
    expect(run.plannerSaw(1)).toContain(
      'contained 2 directives (WRITE_FILE, DONE); only the first (WRITE_FILE) was used',
    );
  });

  it('fails with a clear reason when the planner keeps writing nothing usable', async () => {
    const run = await runHello(
      models,
      { planner: ['', 'Let me think.', '   ', 'Hmm.', D.done] },
      { policy: { maxConsecutiveBounces: 4 } },
    );
    expect(run.task.status).toBe('failed');
    expect(run.task.error).toMatchObject({ code: 'planner_unusable' });
    expect(run.task.error?.message).toContain('4 planner replies of this task had no usable directive');
    expect(run.plannerRequests).toHaveLength(4);
  });

  it('fails with model_failed when the planner model keeps failing, without looping', async () => {
    const run = await runHello(models, { planner: [] });
    expect(run.task.status).toBe('failed');
    expect(run.task.error).toMatchObject({ code: 'model_failed' });
    expect(run.plannerRequests).toHaveLength(3);
    expect(run.steps.filter((s) => s.kind === 'planner' && s.error)).toHaveLength(3);
  });
});

describe('executor modes', () => {
  it('parser-then-model calls the executor model only for a directive the parser had to guess at', async () => {
    const guessed = 'RUN\nPATH: hello.lua --verbose';
    const exec = JSON.stringify({
      kind: 'tool',
      explanation: 'run with the flag',
      tool: 'cc_run_program',
      parameters: { path: 'hello.lua', args: ['--verbose'] },
    });
    const run = await runHello(
      models,
      { planner: [guessed, D.fix, D.done], executor: [exec] },
      { mode: 'parser-then-model' },
    );
    expect(run.task.status).toBe('completed');
    expect(run.executorRequests).toHaveLength(1);
    expect(run.executorSaw(0).messages[1]?.content).toBe('RUN\nPATH: hello.lua\nARGS: --verbose\nEXPECT: ');
    expect(run.steps.filter((s) => s.kind === 'translate')).toHaveLength(1);
  });

  it('parser-then-model bounces a reply without a directive to the planner with a format reminder and never asks the executor to invent one', async () => {
    const prose = 'I will run hello.lua to see what it prints.';
    // An executor that guesses would turn the prose into a run; it must never be asked.
    const run = await runHello(
      models,
      { planner: [prose, D.fix, D.done], executor: [X.run] },
      { mode: 'parser-then-model' },
    );
    expect(run.task.status).toBe('completed');
    expect(run.executorRequests).toHaveLength(0);
    expect(policyEvents(run.steps)).toEqual(['directive_no_directive']);
    expect(run.plannerSaw(1)).toContain('Write exactly one directive: its keyword alone on a line');
  });

  it('parser mode bounces a reply without a directive and never calls the executor model', async () => {
    const run = await runHello(
      models,
      { planner: ['I will run hello.lua.', D.fix, D.done], executor: [X.run] },
      { mode: 'parser' },
    );
    expect(run.task.status).toBe('completed');
    expect(run.executorRequests).toHaveLength(0);
    expect(policyEvents(run.steps)).toEqual(['directive_no_directive']);
  });
});
