/**
 * In-process orchestrator for integration tests: the real composition (SQLite file in a temp dir, engine, WebSocket
 * gateway, HTTP API) on an ephemeral port, with a scripted strategy injected through the engine's strategy port
 * and the fake model server from @ccagent/testkit for the model checks.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type {
  Decision,
  HistoryEntry,
  JsonValue,
  StrategyResolver,
  Task,
  TaskStore,
  TaskStrategy,
} from '@ccagent/engine';
import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import pino from 'pino';
import { loadConfig, type OrchestratorConfig } from '../../src/config.js';
import { startOrchestrator, type RunningOrchestrator } from '../../src/orchestrator.js';

/** A started test server. */
export interface Harness {
  url: string;
  dir: string;
  dbPath: string;
  config: OrchestratorConfig;
  running: RunningOrchestrator;
  fake: FakeOllama;
  token: string | undefined;
  /** fetch against the server (adds the bearer token when set and `auth` is not false). */
  http(pathname: string, init?: RequestInit & { auth?: boolean; json?: unknown }): Promise<Response>;
  close(): Promise<void>;
}

/** Options of {@link startHarness}. */
export interface HarnessOptions {
  /** Partial config merged over the defaults (e.g. `{ server: { reconnectGraceMs: 300 } }`). */
  config?: Record<string, unknown>;
  token?: string;
  strategies?: StrategyResolver;
  luaDir?: string;
  /** Serve the dashboard from this directory (default: beside the sources, i.e. none). */
  dashboardDir?: string;
  /** Reuse a database directory (restart scenarios). */
  dir?: string;
  /** A store opened by the test (e.g. an SQLite store with a short lock timeout); the server closes it. */
  store?: TaskStore;
  /** Run the Minecraft mod endpoint on an ephemeral loopback port (`running.report.minecraft.url`). */
  minecraft?: boolean;
  /** With `minecraft`: this port instead of an ephemeral one (a restart keeps the mods' address). */
  minecraftPort?: number;
}

/** Start the orchestrator in this process. */
export async function startHarness(opts: HarnessOptions = {}): Promise<Harness> {
  const dir = opts.dir ?? mkdtempSync(path.join(tmpdir(), 'cco-it-'));
  const dbPath = path.join(dir, 'ccagent.db');
  const fake = await startFakeOllama({ installed: ['qwen3:8b'] });
  const loaded = loadConfig({ overrides: opts.config ?? {} });
  if (!loaded.ok) throw loaded.error;
  const merged = loaded.value;
  const running = await startOrchestrator({
    config: merged,
    host: '127.0.0.1',
    port: 0,
    dbPath,
    ollamaUrl: fake.url,
    ...(opts.token !== undefined ? { token: opts.token } : {}),
    ...(opts.strategies !== undefined ? { strategies: opts.strategies } : {}),
    ...(opts.luaDir !== undefined ? { luaDir: opts.luaDir } : {}),
    ...(opts.dashboardDir !== undefined ? { dashboardDir: opts.dashboardDir } : {}),
    ...(opts.store !== undefined ? { store: opts.store } : {}),
    ...(opts.minecraft === true
      ? { minecraft: { host: '127.0.0.1', port: opts.minecraftPort ?? 0, required: true } }
      : {}),
    logger: pino({ level: process.env.CCO_TEST_LOG ?? 'silent' }),
    env: {},
  });
  const url = running.url;
  let closed = false;
  return {
    url,
    dir,
    dbPath,
    config: merged,
    running,
    fake,
    token: opts.token,
    http: (pathname, init = {}) => {
      const headers = new Headers(init.headers);
      if (opts.token !== undefined && init.auth !== false)
        headers.set('authorization', `Bearer ${opts.token}`);
      let body = init.body;
      if (init.json !== undefined) {
        headers.set('content-type', 'application/json');
        body = JSON.stringify(init.json);
      }
      return fetch(`${url}${pathname}`, { ...init, headers, body });
    },
    close: async () => {
      if (closed) return;
      closed = true;
      await running.close();
      await fake.close();
      if (opts.dir === undefined) rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A strategy from a function of (task, history) — a fake of the engine's strategy port. */
export function strategyOf(
  fn: (task: Task, history: readonly HistoryEntry[]) => Decision | Promise<Decision>,
): TaskStrategy {
  return { decide: (task, history) => Promise.resolve(fn(task, history)) };
}

/** The same strategy for every kind. */
export function everyKind(s: TaskStrategy): StrategyResolver {
  return () => s;
}

/** Tool results in a history. */
export function results(
  history: readonly HistoryEntry[],
): Array<Extract<HistoryEntry, { type: 'tool_result' }>> {
  return history.filter((h): h is Extract<HistoryEntry, { type: 'tool_result' }> => h.type === 'tool_result');
}

/**
 * Write a file, run it, complete with both outcomes — the shape of a small code job, with a progress report on the
 * first step.
 */
export const writeThenRun = strategyOf((_task, history): Decision => {
  const r = results(history);
  if (r.length === 0) {
    return {
      type: 'tool_call',
      command: 'fs_write',
      args: { path: '/hello.lua', content: 'print("hi")' },
      progress: 0.25,
      message: 'writing /hello.lua',
    };
  }
  if (r.length === 1)
    return { type: 'tool_call', command: 'run_program', args: { path: '/hello.lua' }, progress: 0.5 };
  return { type: 'complete', result: { outcomes: r.map((x) => x.outcome) as unknown as JsonValue } };
});

/** Poll until `fn` returns a truthy value (bounded). */
export async function eventually<T>(fn: () => Promise<T | undefined | false>, timeoutMs = 5000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 25));
  }
}
