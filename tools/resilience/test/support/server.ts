/**
 * Spawns the BUILT `cc-orchestrator serve` (the workspace package's `dist/main.js`, built by Nx before these tests:
 * it is a devDependency) on 127.0.0.1 with a temp database and a config file, and gives the test what it needs to
 * hurt it: the pid (kill -9, RSS from /proc), the URL, and its output.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

/**
 * The orchestrator's built command line entry, or `RESILIENCE_ORCHESTRATOR` (a path to another build's
 * `dist/main.js`, e.g. a copy of an older build, to check that a new test fails on it).
 */
export const ORCHESTRATOR_BIN =
  process.env.RESILIENCE_ORCHESTRATOR ||
  path.join(
    path.dirname(createRequire(import.meta.url).resolve('cc-orchestrator/package.json')),
    'dist',
    'main.js',
  );

/** True when the suites can run (the orchestrator has been built). */
export const orchestratorBuilt = existsSync(ORCHESTRATOR_BIN);

/** The long forms run with `CCAGENT_LONG=1`. */
export const LONG = process.env.CCAGENT_LONG === '1';

/** A running server process. */
export interface Server {
  url: string;
  port: number;
  pid: number;
  proc: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Whether the process is still running. */
  alive(): boolean;
  /** `standby` when it started as a standby of another orchestrator on the same PostgreSQL database. */
  startedAs: 'active' | 'standby';
  /** Resolves once the server printed that it serves as the active orchestrator (at once for an active start). */
  active: Promise<void>;
  /** Exit code/signal once exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGKILL and wait for the exit. */
  kill9(): Promise<void>;
  /** SIGTERM and wait for the exit. */
  term(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resident set size of the server process in KiB (from /proc/<pid>/status). */
  rssKiB(): number;
  /** fetch against the server, with the bearer token when one is set (unless `auth: false`). */
  http(pathname: string, init?: RequestInit & { auth?: boolean; json?: unknown }): Promise<Response>;
}

/** Options of {@link startServer}. */
export interface StartOptions {
  /** Database file, or a `postgres://` URL. */
  db: string;
  /** Where to write `config` (default `<db>.config.json`; required when `db` is a URL). */
  configFile?: string;
  /** Config object written next to the database (merged over the built-in defaults by the server). */
  config?: Record<string, unknown>;
  ollamaUrl: string;
  /** Fixed port (restart on the same address so clients reconnect there); default 0. */
  port?: number;
  token?: string;
  logLevel?: string;
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
  /** More `serve` arguments (e.g. `--mc-port`). */
  args?: string[];
}

/** Environment without the variables that would change the server's defaults. */
function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith('CCAGENT_') || k === 'OLLAMA_HOST') delete env[k];
  return { ...env, ...extra };
}

/** Start `cc-orchestrator serve`; resolves once it printed its URL. */
export function startServer(o: StartOptions): Promise<Server> {
  const args = [
    ORCHESTRATOR_BIN,
    'serve',
    '--port',
    String(o.port ?? 0),
    '--db',
    o.db,
    '--ollama-url',
    o.ollamaUrl,
    '--log-level',
    o.logLevel ?? process.env.RESILIENCE_LOG_LEVEL ?? 'fatal',
  ];
  if (o.config) {
    const file = o.configFile ?? `${o.db}.config.json`;
    writeFileSync(file, JSON.stringify(o.config, null, 2));
    args.push('--config', file);
  }
  if (o.token !== undefined) args.push('--token', o.token);
  if (o.args) args.push(...o.args);
  const proc = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'], env: cleanEnv(o.env) });
  let out = '';
  let err = '';
  proc.stdout?.on('data', (b: Buffer) => (out += b.toString()));
  proc.stderr?.on('data', (b: Buffer) => {
    // Bounded: a chatty server must not grow the test's memory without limit.
    err = (err + b.toString()).slice(-200_000);
  });
  let running = true;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.once('exit', (code, signal) => {
      running = false;
      resolve({ code, signal });
    }),
  );
  const timeoutMs = o.timeoutMs ?? 20_000;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`server did not start in ${timeoutMs} ms.\nstdout:\n${out}\nstderr:\n${err}`));
    }, timeoutMs);
    const onData = (): void => {
      const m = /(listening|standby) on (http:\/\/\S+)/.exec(out);
      if (!m?.[2]) return;
      proc.stdout?.off('data', onData);
      clearTimeout(timer);
      const url = m[2];
      const startedAs = m[1] === 'standby' ? 'standby' : 'active';
      const active =
        startedAs === 'active'
          ? Promise.resolve()
          : new Promise<void>((resolveActive) => {
              const watch = (): void => {
                if (!/listening on http/.test(out)) return;
                proc.stdout?.off('data', watch);
                resolveActive();
              };
              proc.stdout?.on('data', watch);
            });
      resolve({
        url,
        startedAs,
        active,
        port: Number(new URL(url).port),
        pid: proc.pid as number,
        proc,
        stdout: () => out,
        stderr: () => err,
        alive: () => running,
        exited,
        kill9: async () => {
          if (running) proc.kill('SIGKILL');
          await exited;
        },
        term: async () => {
          if (running) proc.kill('SIGTERM');
          return exited;
        },
        rssKiB: () => rssKiB(proc.pid as number),
        http: (pathname, init = {}) => {
          const headers = new Headers(init.headers);
          if (o.token !== undefined && init.auth !== false) headers.set('authorization', `Bearer ${o.token}`);
          let body = init.body;
          if (init.json !== undefined) {
            headers.set('content-type', 'application/json');
            body = JSON.stringify(init.json);
          }
          return fetch(`${url}${pathname}`, { ...init, headers, body, signal: AbortSignal.timeout(15_000) });
        },
      });
    };
    proc.stdout?.on('data', onData);
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(
        new Error(`server exited (${code ?? signal}) before listening.\nstdout:\n${out}\nstderr:\n${err}`),
      );
    });
  });
}

/** VmRSS of a process in KiB (0 when it is gone). */
export function rssKiB(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m?.[1] ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

/** A config for fault tests: short timeouts, generous rate limits, one fast-answering native kind. */
export function faultConfig(server: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) {
  return {
    models: {
      native: { name: 'qwen3:8b', timeoutMs: 20_000 },
      planner: { name: 'qwen3:8b' },
      executor: { name: 'qwen3:8b' },
    },
    taskKinds: {
      general_agent: {
        maxIterations: 40,
        budgets: { maxSteps: 200, maxToolCalls: 200, deadlineMs: 600_000 },
      },
    },
    server: {
      heartbeatMs: 1000,
      reconnectGraceMs: 5000,
      commandTimeoutMs: 120_000,
      modelConcurrency: 8,
      rateLimit: { messagesPerSecond: 100_000, burst: 100_000 },
      ...server,
    },
    ...extra,
  };
}

/** What `GET /api/tasks/:id` returns, as far as the fault tests read it. */
export interface TaskDetail {
  task: { status: string; client_id: string | null; result?: { message?: string } };
  command_calls: Array<{
    call_id: string;
    status: string;
    dispatch_count: number;
    outcome?: { ok: boolean; error?: { code?: string; message: string } };
  }>;
}

/** A task and its command calls, read over the server's HTTP API. */
export async function taskDetail(s: Server, taskId: string): Promise<TaskDetail> {
  return (await (await s.http(`/api/tasks/${taskId}`)).json()) as TaskDetail;
}

/** Poll until `fn` returns a truthy value (bounded). */
export async function eventually<T>(
  fn: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 10_000,
  what = 'condition',
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`${what} not met within ${timeoutMs} ms`);
    await sleep(25);
  }
}

/** Resolve after `ms`. */
export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
