// Child processes for the benchmarks: the built orchestrator, the bare ws echo server, RSS and fd limits.
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

/**
 * The built `cc-orchestrator` entry, or `CCAGENT_BENCH_ORCHESTRATOR` (a path to another build's `dist/main.js`, e.g. a
 * copy taken before a change, to compare two builds back to back while the workspace keeps changing).
 */
export const ORCHESTRATOR_BIN =
  process.env.CCAGENT_BENCH_ORCHESTRATOR ||
  path.join(
    path.dirname(createRequire(import.meta.url).resolve('cc-orchestrator/package.json')),
    'dist',
    'main.js',
  );

/** The bare echo server script. */
export const ECHO_SERVER = path.join(here, '..', 'orchestrator', 'echo-server.mjs');

/** VmRSS of a process in KiB (0 once it is gone). */
export function rssKiB(pid) {
  try {
    const m = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

/** Soft "Max open files" of a process (this one by default), or undefined where /proc is missing. */
export function openFilesLimit(pid = 'self') {
  try {
    const m = /Max open files\s+(\d+|unlimited)\s+(\d+|unlimited)/.exec(
      readFileSync(`/proc/${pid}/limits`, 'utf8'),
    );
    if (!m) return undefined;
    return {
      soft: m[1] === 'unlimited' ? Infinity : Number(m[1]),
      hard: m[2] === 'unlimited' ? Infinity : Number(m[2]),
    };
  } catch {
    return undefined;
  }
}

/**
 * Spawn `node <args>` and resolve once stdout matches `ready` (its first group is returned as `url`). stderr is kept
 * (bounded) for error messages.
 */
export function spawnNode(args, { ready, env = {}, timeoutMs = 30_000, nodeArgs = [] } = {}) {
  const proc = spawn(process.execPath, [...nodeArgs, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  let out = '';
  let err = '';
  proc.stdout.on('data', (b) => {
    out += b.toString();
    if (out.length > 100_000) out = out.slice(-50_000);
  });
  proc.stderr.on('data', (b) => {
    err = (err + b.toString()).slice(-20_000);
  });
  const exited = new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`${args[0]} did not get ready in ${timeoutMs} ms\n${out}\n${err}`));
    }, timeoutMs);
    const onData = () => {
      const m = ready.exec(out);
      if (!m) return;
      clearTimeout(timer);
      proc.stdout.off('data', onData);
      resolve({
        proc,
        pid: proc.pid,
        url: m[1],
        exited,
        stdout: () => out,
        stderr: () => err,
        rssKiB: () => rssKiB(proc.pid),
        kill9: async () => {
          if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
          await exited;
        },
        /** SIGTERM, then SIGKILL if it has not exited within 10 s. */
        stop: async () => {
          if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
          const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
          await exited;
          clearTimeout(timer);
        },
      });
    };
    proc.stdout.on('data', onData);
    exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`${args[0]} exited (${code ?? signal}) before it was ready\n${out}\n${err}`));
    });
  });
}

/**
 * Start `cc-orchestrator serve` on 127.0.0.1 with a config object (`args`: extra flags); resolves with its URL. `db`
 * is a file or a `postgres://` URL (then give `configFile`). `bin`: another build's `dist/main.js` than ORCHESTRATOR_BIN.
 */
export async function startOrchestrator({
  db,
  configFile = `${db}.config.json`,
  config,
  ollamaUrl,
  port = 0,
  logLevel = 'error',
  args = [],
  nodeArgs = [],
  bin = ORCHESTRATOR_BIN,
}) {
  writeFileSync(configFile, JSON.stringify(config, null, 2));
  const env = {};
  for (const k of Object.keys(process.env)) if (k.startsWith('CCAGENT_') || k === 'OLLAMA_HOST') env[k] = '';
  const t0 = performance.now();
  const s = await spawnNode(
    [
      bin,
      'serve',
      '--port',
      String(port),
      '--db',
      db,
      '--config',
      configFile,
      '--ollama-url',
      ollamaUrl,
      '--log-level',
      logLevel,
      ...args,
    ],
    { ready: /listening on (http:\/\/\S+)/, env, nodeArgs },
  );
  return { ...s, spawnToListeningMs: performance.now() - t0, port: Number(new URL(s.url).port) };
}

/** Start the bare ws echo server; resolves with its `ws://` URL. */
export function startEcho() {
  return spawnNode([ECHO_SERVER], { ready: /listening on (ws:\/\/\S+)/ });
}
