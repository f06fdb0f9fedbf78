// Acceptance scenario of the planner/executor loop: a broken TODO.lua (add/list/done/remove/stats) is fixed by a
// scripted small model through the real `ollama` client, a real Engine and a real Lua 5.2 interpreter; the final
// result carries run output proving add, list, done and stats work, and nobody is asked anything.
import { readFileSync, writeFileSync } from 'node:fs';
import type { JsonValue, StoredStep } from '@ccagent/engine';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPlannerExecutorStrategy, type ExecutorMode } from '../src/index.js';
import {
  createLuaToolExecutor,
  prefixFractions,
  removeRoot,
  runTask,
  startModels,
  todo,
} from '@ccagent/agent/testing';

const { BROKEN, COMPLETION, EXECUTOR_REPLIES, FIXED, PLANNER_REPLIES, PROMPT } = todo;

let models: Awaited<ReturnType<typeof startModels>>;
const roots: string[] = [];

beforeAll(async () => {
  models = await startModels();
});
afterAll(async () => {
  await models.close();
  await Promise.all(roots.map(removeRoot));
});

interface Evidence {
  call: string;
  output: string;
}

function evidenceOf(result: JsonValue | undefined): Evidence[] {
  const r = result as { evidence?: Evidence[] } | undefined;
  return r?.evidence ?? [];
}

async function runScenario(mode: ExecutorMode, suffix: string) {
  const planner = `planner-${suffix}`;
  const executor = `executor-${suffix}`;
  models.fake.script(planner, PLANNER_REPLIES);
  models.fake.script(executor, mode === 'model' ? EXECUTOR_REPLIES : []);
  const strategy = createPlannerExecutorStrategy({
    planner: models.role(planner),
    executor: models.role(executor),
    mode,
    completion: COMPLETION,
  });
  const run = await runTask(strategy, { prompt: PROMPT, kind: 'code' }, { files: { 'TODO.lua': BROKEN } });
  roots.push(run.root);
  return {
    ...run,
    plannerRequests: models.fake.chatRequests(planner),
    executorRequests: models.fake.chatRequests(executor),
  };
}

describe.each<[ExecutorMode, string]>([
  ['model', 'm'],
  ['parser', 'p'],
  ['parser-then-model', 'ptm'],
])('acceptance: a broken TODO.lua is fixed (executor mode %s)', (mode, suffix) => {
  it('completes with run output proving add, list, done and stats, without asking the user', async () => {
    const run = await runScenario(mode, suffix);
    expect(run.task.error).toBeUndefined();
    expect(run.task.status).toBe('completed');
    expect(run.asked).toEqual([]);
    expect(run.history.some((h) => h.type === 'question')).toBe(false);

    // The proof is real Lua output of the final file, not the planner's claim.
    const evidence = evidenceOf(run.task.result);
    const output = (call: string) => evidence.find((e) => e.call === call)?.output;
    expect(output('run_program TODO.lua done 1')).toBe('Done: Buy milk');
    expect(output('run_program TODO.lua stats')).toBe('2 items, 1 done, 1 open');
    expect(output('run_program TODO.lua add Feed the cat')).toBe('Added: Feed the cat');
    expect(output('run_program TODO.lua remove 3')).toBe('Removed: Feed the cat');
    expect(output('run_program TODO.lua list')).toBe('1. [x] Buy milk\n2. [ ] Water the plants');
    expect(readFileSync(`${run.root}/TODO.lua`, 'utf8')).toBe(FIXED);

    // The bugs were real: the first run and `done` with the first fix failed under Lua.
    const failures = run.executor.calls.filter(
      (c) => c.outcome.ok && (c.outcome.result as { ok?: boolean }).ok === false,
    );
    expect(
      failures.map((c) => (c.outcome.ok ? (c.outcome.result as { error: string }).error.split('\n')[0] : '')),
    ).toEqual([
      "/TODO.lua:8: attempt to index local 'f' (a nil value)",
      "/TODO.lua:39: attempt to index field '?' (a nil value)",
    ]);
    // `stats` after the failed `done` was skipped, and the planner was told.
    expect(run.steps.some((s) => s.kind === 'policy' && s.error?.code === 'runs_skipped')).toBe(true);

    // One planner call per directive; the executor model only in `model` mode.
    expect(run.plannerRequests).toHaveLength(4);
    expect(run.executorRequests).toHaveLength(mode === 'model' ? 4 : 0);
  });
});

describe('acceptance step log', () => {
  it('records every model call with its exact input and raw output, and the tool calls with their results', async () => {
    const run = await runScenario('model', 'log');
    expect(run.task.status).toBe('completed');
    const planner = run.steps.filter((s) => s.kind === 'planner');
    const executor = run.steps.filter((s) => s.kind === 'executor');
    expect(planner).toHaveLength(4);
    expect(executor).toHaveLength(4);
    // The logged input is exactly what went over the wire.
    const wire = (i: number, reqs: typeof run.plannerRequests) =>
      ((reqs[i]?.body as { messages: Array<{ role: string; content: string }> }).messages ?? []).map((m) => [
        m.role,
        m.content,
      ]);
    const logged = (s: StoredStep | undefined) =>
      ((s?.input as { messages: Array<{ role: string; content: string }> }).messages ?? []).map((m) => [
        m.role,
        m.content,
      ]);
    for (let i = 0; i < 4; i++) {
      expect(logged(planner[i])).toEqual(wire(i, run.plannerRequests));
      expect(logged(executor[i])).toEqual(wire(i, run.executorRequests));
      expect((planner[i]?.output as { content: string }).content).toBe(PLANNER_REPLIES[i]);
      expect((executor[i]?.output as { content: string }).content).toBe(EXECUTOR_REPLIES[i]);
      expect(planner[i]?.usage?.promptTokens).toBeGreaterThan(0);
    }
    // The executor got the JSON Schema as `format`, and the same schema is in the log.
    const format = (run.executorRequests[0]?.body as { format?: unknown }).format;
    expect(format).toMatchObject({ required: ['kind', 'explanation', 'tool', 'parameters'] });
    expect((executor[0]?.input as { format?: unknown }).format).toEqual(format);
    expect((planner[0]?.input as { prompt: { name: string; version: number } }).prompt).toEqual({
      name: 'planner',
      version: 4,
    });
    // Parsed directive and the fence the executor wrapped its JSON in are recorded.
    expect(planner[0]?.directive).toMatchObject({ kind: 'RUN', path: 'TODO.lua', args: ['list'] });
    expect(executor[1]?.validationErrors).toEqual(['tolerated: code fence removed']);
    // Every command call has its result in the log.
    const results = run.steps.filter((s) => s.kind === 'tool_result');
    expect(results.length).toBe(run.task.counters.toolCalls);

    const prefix = prefixFractions(run.plannerRequests);
    console.log(
      `planner shared-prefix fraction: mean ${prefix.mean.toFixed(3)} [${prefix.fractions.map((f) => f.toFixed(2)).join(' ')}]`,
    );
    // Consecutive planner prompts extend each other; only a rewritten file (FILES sits before HISTORY) cuts deeper.
    expect(prefix.mean).toBeGreaterThan(0.55);

    if (process.env.AGENT_DUMP_STEPS)
      writeFileSync(process.env.AGENT_DUMP_STEPS, JSON.stringify(run.steps, null, 2));
  });

  it('runs the fixed program again from scratch under Lua (guards against a fix that only works on the test data)', async () => {
    const { mkdtemp } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    const root = await mkdtemp(`${tmpdir()}/ccagent-todo-`);
    roots.push(root);
    writeFileSync(`${root}/TODO.lua`, FIXED);
    const lua = createLuaToolExecutor({ root });
    const run = async (...args: string[]) => {
      const o = await lua.execute({
        taskId: 't',
        callId: `c${Math.random()}`,
        clientId: null,
        command: 'run_program',
        args: { path: 'TODO.lua', args },
        timeoutMs: 5000,
        attempt: 1,
        recordRedelivery: () => Promise.resolve(),
        signal: new AbortController().signal,
      });
      return o.ok ? (o.result as { ok: boolean; output: string }) : { ok: false, output: o.error.message };
    };
    expect(await run('list')).toEqual({ ok: true, output: 'Nothing to do.' });
    expect(await run('add', 'a')).toEqual({ ok: true, output: 'Added: a' });
    expect(await run('add', 'b')).toEqual({ ok: true, output: 'Added: b' });
    expect(await run('done', '2')).toEqual({ ok: true, output: 'Done: b' });
    expect(await run('stats')).toEqual({ ok: true, output: '2 items, 1 done, 1 open' });
    expect(await run('done', '7')).toEqual({ ok: true, output: 'No item 7' });
    expect(await run('remove', '1')).toEqual({ ok: true, output: 'Removed: a' });
    expect(await run('list')).toEqual({ ok: true, output: '1. [x] b' });
  });
});
