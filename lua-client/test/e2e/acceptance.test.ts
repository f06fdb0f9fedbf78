// End to end: a real CC computer (CraftOS-PC) running the real library and agent host ↔ the built orchestrator ↔
// the scripted fake model server. Tasks are created from Lua through the client API.
//   1. the design's acceptance test: a broken TODO.lua on the computer is fixed by a planner/executor task
//   2. an ask_user round trip answered through `answer()`
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { todo } from '@ccagent/agent/testing';
import { bootDriver, driverResult } from './driver.js';
import { ASK_KIND, lampPlanner } from './programs.js';
import { MODELS, Stack, craftos } from './stack.js';

const { BROKEN, COMPLETION, FIXED, PLANNER_REPLIES, PROMPT } = todo;

interface Evidence {
  call: string;
  output: string;
}

describe.skipIf(!craftos)('end to end: CC computer ↔ orchestrator ↔ models', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await Stack.start({
      config: {
        taskKinds: {
          // The built-in code_job (planner/executor, parser-then-model), told which runs prove the fix.
          code_job: { completion: COMPLETION },
          e2e_ask: ASK_KIND,
        },
      },
    });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('fixes a broken TODO.lua on the CC computer: run output proves add, list, done and stats; nobody is asked', async () => {
    stack.fake.script(MODELS.planner, PLANNER_REPLIES);
    stack.fake.script(MODELS.executor, []);
    const c = bootDriver(
      {
        url: stack.wsUrl,
        client_id: 'e2e-todo',
        tasks: [{ kind: 'code_job', prompt: PROMPT }],
        // Afterwards, from a clean list, the fixed file is used on the computer by the shell.
        after: [
          { delete: 'todo.db' },
          { run: ['TODO.lua', 'list'] },
          { run: ['TODO.lua', 'add', 'Mine', 'iron'] },
          { run: ['TODO.lua', 'add', 'Smelt'] },
          { run: ['TODO.lua', 'done', '2'] },
          { run: ['TODO.lua', 'stats'] },
          { run: ['TODO.lua', 'remove', '1'] },
          { run: ['TODO.lua', 'list'] },
          { run: ['TODO.lua', 'done', '9'] },
        ],
      },
      { files: { 'TODO.lua': BROKEN } },
    );
    const out = await driverResult(c);
    const [seen] = out.tasks;
    expect(seen?.status, JSON.stringify(seen)).toBe('completed');
    expect(seen?.questions).toEqual([]); // no ask_user reached the client
    expect(seen?.statuses).toEqual(expect.arrayContaining(['queued', 'running', 'completed']));
    expect(seen?.statuses).not.toContain('waiting_for_user');
    expect(out.errors).toEqual([]);

    // The result the client received carries real output of the final file, run on the CC computer.
    const evidence = (seen?.result as { evidence?: Evidence[] } | undefined)?.evidence ?? [];
    const output = (call: string) => evidence.find((e) => e.call === call)?.output;
    expect(output('run_program TODO.lua done 1')).toBe('Done: Buy milk');
    expect(output('run_program TODO.lua stats')).toBe('2 items, 1 done, 1 open');
    expect(output('run_program TODO.lua add Feed the cat')).toBe('Added: Feed the cat');
    expect(output('run_program TODO.lua list')).toBe('1. [x] Buy milk\n2. [ ] Water the plants');

    // The orchestrator's record agrees, and the bugs were real failures under CC:Tweaked.
    const detail = await stack.task(seen!.id!);
    expect(detail.task).toMatchObject({ kind: 'code_job', status: 'completed', client_id: 'e2e-todo' });
    expect(detail.task.result).toEqual(seen?.result);
    expect(detail.questions).toEqual([]);
    expect(detail.history.some((h) => h.type === 'question')).toBe(false);
    const runs = detail.command_calls.filter((x) => x.command === 'run_program');
    const failed = runs.filter((x) => x.outcome?.ok && x.outcome.result?.ok === false);
    expect(failed.map((x) => (x.outcome?.result?.error as string).split('\n')[0])).toEqual([
      expect.stringMatching(/^\/?TODO\.lua:8: .*nil/), // load(): todo.db does not exist yet
      expect.stringMatching(/^\/?TODO\.lua:\d+: .*nil/), // done 1 with a string index
    ]);
    expect(detail.command_calls.every((x) => x.dispatch_count === 1)).toBe(true);
    expect(stack.fake.chatRequests(MODELS.planner)).toHaveLength(4);

    // The fixed file is on the computer's disk, and it works when used there afterwards.
    expect(readFileSync(path.join(c.disk, 'TODO.lua'), 'utf8')).toBe(FIXED);
    expect(out.after.filter((s) => s.run).map((s) => [s.ok, s.output])).toEqual([
      [true, 'Nothing to do.'],
      [true, 'Added: Mine iron'],
      [true, 'Added: Smelt'],
      [true, 'Done: Smelt'],
      [true, '2 items, 1 done, 1 open'],
      [true, 'Removed: Mine iron'],
      [true, '1. [x] Smelt'],
      [true, 'No item 9'],
    ]);
  });

  it('ask_user round trip: the question reaches Lua, answer() is sent, the task uses the answer and completes', async () => {
    stack.fake.script(MODELS.planner, lampPlanner());
    const c = bootDriver({
      url: stack.wsUrl,
      client_id: 'e2e-ask',
      tasks: [{ kind: 'e2e_ask', prompt: 'Set up the lamp program.', answer: 'teal' }],
    });
    const out = await driverResult(c);
    const [seen] = out.tasks;
    expect(seen?.status, JSON.stringify(seen)).toBe('completed');
    expect(seen?.questions).toEqual([
      {
        question_id: expect.any(String) as string,
        question: 'Which colour should the lamp be?',
        why: 'the task does not say, and repainting costs dye',
      },
    ]);
    expect(seen?.statuses).toEqual(expect.arrayContaining(['waiting_for_user', 'completed']));
    expect(out.errors).toEqual([]);

    // The answer reached the orchestrator, the planner's memory, the computer and the result.
    const detail = await stack.task(seen!.id!);
    expect(detail.questions).toEqual([
      expect.objectContaining({
        question_id: seen?.questions[0]?.question_id,
        question: 'Which colour should the lamp be?',
        answer: 'teal',
      }),
    ]);
    const planner = detail.steps.filter((s) => s.kind === 'planner');
    expect(planner).toHaveLength(3);
    expect(JSON.stringify(planner[1]?.input)).toContain('Q: Which colour should the lamp be?\\nA: teal');
    expect(readFileSync(path.join(c.disk, 'lamp.lua'), 'utf8')).toBe('print("lamp colour: teal")\n');
    expect(seen?.result).toMatchObject({
      success: true,
      summary: 'the lamp is teal; lamp.lua printed it.',
      evidence: [{ call: 'run_program lamp.lua', output: 'lamp colour: teal' }],
    });
  });
});
