// Runs one task end to end the way the orchestrator does, minus the WebSocket: a real Engine with the in-memory
// store, a strategy talking through the real `ollama` client (OllamaChatModel) to the scripted fake Ollama server of
// @ccagent/testkit, and the Lua-backed tool executor on a temporary directory. Shared by the agent's tests, the
// failure corpus and tools/bench/agent-robustness (which pass their own build of the strategy).
import { randomUUID } from 'node:crypto';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Engine, InMemoryTaskStore } from '@ccagent/engine';
import { OllamaChatModel } from '@ccagent/models';
import { startFakeOllama } from '@ccagent/testkit';
import { createLuaToolExecutor } from './lua-tool-executor.mjs';

/** @typedef {import('@ccagent/engine').TaskStrategy} TaskStrategy */
/** @typedef {import('@ccagent/engine').Task} Task */
/** @typedef {import('@ccagent/engine').NewTaskInput} NewTaskInput */
/** @typedef {import('@ccagent/engine').HistoryEntry} HistoryEntry */
/** @typedef {import('@ccagent/engine').StoredStep} StoredStep */
/** @typedef {import('@ccagent/engine').QuestionRecord} QuestionRecord */

/**
 * A fake Ollama server and a real client for it. Retries are off (a scripted failure must reach the agent, not be
 * retried away) and each call is bounded. `fakeOptions` go to startFakeOllama (e.g. `{ tokenizer: 'auto' }`).
 * @param {import('@ccagent/testkit').FakeOllamaOptions} [fakeOptions]
 */
export async function startModels(fakeOptions = {}) {
  const fake = await startFakeOllama(fakeOptions);
  const model = new OllamaChatModel({ host: fake.url, retry: { retries: 0 }, timeoutMs: 10_000 });
  return {
    fake,
    model,
    /**
     * A ModelRole for `name`. @param {string} name @param {Record<string, unknown>} [extra]
     * @returns {import('@ccagent/agent').ModelRole}
     */
    role: (name, extra = {}) => ({ model, name, options: { temperature: 0, numCtx: 8192 }, ...extra }),
    close: () => fake.close(),
  };
}

/**
 * Run one task to a terminal state (or until it waits for a person and no scripted answer is left).
 * @param {TaskStrategy} strategy
 * @param {Partial<NewTaskInput> & { prompt: string }} input
 * @param {{ files?: Record<string, string>, answers?: string[], timeoutMs?: number, kind?: string }} [options]
 */
export async function runTask(strategy, input, options = {}) {
  const root = await mkdtemp(path.join(tmpdir(), 'ccagent-agent-'));
  for (const [name, content] of Object.entries(options.files ?? {})) {
    const file = path.join(root, name);
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, content);
  }
  const executor = createLuaToolExecutor({ root });
  const store = new InMemoryTaskStore();
  const kind = input.kind ?? options.kind ?? 'code';
  const engine = new Engine({ store, strategies: { [kind]: strategy }, executor, tickIntervalMs: 0 });
  const answers = [...(options.answers ?? [])];
  /** @type {string[]} */
  const asked = [];
  const id = input.id ?? randomUUID();
  /** @type {NodeJS.Timeout | undefined} */
  let timer;
  // Listeners first: a task can move on before createTask's promise resolves.
  const settled = new Promise((resolve, reject) => {
    const timeoutMs = options.timeoutMs ?? 20_000;
    timer = setTimeout(() => reject(new Error(`task did not finish within ${timeoutMs} ms`)), timeoutMs);
    const finish = (/** @type {Task} */ t) => {
      clearTimeout(timer);
      resolve(t);
    };
    engine.on('taskUpdated', ({ task: t }) => {
      if (t.id !== id) return;
      if (t.status === 'completed' || t.status === 'failed' || t.status === 'cancelled') finish(t);
    });
    engine.on('questionAsked', ({ task: t, question }) => {
      if (t.id !== id) return;
      asked.push(question.question);
      const answer = answers.shift();
      if (answer === undefined) finish(t);
      else void engine.answerQuestion(t.id, question.questionId, answer).catch(reject);
    });
  });
  await engine.start();
  try {
    const created = await engine.createTask({
      kind,
      allowedCommands: ['fs_read', 'fs_write', 'fs_list', 'run_program', 'shell_exec'],
      ...input,
      id,
    });
    const task = await settled;
    const history = await engine.getHistory(created.id);
    const steps = await engine.getSteps(created.id);
    return { task: /** @type {Task} */ (task), history, steps, asked, executor, root };
  } finally {
    clearTimeout(timer);
    settled.catch(() => {});
    await engine.stop();
    await store.close();
  }
}

/** Remove a run's temporary directory. @param {string} root */
export function removeRoot(root) {
  return rm(root, { recursive: true, force: true });
}

/** Step-log records of a kind. @param {StoredStep[]} steps @param {string} kind */
export function stepsOf(steps, kind) {
  return steps.filter((s) => s.kind === kind);
}

/** Codes of the policy events in a step log, in order. @param {StoredStep[]} steps */
export function policyEvents(steps) {
  return steps.filter((s) => s.kind === 'policy').map((s) => s.error?.code ?? '');
}

/**
 * Mean and per-call shared-prefix fraction of consecutive requests to one model, over the text Ollama tokenizes
 * (the messages' contents in order).
 * @param {Array<{ body: unknown }>} requests
 */
export function prefixFractions(requests) {
  const texts = requests.map((r) => {
    const body = /** @type {{ messages?: Array<{ role: string, content: string }> }} */ (r.body);
    return (body.messages ?? []).map((m) => `<${m.role}>${m.content}`).join('\n');
  });
  const fractions = [];
  for (let i = 1; i < texts.length; i++) {
    const a = texts[i - 1] ?? '';
    const b = texts[i] ?? '';
    let n = 0;
    while (n < a.length && n < b.length && a.charCodeAt(n) === b.charCodeAt(n)) n++;
    fractions.push(a.length === 0 ? 1 : n / a.length);
  }
  const mean = fractions.length === 0 ? 0 : fractions.reduce((x, y) => x + y, 0) / fractions.length;
  return { mean, fractions };
}
