/**
 * The orchestrator an eval runs against: the built `cc-orchestrator serve` as a child process on a loopback port and
 * the run's own SQLite file (kept, so `ccagent tasks show` and the dashboard can read every attempt), with task kinds
 * made from the jobs. The eval talks to it over its HTTP API only, like any operator.
 */
import { type ChildProcess } from 'node:child_process';
import { spawnOwned } from './children.js';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { EvalError } from './eval-error.js';
import type { Job, Loop } from './job.js';

/** Where the model server is, as the orchestrator's configuration names it. */
export interface ModelServer {
  /** `ollama` (native /api/chat) or `openai` (an OpenAI-compatible /v1/chat/completions server). */
  provider: 'ollama' | 'openai';
  /** Base URL of the server. */
  host: string;
  /** Model name every role uses (the reference runs name their own per attempt). */
  model: string;
  /** Context window given to every role (tokens); default the orchestrator's. */
  numCtx?: number;
  /**
   * Most tokens one model reply may generate (Ollama `num_predict`, OpenAI `max_tokens`), given to every role;
   * default {@link DEFAULT_EVAL_NUM_PREDICT}. A runaway reply stops there (`done_reason: "length"`) instead of
   * generating until the attempt's deadline.
   */
  numPredict?: number;
  /** Name of the environment variable with the API key (OpenAI-compatible servers that need one). */
  apiKeyEnv?: string;
}

/**
 * The output bound of an eval's model calls when the run names none: room for a reasoning block and a program, far
 * below what a model that never stops would write before its attempt's deadline.
 */
export const DEFAULT_EVAL_NUM_PREDICT = 4096;

/** An OpenAI-compatible server's API base (`…/v1`): the host as given, with `/v1` added when it has no version path. */
export function openaiBase(host: string): string {
  const base = host.replace(/\/+$/, '');
  return /\/v\d+$/.test(base) ? base : `${base}/v1`;
}

/**
 * Before a run: the model server answers and (Ollama) has the model, so a typo or a stopped server is one clear
 * error instead of every attempt waiting out its model timeouts. Throws `EvalError('model_unavailable')`.
 */
export async function checkModelServer(server: ModelServer, timeoutMs = 10_000): Promise<void> {
  const base = server.provider === 'ollama' ? server.host.replace(/\/+$/, '') : openaiBase(server.host);
  const route = server.provider === 'ollama' ? '/api/tags' : '/models';
  let body: unknown;
  try {
    const headers: Record<string, string> = {};
    const key = server.apiKeyEnv ? process.env[server.apiKeyEnv] : undefined;
    if (key) headers.authorization = `Bearer ${key}`;
    const res = await fetch(`${base}${route}`, { headers, signal: AbortSignal.timeout(timeoutMs) });
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    body = await res.json();
  } catch (cause) {
    throw new EvalError(
      'model_unavailable',
      `the model server at ${base} does not answer ${route} (${(cause as Error).message}); is it running?`,
      { cause },
    );
  }
  if (server.provider !== 'ollama') return; // OpenAI-compatible servers list models in their own ways
  const names = ((body as { models?: Array<{ name?: string; model?: string }> }).models ?? []).flatMap(
    (m) => [m.name, m.model],
  );
  const wanted = server.model.includes(':') ? server.model : `${server.model}:latest`;
  if (!names.includes(server.model) && !names.includes(wanted)) {
    throw new EvalError(
      'model_unavailable',
      `the model server at ${base} has no model "${server.model}" (ollama pull ${server.model}); it has: ${
        names.filter((n, i) => n && names.indexOf(n) === i).join(', ') || 'none'
      }`,
    );
  }
}

/** The task kind an eval creates for a job under a loop. */
export function kindName(job: Job, loop: Loop): string {
  return `eval_${job.id.replace(/-/g, '_')}_${loop === 'native' ? 'native' : 'pe'}`;
}

/** The orchestrator configuration of an eval run: one task kind per job and loop, every role on `server`. */
export function evalConfig(
  jobs: readonly Job[],
  server: ModelServer,
  extraModels: string[] = [],
  parallel = 1,
): object {
  const role = {
    name: server.model,
    ...(server.provider === 'openai'
      ? {
          provider: 'openai-compatible',
          baseUrl: openaiBase(server.host),
          ...(server.apiKeyEnv ? { apiKeyEnv: server.apiKeyEnv } : {}),
        }
      : {}),
    options: {
      ...(server.numCtx ? { numCtx: server.numCtx } : {}),
      numPredict: server.numPredict ?? DEFAULT_EVAL_NUM_PREDICT,
    },
  };
  const taskKinds: Record<string, object> = {};
  for (const job of jobs) {
    const budgets = { ...job.budgets };
    const confirm = job.confirm ? { confirm: job.confirm } : {};
    if (job.loops.includes('planner-executor')) {
      taskKinds[kindName(job, 'planner-executor')] = {
        description: `eval ${job.id} v${job.version} (planner/executor)`,
        strategy: 'planner_executor',
        executorMode: 'parser-then-model',
        budgets,
        completion: job.completion,
        ...confirm,
      };
    }
    if (job.loops.includes('native')) {
      taskKinds[kindName(job, 'native')] = {
        description: `eval ${job.id} v${job.version} (native tool calling)`,
        strategy: 'native',
        budgets,
        maxIterations: job.budgets.maxSteps,
        ...confirm,
      };
    }
  }
  return {
    models: { planner: role, executor: role, native: role },
    taskKinds,
    ...(extraModels.length > 0 ? { limits: { models: [server.model, ...extraModels] } } : {}),
    // The eval's computers never go away on purpose: a call whose computer vanished fails at once. Attempts run in
    // parallel may call the model at once; the model server decides how many it serves together.
    server: { reconnectGraceMs: 2000, modelConcurrency: Math.max(1, parallel) },
  };
}

/** A running orchestrator. */
export interface RunningOrchestrator {
  url: string;
  dbPath: string;
  /** GET a JSON route. */
  get<T>(route: string): Promise<T>;
  /** POST a JSON body; returns the status and parsed reply. */
  post<T>(route: string, body: unknown): Promise<{ status: number; body: T }>;
  /** Everything it printed (for failure messages). */
  output(): string;
  /** SIGTERM (a clean shutdown: the database is closed), SIGKILL after 5 s. */
  stop(): Promise<void>;
}

/**
 * Start `node <main> serve` on 127.0.0.1 with an ephemeral port, the database `dbPath` and the configuration
 * written to `configPath`. Resolves once it listens; throws `EvalError('orchestrator_failed')` when it does not.
 */
export async function startOrchestrator(opts: {
  main: string;
  dbPath: string;
  config: object;
  ollamaUrl?: string;
  env?: NodeJS.ProcessEnv;
}): Promise<RunningOrchestrator> {
  const configPath = path.join(path.dirname(opts.dbPath), 'ccagent.eval.json');
  writeFileSync(configPath, `${JSON.stringify(opts.config, null, 2)}\n`);
  const env = { ...(opts.env ?? process.env) };
  // The eval's own flags decide the server: an operator's CCAGENT_* settings must not change what is measured.
  for (const k of Object.keys(env)) if (k.startsWith('CCAGENT_')) delete env[k];
  const args = [
    opts.main,
    'serve',
    '--host',
    '127.0.0.1',
    '--port',
    '0',
    '--db',
    opts.dbPath,
    '--config',
    configPath,
    '--log-level',
    'warn',
    ...(opts.ollamaUrl ? ['--ollama-url', opts.ollamaUrl] : []),
  ];
  const proc: ChildProcess = spawnOwned(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], env });
  let out = '';
  const keep = (b: Buffer) => {
    if (out.length < 500_000) out += b.toString('utf8');
  };
  proc.stdout?.on('data', keep);
  proc.stderr?.on('data', keep);
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new EvalError('orchestrator_failed', `the orchestrator did not start within 30 s:\n${out}`));
    }, 30_000);
    proc.stdout?.on('data', () => {
      const m = /listening on (https?:\/\/\S+)/.exec(out);
      if (m?.[1]) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new EvalError('orchestrator_failed', `the orchestrator exited before listening:\n${out}`));
    });
  });
  const get = async <T>(route: string): Promise<T> => {
    const res = await fetch(`${url}${route}`);
    if (!res.ok)
      throw new EvalError('orchestrator_failed', `GET ${route}: ${res.status} ${await res.text()}`);
    return (await res.json()) as T;
  };
  const post = async <T>(route: string, body: unknown): Promise<{ status: number; body: T }> => {
    const res = await fetch(`${url}${route}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, body: (await res.json()) as T };
  };
  return {
    url,
    dbPath: opts.dbPath,
    get,
    post,
    output: () => out,
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      proc.kill('SIGTERM');
      const t = setTimeout(() => proc.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(t);
    },
  };
}
