// What a model server's prompt cache sees of a task, through the real stack: Engine + in-memory store, the real
// `ollama` client against the fake server (which models Ollama's per-slot prompt cache and its reloads), Lua 5.2.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Engine, InMemoryTaskStore, type Task } from '@ccagent/engine';
import { afterEach, describe, expect, it } from 'vitest';
import { createNativeToolStrategy, createPlannerExecutorStrategy } from '../src/index.js';
import { createLuaToolExecutor, removeRoot, runTask, startModels, todo } from '@ccagent/agent/testing';
import { D, HELLO_FILES, HELLO_PROMPT } from './support/hello.js';

const { BROKEN, COMPLETION, EXECUTOR_REPLIES, PLANNER_REPLIES, PROMPT } = todo;

const MODEL = 'qwen3:8b';
let models: Awaited<ReturnType<typeof startModels>> | undefined;

afterEach(async () => {
  await models?.close();
  models = undefined;
});

type Body = { messages: { role: string; content: string }[]; options?: unknown; keep_alive?: unknown };
const bodyOf = (r: { body: unknown }): Body => r.body as Body;

describe('keeps the prompt cache hot', () => {
  it('a 200-call native task never reloads the model: every request has the same options and the cache serves all but the new turn (guards against options or prompts that make the server start over)', async () => {
    models = await startModels();
    const m = models;
    let n = 0;
    m.fake.script(MODEL, () => {
      n += 1;
      if (n > 200) return 'All 200 sectors surveyed.';
      return { toolCalls: [{ name: 'run_program', arguments: { path: 'scan.lua', args: [String(n)] } }] };
    });
    const strategy = createNativeToolStrategy({
      model: m.role(MODEL, { options: { temperature: 0.2, numCtx: 16384 }, keepAlive: '30m' }),
      maxIterations: 210,
    });
    const run = await runTask(
      strategy,
      {
        prompt: 'Scan sectors 1 to 200 with scan.lua, one per call.',
        kind: 'native',
        budgets: { maxSteps: 500, maxToolCalls: 500 },
      },
      {
        files: { 'scan.lua': 'local n = ... print("sector " .. n .. ": 3 coal, 1 iron")' },
        timeoutMs: 240_000,
      },
    );
    await removeRoot(run.root);
    expect(run.task.status).toBe('completed');
    const reqs = m.fake.chatRequests(MODEL);
    expect(reqs).toHaveLength(201);
    expect(new Set(reqs.map((r) => JSON.stringify([bodyOf(r).options, bodyOf(r).keep_alive]))).size).toBe(1);
    expect(m.fake.modelStats(MODEL)).toMatchObject({ requests: 201, loads: 1 });
    // Calls that did not move the window (logged as windowMoved) are served from the cache but for the new turn.
    const records = run.steps.filter((s) => s.kind === 'native');
    const steady = reqs
      .map((r, i) => ({
        call: r.modelCall,
        moved: (records[i]?.input as { layout?: { windowMoved?: boolean } })?.layout?.windowMoved,
      }))
      .slice(1)
      .filter((c) => c.moved !== true);
    const prompt = steady.reduce((s, c) => s + (c.call?.promptTokens ?? 0), 0);
    const evaluated = steady.reduce((s, c) => s + (c.call?.evaluatedTokens ?? 0), 0);
    expect(steady.length).toBeGreaterThan(190);
    expect(1 - evaluated / prompt).toBeGreaterThan(0.9);
  }, 300_000);

  it('planner and executor on one model ask for one context size, so switching roles never reloads it (guards against the default config reloading the model on every executor call)', async () => {
    models = await startModels();
    const m = models;
    let planner = 0;
    let executor = 0;
    m.fake.script(MODEL, (req) => {
      const system = String((req.body as Body).messages[0]?.content ?? '');
      if (system.startsWith('You are the EXECUTOR')) return EXECUTOR_REPLIES[executor++] ?? '';
      return PLANNER_REPLIES[planner++] ?? '';
    });
    const strategy = createPlannerExecutorStrategy({
      planner: m.role(MODEL, { options: { temperature: 0.2, numCtx: 16384 } }),
      executor: m.role(MODEL, { options: { temperature: 0, numCtx: 8192 } }),
      mode: 'model',
      completion: COMPLETION,
    });
    const run = await runTask(strategy, { prompt: PROMPT, kind: 'code' }, { files: { 'TODO.lua': BROKEN } });
    await removeRoot(run.root);
    expect(run.task.status).toBe('completed');
    const reqs = m.fake.chatRequests(MODEL);
    expect(reqs).toHaveLength(8);
    expect(reqs.map((r) => (bodyOf(r).options as { num_ctx?: number }).num_ctx)).toEqual(
      Array(8).fill(16384),
    );
    // Sampling options stay each role's own.
    expect(reqs.map((r) => (bodyOf(r).options as { temperature?: number }).temperature)).toEqual([
      0.2, 0, 0.2, 0, 0.2, 0, 0.2, 0,
    ]);
    expect(m.fake.modelStats(MODEL).loads).toBe(1);
  });

  it('sends the planner an append-only conversation: each prompt is the previous one, its reply and one new message (guards against a prompt rebuilt from the top every step)', async () => {
    models = await startModels({ tokenizer: 'auto' });
    const m = models;
    m.fake.script('qwen2.5-coder:7b', PLANNER_REPLIES);
    m.fake.script('qwen2.5:7b', []);
    const strategy = createPlannerExecutorStrategy({
      planner: m.role('qwen2.5-coder:7b'),
      executor: m.role('qwen2.5:7b'),
      completion: COMPLETION,
    });
    const run = await runTask(strategy, { prompt: PROMPT, kind: 'code' }, { files: { 'TODO.lua': BROKEN } });
    await removeRoot(run.root);
    expect(run.task.status).toBe('completed');
    const reqs = m.fake.chatRequests('qwen2.5-coder:7b');
    expect(reqs).toHaveLength(4);
    for (let i = 1; i < reqs.length; i++) {
      const before = bodyOf(reqs[i - 1] as { body: unknown }).messages;
      const now = bodyOf(reqs[i] as { body: unknown }).messages;
      expect(now.slice(0, before.length)).toEqual(before);
      expect(now[before.length]).toEqual({ role: 'assistant', content: PLANNER_REPLIES[i - 1] });
      expect(now).toHaveLength(before.length + 2);
      expect(now.at(-1)?.content).toMatch(/# STATE\n[\s\S]*Write exactly one directive\.$/);
      // The server evaluates only the new message (and the template around it).
      const call = reqs[i]?.modelCall;
      const previous = reqs[i - 1]?.modelCall;
      expect(call?.cachedTokens).toBeGreaterThanOrEqual(
        (previous?.promptTokens ?? 0) + (previous?.outputTokens ?? 0) - 2,
      );
    }
    const planner = run.steps.filter((s) => s.kind === 'planner');
    expect(planner.map((s) => (s.input as { layout?: unknown }).layout)).toEqual([
      { conversation: true, turn: 1, compacted: false, compactions: 0 },
      { conversation: true, turn: 2, compacted: false, compactions: 0 },
      { conversation: true, turn: 3, compacted: false, compactions: 0 },
      { conversation: true, turn: 4, compacted: false, compactions: 0 },
    ]);
  });
});

describe('follow-up messages and retries in the planner conversation', () => {
  it('a follow-up message and a retry reach the planner as new messages at the end of the same conversation (guards against a reopened task losing them or rebuilding the prompt from the top)', async () => {
    models = await startModels({ tokenizer: 'auto' });
    const m = models;
    const name = 'qwen2.5-coder:7b';
    m.fake.script(name, [D.fix, D.done, D.ask, D.done]);
    const root = await mkdtemp(path.join(tmpdir(), 'ccagent-cache-'));
    await writeFile(path.join(root, 'hello.lua'), HELLO_FILES['hello.lua']);
    const strategy = createPlannerExecutorStrategy({
      planner: m.role(name),
      executor: m.role(name),
      mode: 'parser',
    });
    const store = new InMemoryTaskStore();
    const engine = new Engine({
      store,
      strategies: { code: strategy },
      executor: createLuaToolExecutor({ root }),
      tickIntervalMs: 0,
    });
    const budgets = { maxSteps: 20, maxToolCalls: 20 };
    const statusOf = (id: string, wanted: string): Promise<void> =>
      new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`task never became ${wanted}`)), 20_000);
        const off = engine.on('taskUpdated', ({ task }: { task: Task }) => {
          if (task.id !== id || task.status !== wanted) return;
          clearTimeout(timer);
          off();
          resolve();
        });
      });
    await engine.start();
    try {
      const id = 'reopened-conversation';
      let done = statusOf(id, 'completed');
      await engine.createTask({
        id,
        kind: 'code',
        prompt: HELLO_PROMPT,
        budgets,
        allowedCommands: ['fs_read', 'fs_write', 'run_program'],
      });
      await done;
      const waiting = statusOf(id, 'waiting_for_user');
      await engine.reopenTask(id, {
        reason: 'message',
        budgets,
        entries: [{ type: 'message', text: 'Also print the date.' }],
      });
      await waiting;
      const cancelled = statusOf(id, 'cancelled');
      await engine.cancelTask(id, 'stopped by the test');
      await cancelled;
      done = statusOf(id, 'completed');
      await engine.reopenTask(id, { reason: 'retry', budgets });
      await done;

      const reqs = m.fake.chatRequests(name);
      expect(reqs).toHaveLength(4);
      const replies = [D.fix, D.done, D.ask];
      for (let i = 1; i < reqs.length; i++) {
        const before = bodyOf(reqs[i - 1] as { body: unknown }).messages;
        const now = bodyOf(reqs[i] as { body: unknown }).messages;
        expect(now.slice(0, before.length)).toEqual(before);
        expect(now[before.length]).toEqual({ role: 'assistant', content: replies[i - 1] });
        expect(now).toHaveLength(before.length + 2);
        const call = reqs[i]?.modelCall;
        const previous = reqs[i - 1]?.modelCall;
        expect(call?.cachedTokens).toBeGreaterThanOrEqual(
          (previous?.promptTokens ?? 0) + (previous?.outputTokens ?? 0) - 2,
        );
      }
      const last = (i: number): string => bodyOf(reqs[i] as { body: unknown }).messages.at(-1)?.content ?? '';
      expect(last(2)).toMatch(/TASK RESUMED \(new message after it was completed\)/);
      expect(last(2)).toMatch(
        /# USER ANSWERS \(new\)\nMessage from the user \(#\d+\): Also print the date\./,
      );
      expect(last(2)).toMatch(/# STATE\n/);
      expect(last(3)).toMatch(/TASK RESUMED \(retry after it was cancelled\)/);
      expect(last(3)).not.toContain('Also print the date.');
      const planner = (await engine.getSteps(id)).filter((s) => s.kind === 'planner');
      expect(planner.map((s) => (s.input as { layout?: { turn?: number } }).layout?.turn)).toEqual([
        1, 2, 3, 4,
      ]);
    } finally {
      await engine.stop();
      await store.close();
      await removeRoot(root);
    }
  });
});
