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

/** The three executor modes; a fixture with `modes` runs in each it names (the issue-19 cases: all three). */
export const MODES = /** @type {const} */ (['parser', 'model', 'parser-then-model']);

/** A reply in the JSON shape of the executor schema. @param {string} tool @param {unknown} parameters */
const toolReply = (tool, parameters) =>
  JSON.stringify({ kind: 'tool', explanation: 'translated', tool, parameters });

/** Words of a canonical ARGS/THEN line: bare words and JSON-quoted ones. @param {string} text */
function canonicalWords(text) {
  return [...text.matchAll(/"(?:[^"\\]|\\.)*"|\S+/g)].map((m) =>
    m[0].startsWith('"') ? JSON.parse(m[0]) : m[0],
  );
}

/**
 * A faithful executor model: the exact translation of the canonical directive it is given (the strategy sends
 * `formatDirective`'s text as the first user message), written here from that text and not with the package's own
 * parser. `null` for a message that is not a canonical directive.
 * @param {string} text
 */
export function translateCanonical(text) {
  const lines = text.split('\n');
  const kind = (lines[0] ?? '').trim();
  const field = (/** @type {string} */ name) => {
    const l = lines.find((x) => x.startsWith(`${name}:`));
    return l === undefined ? '' : l.slice(name.length + 1).trim();
  };
  switch (kind) {
    case 'RUN': {
      const args = field('ARGS');
      return toolReply('cc_run_program', {
        path: canonicalWords(field('PATH'))[0] ?? '',
        args: args.startsWith('[') ? JSON.parse(args) : canonicalWords(args),
      });
    }
    case 'SHELL':
      // formatDirective puts a command in inline code when a remark mark would otherwise cut it (`a — b`).
      return toolReply('cc_shell', { command: field('COMMAND').replace(/^`([^`]+)`$/, '$1') });
    case 'ASK_USER':
      return toolReply('ask_user', { question: field('QUESTION'), why: field('WHY') });
    case 'DONE':
      return JSON.stringify({
        kind: 'final',
        explanation: 'translated',
        result: { success: true, message: field('SUMMARY'), details: field('NOTES') },
      });
    case 'WRITE_FILE': {
      const open = lines.findIndex((l) => l === 'CONTENT:') + 1;
      const then = lines.findIndex((l, i) => i > open && l.startsWith('THEN:'));
      const content = `${lines.slice(open + 1, then - 1).join('\n')}\n`;
      const runs = lines
        .slice(then + 1)
        .filter((l) => l.startsWith('- '))
        .map((l) => {
          const [path, ...args] = canonicalWords(l.slice(2));
          return { path, args };
        });
      return runs.length > 0
        ? toolReply('cc_write_and_run', { path: canonicalWords(field('PATH'))[0], content, runs })
        : toolReply('cc_write', { path: canonicalWords(field('PATH'))[0], content });
    }
    default:
      return null;
  }
}

/**
 * @typedef {string | string[] | { content?: string | string[], json?: unknown, doneReason?: string,
 *   fault?: Record<string, unknown> }} FixtureReply
 * @typedef {{ status?: 'completed' | 'failed', errorCode?: string | null, events?: string[], absentEvents?: string[],
 *   toolCalls?: number | null, called?: string[], neverCalled?: string[], result?: Record<string, unknown>,
 *   parsed?: Record<string, unknown>, asked?: Array<{ question: string, why: string }> }} Expectation
 * @typedef {{
 *   name: string, description: string, role: 'planner' | 'executor' | 'both',
 *   mode?: 'model' | 'parser' | 'parser-then-model', policy?: Record<string, unknown>,
 *   completion?: Record<string, unknown>, interactive?: boolean,
 *   task?: { allowedCommands?: string[], budgets?: Record<string, number>, metadata?: Record<string, unknown> },
 *   files?: Record<string, string>, answers?: string[],
 *   planner: FixtureReply[], executor?: FixtureReply[],
 *   expect: Expectation & { status: 'completed' | 'failed' },
 *   class?: string, required?: string, modes?: Array<'parser' | 'model' | 'parser-then-model'>,
 *   expectByMode?: Record<string, Expectation>, strict?: boolean, executorGuess?: FixtureReply,
 *   native?: { replies: FixtureReply[], expect: Expectation & { status: 'completed' | 'failed' } }
 * }} Fixture
 *
 * Fixtures with `modes` (every fixture since issue 19; `mode` is the one an earlier fixture was written for) run
 * once per mode they name, with `expectByMode[mode]` laid over
 * `expect`; their executor model answers from `executor` while it lasts (`"$translate"` = the faithful
 * translation), then faithfully ({@link translateCanonical}); `executorGuess` is what it would answer to text that is
 * not a directive (a guess the strategy must never ask for). `native` runs the same case's native-loop form.
 * `called` / `neverCalled` are substrings of the dispatched calls (`command {json args}`); `parsed` the fields the
 * first planner reply parsed as a directive of `parsed.kind` must have (as the step log records it; issue 31),
 * `asked` the questions
 * the task asked the user, exactly.
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
 * cut off at the output limit (not used), `ignored_directives`, `guessed`, `text_ignored` for a planner reply whose
 * text outside the directive's values was left out (issue 31), `model_error`.
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
      if ('tolerated' in s.directive) events.push('text_ignored');
    }
  }
  return events;
}

/**
 * The executor script of a fixture with `modes`: its replies in order, then faithful translations.
 * @param {Fixture} fixture
 */
function executorScript(fixture) {
  const queue = (fixture.executor ?? []).map(expand);
  return (/** @type {{ body: { messages?: Array<{ role: string, content: string }> } }} */ request) => {
    const directive = request.body.messages?.find((m) => m.role === 'user')?.content ?? '';
    const faithful = translateCanonical(directive);
    if (faithful === null) {
      return fixture.executorGuess !== undefined
        ? expand(fixture.executorGuess)
        : 'no directive to translate';
    }
    const next = queue.length > 0 ? queue.shift() : '$translate';
    return next === '$translate' ? faithful : /** @type {any} */ (next);
  };
}

/** The dispatched calls of a run as `command {json args}`. @param {Array<Record<string, unknown>>} history */
function dispatched(history) {
  return history.filter((h) => h.type === 'tool_call').map((h) => `${h.command} ${JSON.stringify(h.args)}`);
}

/** The questions a run asked the user. @param {Array<Record<string, unknown>>} history */
function questions(history) {
  return history
    .filter((h) => h.type === 'question')
    .map((h) => ({ question: h.question, why: h.why ?? '' }));
}

/**
 * The parsed directive of the first planner reply with one of `kind` (any kind when not given), as logged.
 * @param {any[]} steps @param {unknown} [kind]
 */
function firstParsed(steps, kind) {
  const s = steps.find(
    (x) =>
      x.kind === 'planner' &&
      x.directive &&
      typeof x.directive === 'object' &&
      (kind === undefined || x.directive.kind === kind),
  );
  return s?.directive;
}

/**
 * The problems of a finished run against an expectation (empty = handled).
 * @param {Expectation & { status: string }} exp
 * @param {{ status: string, errorCode?: string, events: string[], toolCalls: number, calls: string[],
 *   result?: unknown, parsed?: unknown, asked?: unknown[] }} got
 */
function judge(exp, got) {
  const problems = [];
  if (got.status !== exp.status) problems.push(`status ${got.status}, expected ${exp.status}`);
  // null in an expectation (a mode's override) = not checked in that mode.
  if (exp.errorCode != null && got.errorCode !== exp.errorCode) {
    problems.push(`error ${got.errorCode ?? 'none'}, expected ${exp.errorCode}`);
  }
  if (got.errorCode === 'strategy_error') problems.push('strategy crashed');
  if (exp.events && !isSubsequence(got.events, exp.events)) {
    problems.push(`events [${got.events.join(', ')}] lack [${exp.events.join(', ')}] in order`);
  }
  for (const e of exp.absentEvents ?? []) if (got.events.includes(e)) problems.push(`unexpected event ${e}`);
  if (exp.toolCalls != null && got.toolCalls !== exp.toolCalls) {
    problems.push(`${got.toolCalls} tool calls, expected ${exp.toolCalls}`);
  }
  for (const c of exp.called ?? []) {
    if (!got.calls.some((x) => x.includes(c)))
      problems.push(`no dispatched call contains ${JSON.stringify(c)}`);
  }
  for (const c of exp.neverCalled ?? []) {
    const hit = got.calls.find((x) => x.includes(c));
    if (hit) problems.push(`dispatched ${hit}, which must never run`);
  }
  if (exp.parsed) {
    const d = /** @type {Record<string, unknown>} */ (got.parsed ?? {});
    for (const [k, v] of Object.entries(exp.parsed)) {
      if (JSON.stringify(d[k]) !== JSON.stringify(v))
        problems.push(`parsed ${k} ${JSON.stringify(d[k])}, expected ${JSON.stringify(v)}`);
    }
  }
  if (exp.asked && JSON.stringify(got.asked ?? []) !== JSON.stringify(exp.asked)) {
    problems.push(`asked ${JSON.stringify(got.asked)}, expected ${JSON.stringify(exp.asked)}`);
  }
  if (exp.result) {
    const r = /** @type {Record<string, unknown>} */ (got.result ?? {});
    for (const [k, v] of Object.entries(exp.result)) {
      if (JSON.stringify(r[k]) !== JSON.stringify(v))
        problems.push(`result.${k} ${JSON.stringify(r[k])}, expected ${JSON.stringify(v)}`);
    }
  }
  return problems;
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
 *   models: Awaited<ReturnType<typeof startModels>>, timeoutMs?: number, mode?: string,
 *   override?: { policy?: Record<string, unknown>, completion?: Record<string, unknown> } }} deps
 *   `override` replaces policy/completion fields after the fixture's own (the bench's "policies off" baseline);
 *   `mode` is the executor mode of this run (a fixture with `modes`), else the fixture's `mode`.
 */
export async function runFixture(fixture, deps) {
  const started = performance.now();
  // Fresh model names per run, so the fake server's request log counts this run only.
  const tag = ++runCounter;
  const planner = `corpus-planner-${fixture.name}-${tag}`;
  const executor = `corpus-executor-${fixture.name}-${tag}`;
  deps.models.fake.script(planner, fixture.planner.map(expand));
  deps.models.fake.script(
    executor,
    fixture.modes ? executorScript(fixture) : (fixture.executor ?? []).map(expand),
  );
  const mode = deps.mode ?? fixture.mode ?? 'parser-then-model';
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
      mode,
      ...(fixture.strict ? { strict: true } : {}),
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
    const exp = { ...fixture.expect, ...(fixture.expectByMode?.[mode] ?? {}) };
    problems.push(
      ...judge(exp, {
        status,
        errorCode,
        events,
        toolCalls,
        calls: dispatched(/** @type {any} */ (run.history)),
        result: run.task.result,
        parsed: firstParsed(run.steps, fixture.expect.parsed?.kind),
        asked: questions(/** @type {any} */ (run.history)),
      }),
    );
    if (errorCode === 'strategy_error') problems.push(`strategy crashed: ${run.task.error?.message}`);
  } catch (err) {
    problems.push(`crashed: ${err instanceof Error ? err.message : String(err)}`);
  }
  const modelCalls =
    deps.models.fake.chatRequests(planner).length + deps.models.fake.chatRequests(executor).length;
  if (modelCalls > MAX_MODEL_CALLS) problems.push(`${modelCalls} model calls (unbounded loop?)`);
  return {
    name: fixture.name,
    role: fixture.role,
    class: fixture.class ?? 'earlier corpus',
    mode,
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
 * Run a fixture's native-loop form (`fixture.native`): the scripted replies through the native tool-calling strategy,
 * judged like the planner/executor runs (mode `native`).
 * @param {Fixture} fixture
 * @param {{ createNativeToolStrategy: (o: any) => import('@ccagent/engine').TaskStrategy,
 *   models: Awaited<ReturnType<typeof startModels>>, timeoutMs?: number }} deps
 */
export async function runNativeFixture(fixture, deps) {
  const started = performance.now();
  const native = /** @type {NonNullable<Fixture['native']>} */ (fixture.native);
  const name = `corpus-native-${fixture.name}-${++runCounter}`;
  deps.models.fake.script(name, native.replies.map(expand));
  /** @type {string[]} */
  const problems = [];
  let status = 'crashed';
  /** @type {string | undefined} */
  let errorCode;
  let toolCalls = 0;
  try {
    const strategy = deps.createNativeToolStrategy({ model: deps.models.role(name) });
    const run = await runTask(
      strategy,
      { prompt: PROMPT, kind: 'native' },
      { files: fixture.files ?? HELLO, timeoutMs: deps.timeoutMs ?? 20_000 },
    );
    await removeRoot(run.root);
    status = run.task.status;
    errorCode = run.task.error?.code;
    toolCalls = run.task.counters.toolCalls;
    problems.push(
      ...judge(native.expect, {
        status,
        errorCode,
        events: [],
        toolCalls,
        calls: dispatched(/** @type {any} */ (run.history)),
        result: run.task.result,
      }),
    );
  } catch (err) {
    problems.push(`crashed: ${err instanceof Error ? err.message : String(err)}`);
  }
  const modelCalls = deps.models.fake.chatRequests(name).length;
  if (modelCalls > MAX_MODEL_CALLS) problems.push(`${modelCalls} model calls (unbounded loop?)`);
  return {
    name: fixture.name,
    role: 'native',
    class: fixture.class ?? 'earlier corpus',
    mode: 'native',
    handled: problems.length === 0,
    problems,
    status,
    errorCode,
    events: [],
    toolCalls,
    modelCalls,
    ms: Math.round(performance.now() - started),
  };
}

/**
 * Run the whole corpus with one fake server: each fixture in each of its `modes` (or its one `mode`), and its
 * native form when it has one and `createNativeToolStrategy` is given. @param {{ createPlannerExecutorStrategy: any,
 * createNativeToolStrategy?: any, dir?: string,
 * only?: string, override?: { policy?: Record<string, unknown>, completion?: Record<string, unknown> } }} options
 */
export async function runCorpus(options) {
  const fixtures = (await loadCorpus(options.dir)).filter(
    (f) => !options.only || f.name.includes(options.only),
  );
  const models = await startModels();
  try {
    const results = [];
    for (const f of fixtures) {
      for (const mode of f.modes ?? [undefined])
        results.push(await runFixture(f, { ...options, models, mode }));
      if (f.native && options.createNativeToolStrategy) {
        results.push(await runNativeFixture(f, { ...options, models }));
      }
    }
    return { results, handled: results.filter((r) => r.handled).length, total: results.length };
  } finally {
    await models.close();
  }
}
