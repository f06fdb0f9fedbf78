#!/usr/bin/env node
// Model cost bench (not part of `npm test`; run `npm run build` first, then
// `node tools/bench/model-cost/run.mjs [--only todo|todo-warm|synthetic|native|minecraft|minecraft-warm] [--layout naive|single|conversation] [--trace]
// [--calls [--text]] [--json]`; --trace prints every model call: prompt, cached, evaluated and output tokens, compactions and
// loads; --calls also prints where each call's evaluated tokens go: the uncached part of its prompt cut at messages
// and section headings, with the tokens of each piece, re-tokenizing every prompt: minutes for the native session,
// so combine it with --only; --calls --text prints that uncached text too).
//
// With a local model almost all of a task's wall time is the GPU: evaluating the prompt tokens that are not in the
// server's cache, and generating. This bench runs real tasks — the real Engine, the built @ccagent/agent strategies,
// the real `ollama` client, Lua 5.2 running the programs — against the fake Ollama server of @ccagent/testkit, which
// models Ollama's prompt cache (per slot, longest common prefix, reloads), counts tokens with the real Qwen
// tokenizer, and prices each call on a reference GPU (REFERENCE_GPU: a 7–8B Q4_K_M model on a 12 GB card). One
// model serves every role (planner, executor, native), with Ollama's defaults: one slot, 5 min keep-alive.
//
// Sessions: the TODO.lua acceptance run, a synthetic 60-step planner session (an 80-line file rewritten every 4th
// step, runs with output, failures with tracebacks), a 200-call native tool-calling task and a Minecraft
// plan/re-plan task (the minecraft_agent strategy, its mod endpoint and a scripted mod over a real WebSocket). Each
// runs in the same bench run in three layouts (see VARIANTS): the raw baseline — the seed's naive design —, the
// single-message layout used before the conversations, and today's defaults (Minecraft: two, its seed design is the
// single-message layout).
import { parseArgs } from 'node:util';
import { createNativeToolStrategy, createPlannerExecutorStrategy, parseDirective } from '@ccagent/agent';
import { Engine, InMemoryTaskStore } from '@ccagent/engine';
import {
  MINECRAFT_TASK_KIND,
  MinecraftActionExecutor,
  MinecraftEndpoint,
  ModClient,
  createMinecraftStrategy,
  defaultModelFactory,
} from '@ccagent/minecraft';
import { REFERENCE_GPU, loadQwenTokenizer, renderChatPrompt } from '@ccagent/testkit';
import { removeRoot, runTask, startModels, todo } from '@ccagent/agent/testing';
import { machineInfo, writeResults } from '../lib/results.mjs';

const { BROKEN, COMPLETION, EXECUTOR_REPLIES, PLANNER_REPLIES, PROMPT } = todo;

const { values: flags } = parseArgs({
  options: {
    only: { type: 'string' },
    layout: { type: 'string' },
    trace: { type: 'boolean', default: false },
    calls: { type: 'boolean', default: false },
    text: { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
  },
});
// The orchestrator's default roles (apps/orchestrator/src/config.ts): one model for every role, the planner and the
// native loop with a 16k context, the executor asking for 8k.
const MODEL = 'qwen3:8b';
const ROLE_OPTIONS = {
  planner: { temperature: 0.2, numCtx: 16384 },
  executor: { temperature: 0, numCtx: 8192 },
  native: { temperature: 0.2, numCtx: 16384 },
};
const role = (models, name) => models.role(MODEL, { options: ROLE_OPTIONS[name] });

// ---------------------------------------------------------------- the sessions

/**
 * The layouts compared. `naive`: the seed's design — the whole memory rendered into one message in the design order
 * (STATE right after TASK), every directive through the executor model, the native window moving every call.
 * `single`: one rendered message in the prefix-stable order, the native window moving 8 turns when full (the layout
 * before the conversation). `conversation`: today's defaults — an append-only planner conversation, the native window
 * moving far enough to refill half the budget.
 */
const VARIANTS = ['naive', 'single', 'conversation'];
const PLANNER_VARIANT = {
  naive: { mode: 'model', policy: { memory: { order: 'design', conversation: false } } },
  single: { policy: { memory: { conversation: false } } },
  conversation: {},
};
const NATIVE_VARIANT = {
  naive: { windowChunkTurns: 1, windowFill: 1 },
  single: { windowFill: 1 },
  conversation: {},
};
const withPolicy = (variant, policy) => {
  const v = PLANNER_VARIANT[variant];
  return { ...v, policy: { ...v.policy, ...policy, memory: { ...v.policy?.memory, ...policy.memory } } };
};

/** The warm-up task of a warm server: hello.lua fixed and run, then DONE (the planner's and executor's replies). */
const WARM_UP = {
  prompt: 'hello.lua must print exactly "Hello, world!". Fix it and run it.',
  files: { 'hello.lua': 'print("Hello world")\n' },
  planner: [
    'PLAN:\n1. fix the greeting\n2. run it\n\nWRITE_FILE\nPATH: hello.lua\nLANGUAGE: lua\nCONTENT:\n```lua\nprint("Hello, world!")\n```\nTHEN:\n- hello.lua',
    'DONE\nSUMMARY: hello.lua prints "Hello, world!" (see the last run).\nNOTES: none',
  ],
};

/**
 * The TODO.lua acceptance run. With `warm`, the server first serves another task (WARM_UP) in the same layout, as an
 * orchestrator that has been running does; only the TODO.lua task's calls are counted (`skipCalls`).
 */
async function todoRun(models, variant, { warm = false } = {}) {
  const strategy = createPlannerExecutorStrategy({
    planner: role(models, 'planner'),
    executor: role(models, 'executor'),
    completion: COMPLETION,
    ...PLANNER_VARIANT[variant],
  });
  let skipCalls = 0;
  if (warm) {
    let n = 0;
    models.fake.script(MODEL, (req) => {
      const messages = req.body.messages ?? [];
      if (String(messages[0]?.content ?? '').startsWith('You are the EXECUTOR'))
        return executorFor(String(messages.at(-1)?.content ?? ''));
      return WARM_UP.planner[n++] ?? '';
    });
    // The same roles and layout; the TODO.lua completion check is the measured task's own.
    const warmUp = createPlannerExecutorStrategy({
      planner: role(models, 'planner'),
      executor: role(models, 'executor'),
      ...PLANNER_VARIANT[variant],
    });
    const before = await runTask(warmUp, { prompt: WARM_UP.prompt, kind: 'code' }, { files: WARM_UP.files });
    await removeRoot(before.root);
    if (before.task.status !== 'completed')
      throw new Error(
        `the warm-up task ended ${before.task.status}: ${JSON.stringify(before.task.error ?? null)}`,
      );
    skipCalls = models.fake.chatRequests(MODEL).length;
  }
  let planner = 0;
  let executor = 0;
  models.fake.script(MODEL, (req) => {
    const system = String(req.body.messages?.[0]?.content ?? '');
    if (system.startsWith('You are the EXECUTOR')) return EXECUTOR_REPLIES[executor++] ?? '';
    return PLANNER_REPLIES[planner++] ?? '';
  });
  const run = await runTask(strategy, { prompt: PROMPT, kind: 'code' }, { files: { 'TODO.lua': BROKEN } });
  return { ...run, skipCalls };
}

/** quarry.lua as the synthetic session writes it at `step`: 80 numbered lines, then the subcommands. */
function quarrySource(step) {
  const lines = Array.from({ length: 80 }, (_, i) => `local v${i} = ${step * 100 + i} -- line ${i}`);
  lines.push(
    'local cmd, n = ...',
    'if cmd == "dig" then error("attempt to compare nil with number") end',
    'print("Mined " .. tostring(n) .. " blocks")',
    'print("Fuel left: " .. tostring(1000 - (tonumber(n) or 0)))',
    'print("Position: " .. tostring(n) .. ",64,-" .. tostring(n))',
  );
  return lines.join('\n');
}

/** The planner's directive for synthetic planner call `n` (1-based): a rewrite (and a test run) every 4th call. */
function syntheticDirective(n) {
  if (n > 60) {
    return 'DONE\nSUMMARY: quarry.lua digs, moves and reports.\nNOTES: tested report on every pass.';
  }
  if (n % 4 === 1) {
    return [
      ...(n === 1 ? ['PLAN:\n1. write quarry.lua\n2. test dig, move, report\n3. fix\n'] : []),
      'WRITE_FILE',
      'PATH: quarry.lua',
      'LANGUAGE: lua',
      'CONTENT:',
      '```lua',
      quarrySource(n),
      '```',
      'THEN:',
      `- quarry.lua report ${n}`,
    ].join('\n');
  }
  if (n % 7 === 0) return `RUN\nPATH: quarry.lua\nARGS: dig ${n}\nEXPECT: digging`;
  return `RUN\nPATH: quarry.lua\nARGS: report ${n}\nEXPECT: a report`;
}

/** What the executor model answers for a directive (in `model` mode): the matching tool call, as a 7B model does. */
function executorFor(directiveText) {
  const parsed = parseDirective(directiveText);
  if (!parsed.ok) return '{}';
  const d = parsed.value.directive;
  const tool = (name, parameters) =>
    JSON.stringify({ kind: 'tool', explanation: 'as directed', tool: name, parameters });
  if (d.kind === 'RUN') return tool('cc_run_program', { path: d.path, args: d.args });
  if (d.kind === 'WRITE_FILE') {
    return d.then.length > 0
      ? tool('cc_write_and_run', { path: d.path, content: d.content, runs: d.then })
      : tool('cc_write', { path: d.path, content: d.content });
  }
  return JSON.stringify({
    kind: 'final',
    explanation: 'done',
    result: { success: true, message: 'done', details: '' },
  });
}

async function syntheticRun(models, variant) {
  let planner = 0;
  models.fake.script(MODEL, (req) => {
    const messages = req.body.messages ?? [];
    const system = String(messages[0]?.content ?? '');
    if (system.startsWith('You are the EXECUTOR')) return executorFor(String(messages.at(-1)?.content ?? ''));
    planner += 1;
    return syntheticDirective(planner);
  });
  const budgets = { maxSteps: 200, maxToolCalls: 200 };
  const strategy = createPlannerExecutorStrategy({
    planner: role(models, 'planner'),
    executor: role(models, 'executor'),
    ...withPolicy(variant, { ...budgets, gatherFiles: false, memory: {} }),
  });
  return runTask(
    strategy,
    {
      prompt: 'Write and debug a 3x3 quarry program for a mining turtle; test every subcommand.',
      kind: 'code',
      budgets,
    },
    { timeoutMs: 120_000 },
  );
}

const NATIVE_CALLS = 200;

async function nativeRun(models, variant) {
  let call = 0;
  models.fake.script(MODEL, () => {
    call += 1;
    if (call > NATIVE_CALLS) return `All ${NATIVE_CALLS} sectors are surveyed.`;
    return {
      content: '',
      toolCalls: [{ name: 'run_program', arguments: { path: 'survey.lua', args: [String(call)] } }],
    };
  });
  const strategy = createNativeToolStrategy({
    model: role(models, 'native'),
    maxIterations: NATIVE_CALLS + 10,
    ...NATIVE_VARIANT[variant],
  });
  return runTask(
    strategy,
    {
      prompt: `Survey sectors 1 to ${NATIVE_CALLS} with survey.lua, one sector per call, and report.`,
      kind: 'native',
      budgets: { maxSteps: 1000, maxToolCalls: 1000 },
    },
    {
      files: {
        // A turtle's scan of one sector: a few lines of blocks and coordinates, like a real survey prints.
        'survey.lua': [
          'local n = tonumber((...)) or 0',
          'print("sector " .. n .. " at x=" .. (n * 16) .. " z=" .. (-n * 16))',
          'for y = 60, 64 do',
          '  print(("y=%d stone=%d coal=%d iron=%d air=%d"):format(y, (n * y) % 97, (n + y) % 7, (n * 3 + y) % 5, (y - n) % 11))',
          'end',
          'print("fuel " .. (5000 - n * 12))',
        ].join('\n'),
      },
      timeoutMs: 300_000,
    },
  );
}

// ---------------------------------------------------------------- Minecraft

/**
 * A scripted world for the Minecraft session: goto moves the player, mine adds what was mined (the first "mine 12
 * stone" finds only 5: the rest is under water), place uses a block from the inventory and fails once on a corner
 * an oak log occupies, until the log is mined. Results and errors have the shapes the bridge's mineflayer runner
 * reports (`{ position }`, `{ mined }`, `{ placed, at }`, `{ crafted, times }`, `{ said }`).
 */
class QuarryWorld {
  position = { x: 0, y: 64, z: 0 };
  inventory = new Map([
    ['cobblestone', 2],
    ['oak_planks', 4],
    ['coal', 3],
  ]);
  logCleared = false;
  firstMine = true;
  add(item, n) {
    this.inventory.set(item, (this.inventory.get(item) ?? 0) + n);
  }
  run(action) {
    const ok = (result) => Promise.resolve({ ok: true, result });
    const fail = (error) => Promise.resolve({ ok: false, error });
    switch (action.type) {
      case 'goto':
        this.position = { x: action.x + 0.5, y: action.y, z: action.z + 0.5 };
        return ok({ position: this.position });
      case 'mine': {
        if (action.target === 'stone' && this.firstMine) {
          this.firstMine = false;
          this.add('cobblestone', 5);
          return fail(
            `mined 5 of ${action.quantity} stone: the rest near ${this.position.x} ${this.position.z} is under water`,
          );
        }
        if (action.target === 'oak_log') this.logCleared = true;
        this.add(action.target === 'stone' ? 'cobblestone' : action.target, action.quantity);
        return ok({ mined: action.quantity });
      }
      case 'place': {
        if (action.x === 21 && action.z === 21 && !this.logCleared)
          return fail('21 63 21 is not empty (oak_log)');
        const have = this.inventory.get(action.block) ?? 0;
        if (have < 1) return fail(`no ${action.block} in the inventory`);
        this.inventory.set(action.block, have - 1);
        return ok({ placed: action.block, at: [action.x, action.y, action.z] });
      }
      case 'craft':
        this.add(action.recipe, action.quantity);
        return ok({ crafted: action.recipe, times: action.quantity });
      case 'chat':
        return ok({ said: action.message });
      default:
        return ok(null);
    }
  }
  state() {
    return {
      position: this.position,
      health: 20,
      hunger: 17,
      saturation: 3,
      inventory: [...this.inventory]
        .filter(([, n]) => n > 0)
        .map(([item, count], slot) => ({ slot: 36 + slot, item, count })),
      dimension: 'overworld',
      gameMode: 'survival',
    };
  }
}

const floor = (except = []) => {
  const places = [];
  for (const x of [19, 20, 21])
    for (const z of [19, 20, 21])
      if (!except.some(([ex, ez]) => ex === x && ez === z))
        places.push({ type: 'place', block: 'cobblestone', x, y: 63, z });
  return places;
};

/** What a 7-8B model plans for the shelter-floor task: a plan, expansions and two re-plans after failed actions. */
const MC_REPLIES = [
  {
    goals: [
      { goal: 'walk to the quarry', actions: [{ type: 'goto', x: 12, y: 64, z: 4 }] },
      { goal: 'mine 12 cobblestone' },
      { goal: 'walk to the site', actions: [{ type: 'goto', x: 20, y: 64, z: 20 }] },
      { goal: 'lay the 3x3 floor', actions: floor() },
      { goal: 'light the floor' },
      { goal: 'report', actions: [{ type: 'chat', message: 'The floor at 20 64 20 is done and lit.' }] },
    ],
  },
  { actions: [{ type: 'mine', target: 'stone', quantity: 12 }] },
  {
    goals: [
      { goal: 'walk to the hill', actions: [{ type: 'goto', x: 30, y: 70, z: -6 }] },
      { goal: 'mine 7 more cobblestone', actions: [{ type: 'mine', target: 'stone', quantity: 7 }] },
      { goal: 'walk to the site', actions: [{ type: 'goto', x: 20, y: 64, z: 20 }] },
      { goal: 'lay the 3x3 floor', actions: floor() },
      { goal: 'light the floor' },
      { goal: 'report', actions: [{ type: 'chat', message: 'The floor at 20 64 20 is done and lit.' }] },
    ],
  },
  {
    goals: [
      { goal: 'clear the corner', actions: [{ type: 'mine', target: 'oak_log', quantity: 1 }] },
      { goal: 'finish the floor', actions: [{ type: 'place', block: 'cobblestone', x: 21, y: 63, z: 21 }] },
      { goal: 'light the floor' },
      { goal: 'report', actions: [{ type: 'chat', message: 'The floor at 20 64 20 is done and lit.' }] },
    ],
  },
  {
    actions: [
      { type: 'craft', recipe: 'torch', quantity: 4 },
      { type: 'place', block: 'torch', x: 19, y: 64, z: 19 },
      { type: 'place', block: 'torch', x: 21, y: 64, z: 21 },
    ],
  },
];

const MC_LAYOUT = { naive: 'single', single: 'single', conversation: 'conversation' };

/** The warm-up task of a warm server for the Minecraft session: walk somewhere and say so (one plan). */
const MC_WARM_UP = {
  prompt: 'Walk to the well at 5 64 5 and say hello in chat.',
  reply: {
    goals: [
      { goal: 'walk to the well', actions: [{ type: 'goto', x: 5, y: 64, z: 5 }] },
      { goal: 'greet', actions: [{ type: 'chat', message: 'hello' }] },
    ],
  },
};

/**
 * The Minecraft plan/re-plan task. With `warm`, the same engine and server first run another Minecraft task
 * (MC_WARM_UP, same mode and layout), as an orchestrator that has been playing does; only the measured task's calls
 * are counted (`skipCalls`).
 */
async function minecraftRun(models, variant, { warm = false } = {}) {
  models.fake.script(
    MODEL,
    [...(warm ? [MC_WARM_UP.reply] : []), ...MC_REPLIES].map((json) => ({ json })),
  );
  const endpoint = new MinecraftEndpoint({ port: 0 });
  const { url } = await endpoint.start();
  const mod = new ModClient({ url, instanceId: 'steve', runner: new QuarryWorld() });
  await mod.start();
  const store = new InMemoryTaskStore();
  const engine = new Engine({
    store,
    strategies: {
      [MINECRAFT_TASK_KIND]: createMinecraftStrategy({
        states: endpoint,
        modelFor: defaultModelFactory(),
        layout: MC_LAYOUT[variant],
      }),
    },
    executor: new MinecraftActionExecutor(endpoint),
    tickIntervalMs: 0,
  });
  await engine.start();
  const play = async (prompt) => {
    const ended = new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the Minecraft task did not end within 60 s')), 60_000);
      const offs = [];
      const end = ({ task }) => {
        clearTimeout(timer);
        for (const off of offs) off();
        resolve(task);
      };
      offs.push(engine.on('taskCompleted', end), engine.on('taskFailed', end));
    });
    const created = await engine.createTask({
      kind: MINECRAFT_TASK_KIND,
      prompt,
      context: {
        instanceId: 'steve',
        model: MODEL,
        ollamaUrl: models.fake.url,
        mode: 'hybrid',
        maxReplans: 3,
      },
    });
    return { task: await ended, id: created.id };
  };
  try {
    let skipCalls = 0;
    if (warm) {
      const before = await play(MC_WARM_UP.prompt);
      if (before.task.status !== 'completed')
        throw new Error(
          `the warm-up task ended ${before.task.status}: ${JSON.stringify(before.task.error ?? null)}`,
        );
      skipCalls = models.fake.chatRequests(MODEL).length;
    }
    const { task, id } = await play(
      'Lay a 3x3 cobblestone floor for a shelter centred on 20 63 20, light it with torches, and tell me when done.',
    );
    return { task, steps: await engine.getSteps(id), root: null, skipCalls };
  } finally {
    await engine.stop();
    await store.close();
    mod.close();
    await endpoint.close();
  }
}

// ---------------------------------------------------------------- measuring

/**
 * The uncached part of a prompt (everything after its first `cached` tokens), cut where a chat message starts and
 * where a line opens a section (`# HISTORY`, `STATE:`, `- step 4 …`, `TASK: …`), each piece with its tokens and its
 * first line: where a call's evaluated tokens go.
 */
function evaluatedPieces(tokenizer, text, cached) {
  // The character where the cached tokens end: the longest prefix that encodes to at most `cached` tokens.
  let lo = 0;
  let hi = text.length;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (tokenizer.encode(text.slice(0, mid)).length <= cached) lo = mid;
    else hi = mid - 1;
  }
  const rest = text.slice(lo);
  if (flags.text) console.log(`      ┌ uncached text:\n${rest.replace(/^/gm, '      │ ')}\n      └`);
  // A system message (the prompt file) stays one piece; the messages after it are cut at their sections.
  let inSystem = text.lastIndexOf('<|im_start|>', lo) === text.lastIndexOf('<|im_start|>system', lo);
  const starts = [0];
  const opener = /\n(?=<\|im_start\|>|#{1,3} |[A-Z][A-Z ()/-]{3,}:|- (step|\{)|\d+\. |```)/g;
  for (const m of rest.matchAll(opener)) {
    const message = rest.startsWith('<|im_start|>', m.index + 1);
    if (message) inSystem = rest.startsWith('<|im_start|>system', m.index + 1);
    if (message || !inSystem) starts.push(m.index + 1);
  }
  starts.push(rest.length);
  const pieces = [];
  for (let k = 0; k + 1 < starts.length; k += 1) {
    const part = rest.slice(starts[k], starts[k + 1]);
    if (part === '') continue;
    const head = part.split('\n').find((l) => l.trim() !== '') ?? '';
    const prev = pieces.at(-1);
    // Runs of small pieces under one heading (a list, a code block) are shown as one.
    const tokens = tokenizer.encode(part).length;
    if (prev && /^(- |\d+\. )/.test(head) && /^(- |\d+\. )/.test(prev.firstHead ?? '')) {
      prev.tokens += tokens;
      prev.items += 1;
      continue;
    }
    pieces.push({ tokens, head: head.slice(0, 100), firstHead: head, items: 1 });
  }
  for (const p of pieces)
    if (p.items > 1) p.head = `${p.head.slice(0, 80)} (+${p.items - 1} more lines like it)`;
  return pieces;
}

const MODEL_STEPS = new Set([
  'planner',
  'executor',
  'executor_repair',
  'native',
  ...['mc_plan', 'mc_replan', 'mc_expand'].flatMap((k) => [k, `${k}_repair`, `${k}_reask`]),
]);

/**
 * Figures of one run from the fake server's records: every model call, priced on the reference GPU. The step log's
 * model-call records come in the same order as the requests; their `input.layout` says which calls compacted the
 * prompt (a restarted planner conversation, a moved native window). "Steady" calls are the others that did not load
 * the model: the ones a layout should serve from the cache.
 */
async function figures(run, fake) {
  const requests = fake
    .chatRequests(MODEL)
    .slice(run.skipCalls ?? 0)
    .filter((r) => r.modelCall);
  const calls = requests.map((r) => r.modelCall);
  const records = run.steps.filter((s) => MODEL_STEPS.has(s.kind));
  const compacting = calls.map((_, i) => {
    const layout = records[i]?.input?.layout;
    return layout?.compacted === true || layout?.windowMoved === true || layout?.restarted === true;
  });
  const sum = (list, f) => list.reduce((n, c) => n + f(c), 0);
  const prompt = sum(calls, (c) => c.promptTokens);
  const evaluated = sum(calls, (c) => c.evaluatedTokens);
  const steady = calls.filter((c, i) => !compacting[i] && c.load === undefined);
  const steps = run.task.counters.steps;
  // The task's first call evaluates its whole prompt when the server is cold, everything after the shared system
  // prompt when it is warm: a floor no layout goes below. The rest are the task's own steps.
  const first = calls[0]?.evaluatedTokens ?? 0;
  if (flags.trace || flags.calls) {
    const tokenizer = flags.calls ? await loadQwenTokenizer() : null;
    for (const [i, c] of calls.entries()) {
      const kind = records[i]?.kind ?? '?';
      const mark = compacting[i] ? ' compacted' : c.load ? ` load:${c.load}` : '';
      console.log(
        `  call ${i + 1} ${kind} step ${records[i]?.step ?? '?'}: prompt ${c.promptTokens}, cached ${c.cachedTokens}, evaluated ${c.evaluatedTokens}, output ${c.outputTokens}${mark}`,
      );
      if (tokenizer) {
        for (const piece of evaluatedPieces(tokenizer, renderChatPrompt(requests[i].body), c.cachedTokens))
          console.log(`      ${String(piece.tokens).padStart(5)}  ${piece.head}`);
      }
    }
  }
  return {
    status: run.task.status,
    steps,
    calls: calls.length,
    callsPerStep: calls.length / steps,
    promptPerCall: prompt / calls.length,
    evaluatedPerCall: evaluated / calls.length,
    evaluatedPerStep: evaluated / steps,
    firstCallEvaluated: first,
    laterPerStep: (evaluated - first) / steps,
    reuse: 1 - evaluated / prompt,
    steadyReuse: 1 - sum(steady, (c) => c.evaluatedTokens) / sum(steady, (c) => c.promptTokens),
    compactions: compacting.filter(Boolean).length,
    outputTokens: sum(calls, (c) => c.outputTokens),
    loads: calls.filter((c) => c.load !== undefined).length,
    reloads: calls.filter((c) => c.load !== undefined && c.load !== 'cold').length,
    overflows: calls.filter((c) => c.overflow).length,
    seconds: sum(calls, (c) => c.seconds.total),
  };
}

const SESSIONS = [
  { id: 'todo', name: 'TODO.lua acceptance run', run: todoRun },
  // The same run as the second task of a server that has served one already (its system prompt may be cached).
  {
    id: 'todo-warm',
    name: 'TODO.lua run, warm server',
    run: (models, variant) => todoRun(models, variant, { warm: true }),
  },
  { id: 'synthetic', name: 'synthetic 60-step session', run: syntheticRun },
  { id: 'native', name: `native task, ${NATIVE_CALLS} tool calls`, run: nativeRun },
  // The Minecraft strategy's seed design is its single-message layout, so its baseline row is that layout.
  {
    id: 'minecraft',
    name: 'Minecraft plan/re-plan task',
    run: minecraftRun,
    variants: ['single', 'conversation'],
  },
  {
    id: 'minecraft-warm',
    name: 'Minecraft task, warm server',
    run: (models, variant) => minecraftRun(models, variant, { warm: true }),
    variants: ['single', 'conversation'],
  },
];

const results = [];
for (const session of SESSIONS) {
  if (flags.only && session.id !== flags.only) continue;
  for (const variant of session.variants ?? VARIANTS) {
    if (flags.layout && variant !== flags.layout) continue;
    const models = await startModels({ tokenizer: 'auto' });
    try {
      const run = await session.run(models, variant);
      if (run.root) await removeRoot(run.root);
      if (run.task.status !== 'completed')
        console.log(
          `${session.name} (${variant}): ${run.task.status} ${JSON.stringify(run.task.error ?? null)}; ` +
            `policy events: ${run.steps
              .filter((s) => s.kind === 'policy' || s.validationErrors)
              .slice(0, 6)
              .map((s) => JSON.stringify(s.error ?? s.validationErrors))
              .join(' | ')}`,
        );
      if (flags.trace || flags.calls) console.log(`${session.name} (${variant}):`);
      results.push({
        session: session.id,
        name: session.name,
        variant,
        ...(await figures(run, models.fake)),
      });
    } finally {
      await models.close();
    }
  }
}

// ---------------------------------------------------------------- report
const pad = (s, n) => String(s).padEnd(n);
const f = (x, d = 0) => x.toFixed(d);
console.log(`\n# Model cost per task on the reference GPU (${REFERENCE_GPU.name})`);
console.log("# raw baseline: the seed's naive design of the same session in the same run\n");
const head = [
  ['session', 30],
  ['layout', 13],
  ['status', 10],
  ['steps', 6],
  ['calls/step', 11],
  ['prompt tok/call', 16],
  ['evaluated/call', 15],
  ['evaluated/step', 15],
  ['first call eval', 16],
  ['later eval/step', 16],
  ['reuse', 6],
  ['steady reuse', 13],
  ['compactions', 12],
  ['output tok', 11],
  ['loads', 6],
  ['over ctx', 9],
  ['model s', 8],
];
console.log(head.map(([h, n]) => pad(h, n)).join(' '));
for (const r of results) {
  console.log(
    [
      pad(r.name, 30),
      pad(r.variant, 13),
      pad(r.status, 10),
      pad(r.steps, 6),
      pad(f(r.callsPerStep, 2), 11),
      pad(f(r.promptPerCall), 16),
      pad(f(r.evaluatedPerCall), 15),
      pad(f(r.evaluatedPerStep), 15),
      pad(r.firstCallEvaluated, 16),
      pad(f(r.laterPerStep), 16),
      pad(f(r.reuse, 3), 6),
      pad(f(r.steadyReuse, 3), 13),
      pad(r.compactions, 12),
      pad(r.outputTokens, 11),
      pad(r.loads, 6),
      pad(r.overflows, 9),
      pad(f(r.seconds, 1), 8),
    ].join(' '),
  );
}
console.log('\nratios against the raw baseline (naive) and the single-message layout, same run:');
for (const s of SESSIONS) {
  const by = (v) => results.find((r) => r.session === s.id && r.variant === v);
  const [naive, single, conv] = VARIANTS.map(by);
  if (!single || !conv) continue;
  const against = (base, label) =>
    `evaluated tokens/step ${f(conv.evaluatedPerStep / base.evaluatedPerStep, 2)} of ${label} (after the first ` +
    `call ${f(conv.laterPerStep / base.laterPerStep, 2)}), model seconds ${f(conv.seconds / base.seconds, 2)} of ${label}`;
  console.log(
    `  ${pad(s.name, 30)} ${naive ? `${against(naive, 'naive')}; ` : ''}${against(single, 'single')}` +
      (naive ? '' : ' (its seed design)'),
  );
}
console.log(`\nsources of the time model: ${REFERENCE_GPU.sources.join('; ')}`);

writeResults('model-cost', { machine: machineInfo(), timeModel: REFERENCE_GPU.name, results });
if (flags.json) console.log(JSON.stringify({ results }));
process.exitCode = results.every((r) => r.status === 'completed') ? 0 : 1;
