/** Runs the BUILT `ccagent` binary (dist/main.js) as a child process, the way users run it. */
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The built binary. */
export const BIN = fileURLToPath(new URL('../../dist/main.js', import.meta.url));

/** Exit code and everything printed. */
export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Environment of every run: UTC (stable timestamps), no colour unless a test asks, and none of the user's ccagent
 * settings leaking in.
 */
export function cliEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, TZ: 'UTC' };
  for (const k of Object.keys(env)) {
    if (k.startsWith('CCAGENT_') || k === 'NO_COLOR' || k === 'FORCE_COLOR' || k === 'COLUMNS') delete env[k];
  }
  return { ...env, ...extra };
}

/** Starts `ccagent args…`; the caller reads its output as it comes. */
export function startCli(args: string[], env: Record<string, string> = {}): ChildProcess {
  return spawn(process.execPath, [BIN, ...args], { env: cliEnv(env), stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Runs `ccagent args…` to the end. */
export function runCli(
  args: string[],
  env: Record<string, string> = {},
  timeoutMs = 20_000,
): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = startCli(args, env);
    let stdout = '';
    let stderr = '';
    child.stdout?.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new Error(`ccagent ${args.join(' ')} did not exit within ${timeoutMs} ms\n${stdout}\n${stderr}`),
      );
    }, timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/**
 * Makes human output stable for snapshots: model latencies are measured with a real timer, so every `took …`
 * becomes `took <t>` (timestamps are already fixed by the fixture's clock and TZ=UTC).
 */
export function normalize(text: string): string {
  return text.replace(/took \d+(\.\d+)?(ms|s)\b/g, 'took <t>');
}

/** A private copy of the fixture database (for tests that let something write to it). */
export function copyDb(src: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'ccagent-cli-'));
  const file = path.join(dir, 'ccagent.db');
  copyFileSync(src, file);
  return file;
}
