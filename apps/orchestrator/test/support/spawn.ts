/**
 * Spawns the BUILT `cc-orchestrator serve` (dist/main.js) as a child process and reads the URL it prints.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The built command line entry. */
export const BIN = fileURLToPath(new URL('../../dist/main.js', import.meta.url));

/** A running server process. */
export interface Served {
  url: string;
  proc: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** SIGKILL and wait for the exit. */
  kill9(): Promise<void>;
  /** SIGTERM and wait; resolves with the exit code. */
  term(): Promise<number | null>;
}

/** Run `cc-orchestrator <args>` to completion (for refusals); resolves with the exit code and output. */
export function runCli(
  args: string[],
  env: NodeJS.ProcessEnv = {},
  timeoutMs = 15_000,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [BIN, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...baseEnv(), ...env },
    });
    let stdout = '';
    let stderr = '';
    proc.stdout?.on('data', (b: Buffer) => (stdout += b.toString()));
    proc.stderr?.on('data', (b: Buffer) => (stderr += b.toString()));
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`cc-orchestrator ${args.join(' ')} did not exit: ${stdout}\n${stderr}`));
    }, timeoutMs);
    proc.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Environment without the variables that would change the server's defaults. */
function baseEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const k of Object.keys(env)) if (k.startsWith('CCAGENT_') || k === 'OLLAMA_HOST') delete env[k];
  return env;
}

/** Start `cc-orchestrator serve <args>`; resolves once it printed its URL. */
export function serve(args: string[], env: NodeJS.ProcessEnv = {}, timeoutMs = 20_000): Promise<Served> {
  const proc = spawn(process.execPath, [BIN, 'serve', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...baseEnv(), ...env },
  });
  let out = '';
  let err = '';
  proc.stderr?.on('data', (b: Buffer) => (err += b.toString()));
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`server did not start in time.\nstdout:\n${out}\nstderr:\n${err}`));
    }, timeoutMs);
    proc.stdout?.on('data', (b: Buffer) => {
      out += b.toString();
      const m = /listening on (https?:\/\/\S+)/.exec(out);
      if (m?.[1]) {
        clearTimeout(timer);
        resolve({
          url: m[1],
          proc,
          stdout: () => out,
          stderr: () => err,
          kill9: async () => {
            proc.kill('SIGKILL');
            await exited;
          },
          term: async () => {
            proc.kill('SIGTERM');
            return exited;
          },
        });
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`server exited with ${code} before listening.\nstdout:\n${out}\nstderr:\n${err}`));
    });
  });
}

/**
 * Write `config` as `<dir>/ccagent.json` and start `cc-orchestrator serve` on a free port (or on `port`: a restart on
 * the port the first start got, for pages and clients that reconnect) over `<dir>/ccagent.db`, its model server at
 * `ollamaUrl`; `args` come after (`--token`, `--log-level` …).
 */
export function serveWithConfig(
  dir: string,
  ollamaUrl: string,
  config: unknown,
  args: string[] = [],
  env: NodeJS.ProcessEnv = {},
  port: number | string = 0,
): Promise<Served> {
  const file = path.join(dir, 'ccagent.json');
  writeFileSync(file, JSON.stringify(config));
  return serve(
    [
      '--port',
      String(port),
      '--db',
      path.join(dir, 'ccagent.db'),
      '--ollama-url',
      ollamaUrl,
      '--config',
      file,
      ...args,
    ],
    env,
  );
}
