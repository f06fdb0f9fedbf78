// The small-model failure corpus: realistic bad planner/executor outputs (fixtures/*.json), each run through the
// whole loop — real Engine, the real `ollama` client against the scripted fake server, Lua 5.2 for the programs —
// and checked against the outcome its fixture states. Used by test/failure-corpus.test.ts (CI) and by
// tools/bench/agent-robustness/run.mjs (which passes the built package's strategy factory).
import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { removeRoot, runTask, startModels } from '../support/harness.mjs';

export const FIXTURES_DIR = fileURLToPath(new URL('./fixtures/', import.meta.url));

/** Upper bound of model calls for any fixture: more means the loop did not stop on its own. */
export const MAX_MODEL_CALLS = 30;

const HELLO = { 'hello.lua': 'print("Hello world")\n' };
const PROMPT = 'hello.lua must print exactly "Hello, world!". Fix it and run it.';

/** Good replies the fixtures refer to as `$name`, so each fixture spells out only what goes wrong. */
export const STANDARD_REPLIES = {
  $run: 'RUN\nPATH: hello.lua\nEXPECT: Hello, world!',
  $fix: 'WRITE_FILE\nPATH: hello.lua\nLANGUAGE: lua\nCONTENT:\n```lua\nprint("Hello, world!")\n```\nTHEN:\n- hello.lua',
  $write: 'WRITE_FILE\nPATH: hello.lua\nLANGUAGE: lua\nCONTENT:\n```lua\nprint("Hello, world!")\n```',
  $done: 'DONE\nSUMMARY: hello.lua prints "Hello, world!", as the last run shows.\nNOTES: none',
  $ask: 'ASK_USER\nQUESTION: Should the greeting end with "!"?\nWHY: the task could be read both ways\nNEXT: write it',
  $x_run: JSON.stringify({
    kind: 'tool',
    explanation: 'run hello.lua',
    tool: 'cc_run_program',
    parameters: { path: 'hello.lua', args: [] },
  }),
  $x_fix: JSON.stringify({
    kind: 'tool',
    explanation: 'write the fix and run it',
    tool: 'cc_write_and_run',
    parameters: {
      path: 'hello.lua',
      content: 'print("Hello, world!")\n',
      runs: [{ path: 'hello.lua', args: [] }],
    },
  }),
  $x_done: JSON.stringify({
    kind: 'final',
    explanation: 'the task is finished',
    result: { success: true, message: 'hello.lua prints "Hello, world!"', details: '' },
  }),
};

/**
 * @typedef {string | string[] | { content?: string | string[], json?: unknown, doneReason?: string,
 *   fault?: Record<string, unknown> }} FixtureReply
 * @typedef {{
 *   name: string, description: string, role: 'planner' | 'executor' | 'both',
 *   mode?: 'model' | 'parser' | 'parser-then-model', policy?: Record<string, unknown>,
 *   completion?: Record<string, unknown>, interactive?: boolean,
 *   task?: { allowedCommands?: string[], budgets?: Record<string, number>, metadata?: Record<string, unknown> },
 *   files?: Record<string, string>, answers?: string[],
 *   planner: FixtureReply[], executor?: FixtureReply[],
 *   expect: { status: 'completed' | 'failed', errorCode?: string, events?: string[], absentEvents?: string[],
 *     toolCalls?: number }
 * }} Fixture
 */

/** Read every fixture, sorted by file name. @param {string} [dir] @returns {Promise<Fixture[]>} */
export async function loadCorpus(dir = FIXTURES_DIR) {
  const names = (await readdir(dir)).filter((n) => n.endsWith('.json')).sort();
  const out = [];
  for (const n of names) {
    const fixture = JSON.parse(
      await readFile(new URL(n, `file://${dir.endsWith('/') ? dir : `${dir}/`}`), 'utf8'),
    );
    out.push({ ...fixture, name: fixture.name ?? n.replace(/\.json$/, '') });
  }
  return out;
}

/** @param {FixtureReply} r */
function expand(r) {
  const text = (/** @type {string | string[]} */ t) => {
    const s = Array.isArray(t) ? t.join('\n') : t;
    return Object.hasOwn(STANDARD_REPLIES, s)
      ? STANDARD_REPLIES[/** @type {keyof typeof STANDARD_REPLIES} */ (s)]
      : s;
  };
  if (typeof r === 'string' || Array.isArray(r)) return text(r);
  const obj = { ...r };
  if (obj.content !== undefined) obj.content = text(obj.content);
  return obj;
}

/**
 * What happened, in order, as event names: policy codes (`executor_invalid`, `done_rejected`, …), `repair` for
 * an executor repair call, `tolerated` for executor JSON accepted after a syntax repair, `truncated` for a reply
 * cut off at the output limit (not used), `ignored_directives`, `guessed`, `model_error`.
 * @param {import('@ccagent/engine').StoredStep[]} steps
 */
export function eventsOf(steps) {
  const events = [];
  for (const s of steps) {
    if (s.kind === 'policy' && s.error) events.push(s.error.code);
    else if ((s.kind === 'planner' || s.kind === 'executor' || s.kind === 'executor_repair') && s.error) {
      events.push('model_error');
    } else if (s.kind === 'executor_repair') events.push('repair');
    if (s.kind === 'executor' || s.kind === 'executor_repair') {
      if ((s.validationErrors ?? []).some((v) => v.startsWith('tolerated:'))) events.push('tolerated');
    }
    if ((s.validationErrors ?? []).some((v) => v.startsWith('truncated:'))) events.push('truncated');
    if (
      s.kind === 'planner' &&
      s.directive &&
      typeof s.directive === 'object' &&
      !Array.isArray(s.directive)
    ) {
      if ('ignored' in s.directive) events.push('ignored_directives');
      if ('guesses' in s.directive) events.push('guessed');
    }
  }
  return events;
}

let runCounter = 0;

/** @param {string[]} events @param {string[]} expected */
function isSubsequence(events, expected) {
  let i = 0;
  for (const e of events) if (i < expected.length && e === expected[i]) i++;
  return i === expected.length;
}

/**
 * Run one fixture and judge it. `handled` means: the stated status (and error code) was reached, the stated events
 * happened in that order, no strategy crash, and the loop stopped on its own (within MAX_MODEL_CALLS and the
 * time limit).
 * @param {Fixture} fixture
 * @param {{ createPlannerExecutorStrategy: (o: any) => import('@ccagent/engine').TaskStrategy,
 *   models: Awaited<ReturnType<typeof startModels>>, timeoutMs?: number,
 *   override?: { policy?: Record<string, unknown>, completion?: Record<string, unknown> } }} deps
 *   `override` replaces policy/completion fields after the fixture's own (the bench's "policies off" baseline).
 */
export async function runFixture(fixture, deps) {
  const started = performance.now();
  // Fresh model names per run, so the fake server's request log counts this run only.
  const tag = ++runCounter;
  const planner = `corpus-planner-${fixture.name}-${tag}`;
  const executor = `corpus-executor-${fixture.name}-${tag}`;
  deps.models.fake.script(planner, fixture.planner.map(expand));
  deps.models.fake.script(executor, (fixture.executor ?? []).map(expand));
  /** @type {string[]} */
  const problems = [];
  let status = 'crashed';
  /** @type {string | undefined} */
  let errorCode;
  /** @type {string[]} */
  let events = [];
  let toolCalls = 0;
  try {
    const strategy = deps.createPlannerExecutorStrategy({
      planner: deps.models.role(planner),
      executor: deps.models.role(executor),
      mode: fixture.mode ?? 'parser-then-model',
      policy: { ...fixture.policy, ...deps.override?.policy },
      completion: { ...fixture.completion, ...deps.override?.completion },
      ...(fixture.interactive ? { interactive: true } : {}),
    });
    const run = await runTask(
      strategy,
      { prompt: PROMPT, ...(fixture.task ?? {}) },
      { files: fixture.files ?? HELLO, answers: fixture.answers ?? [], timeoutMs: deps.timeoutMs ?? 20_000 },
    );
    await removeRoot(run.root);
    status = run.task.status;
    errorCode = run.task.error?.code;
    events = eventsOf(run.steps);
    toolCalls = run.task.counters.toolCalls;
    const exp = fixture.expect;
    if (status !== exp.status) problems.push(`status ${status}, expected ${exp.status}`);
    if (exp.errorCode !== undefined && errorCode !== exp.errorCode) {
      problems.push(`error ${errorCode ?? 'none'}, expected ${exp.errorCode}`);
    }
    if (errorCode === 'strategy_error') problems.push(`strategy crashed: ${run.task.error?.message}`);
    if (exp.events && !isSubsequence(events, exp.events)) {
      problems.push(`events [${events.join(', ')}] lack [${exp.events.join(', ')}] in order`);
    }
    for (const e of exp.absentEvents ?? []) if (events.includes(e)) problems.push(`unexpected event ${e}`);
    if (exp.toolCalls !== undefined && toolCalls !== exp.toolCalls) {
      problems.push(`${toolCalls} tool calls, expected ${exp.toolCalls}`);
    }
  } catch (err) {
    problems.push(`crashed: ${err instanceof Error ? err.message : String(err)}`);
  }
  const modelCalls =
    deps.models.fake.chatRequests(planner).length + deps.models.fake.chatRequests(executor).length;
  if (modelCalls > MAX_MODEL_CALLS) problems.push(`${modelCalls} model calls (unbounded loop?)`);
  return {
    name: fixture.name,
    role: fixture.role,
    handled: problems.length === 0,
    problems,
    status,
    errorCode,
    events,
    toolCalls,
    modelCalls,
    ms: Math.round(performance.now() - started),
  };
}

/**
 * Run the whole corpus with one fake server. @param {{ createPlannerExecutorStrategy: any, dir?: string,
 * only?: string, override?: { policy?: Record<string, unknown>, completion?: Record<string, unknown> } }} options
 */
export async function runCorpus(options) {
  const fixtures = (await loadCorpus(options.dir)).filter(
    (f) => !options.only || f.name.includes(options.only),
  );
  const models = await startModels();
  try {
    const results = [];
    for (const f of fixtures) results.push(await runFixture(f, { ...options, models }));
    return { results, handled: results.filter((r) => r.handled).length, total: results.length };
  } finally {
    await models.close();
  }
}
