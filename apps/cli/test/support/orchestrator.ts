/** Starts the BUILT orchestrator (`cc-orchestrator serve`) on an ephemeral port, for the CLI's `--url` tests. */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

/** The orchestrator's built binary (the `cc-orchestrator` workspace package). */
export const ORCHESTRATOR_BIN = path.join(
  path.dirname(createRequire(import.meta.url).resolve('cc-orchestrator/package.json')),
  'dist',
  'main.js',
);

/** Whether the orchestrator has been built (Nx builds it before the cli's tests: it is a devDependency). */
export const orchestratorBuilt = existsSync(ORCHESTRATOR_BIN);

/** A running orchestrator. */
export interface RunningOrchestrator {
  url: string;
  port: number;
  child: ChildProcess;
  /** Everything it printed so far. */
  output(): string;
  /** SIGTERM, and wait for the exit. */
  stop(): Promise<void>;
}

/**
 * `cc-orchestrator serve --db <db> --port <port> --ollama-url <ollama> [--token <token> | --token-file <file>]`, ready
 * when it says so.
 */
export function startOrchestrator(opts: {
  db: string;
  ollamaUrl: string;
  token?: string;
  /** The token's file (`--token-file`): the secret stays off the command line. */
  tokenFile?: string;
  port?: number;
}): Promise<RunningOrchestrator> {
  const args = [
    ORCHESTRATOR_BIN,
    'serve',
    '--host',
    '127.0.0.1',
    '--port',
    String(opts.port ?? 0),
    '--db',
    opts.db,
    '--ollama-url',
    opts.ollamaUrl,
    '--log-level',
    'warn',
    ...(opts.token ? ['--token', opts.token] : []),
    ...(opts.tokenFile ? ['--token-file', opts.tokenFile] : []),
  ];
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith('CCAGENT_') || k === 'OLLAMA_HOST') delete env[k];
  const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
  const exited = new Promise<void>((resolve) => child.on('close', () => resolve()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`orchestrator did not start within 15 s:\n${out}`));
    }, 15_000);
    const onData = (): void => {
      const m = /listening on (http:\/\/127\.0\.0\.1:(\d+))/.exec(out);
      if (!m) return;
      clearTimeout(timer);
      child.stdout.off('data', onData);
      resolve({
        url: m[1] as string,
        port: Number(m[2]),
        child,
        output: () => out,
        stop: async () => {
          if (child.exitCode === null) child.kill('SIGTERM');
          await exited;
        },
      });
    };
    child.stdout.on('data', onData);
    child.on('close', (code) => {
      clearTimeout(timer);
      reject(new Error(`orchestrator exited with ${code} before listening:\n${out}`));
    });
  });
}
