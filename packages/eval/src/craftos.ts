/**
 * Real CC:Tweaked computers for the eval: headless CraftOS-PC (the MIT-licensed emulator), one fresh data folder per
 * attempt. The same computer (its data folder) first runs the agent host connected to the orchestrator, then, once
 * the task is over, the checker's program runs.
 */
import { spawnSync } from 'node:child_process';
import { spawnOwned } from './children.js';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { EvalError } from './eval-error.js';
import type { ProgramRun, RunOutcome } from './job.js';

/** The emulator: its binary, ROM folder when it ships one, and `--version` line. */
export interface Craftos {
  bin: string;
  rom?: string;
  version: string;
}

const PACKAGE_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const RUNNER_LUA = path.join(PACKAGE_DIR, 'lua', 'eval-run.lua');

function probe(bin: string, rom: string | undefined): Craftos {
  const r = spawnSync(bin, ['--version'], { encoding: 'utf8', timeout: 10_000 });
  if (r.error || r.status !== 0) {
    throw new EvalError(
      'no_craftos',
      `CraftOS-PC at ${bin} does not run: ${r.error?.message ?? r.stderr.trim()} (missing libraries? see docs/eval.md)`,
    );
  }
  return { bin, ...(rom ? { rom } : {}), version: r.stdout.trim().split('\n')[0] ?? '' };
}

/**
 * Find CraftOS-PC: `dir` (a CraftOS-PC folder with bin/craftos), else `CRAFTOS_PC_DIR`, else `../shared/craftos`
 * beside the ccagent checkout, else `craftos` on PATH. Throws `EvalError('no_craftos')` when none runs.
 */
export function findCraftos(dir?: string, env: NodeJS.ProcessEnv = process.env): Craftos {
  const dirs = [dir, env.CRAFTOS_PC_DIR, path.resolve(PACKAGE_DIR, '..', '..', '..', 'shared', 'craftos')];
  for (const d of dirs) {
    if (!d) continue;
    const bin = path.join(d, 'bin', 'craftos');
    if (!existsSync(bin)) continue;
    const rom = path.join(d, 'share', 'craftos');
    return probe(bin, existsSync(rom) ? rom : undefined);
  }
  const which = spawnSync('sh', ['-c', 'command -v craftos'], { encoding: 'utf8' });
  if (which.status === 0 && which.stdout.trim()) return probe(which.stdout.trim(), undefined);
  throw new EvalError(
    'no_craftos',
    'CraftOS-PC not found: install it (https://www.craftos-pc.cc) and put craftos on PATH, or set CRAFTOS_PC_DIR',
  );
}

/** A computer's data folder: config, and its disk (`computer/0`) holding the job's starting files. */
export interface ComputerDisk {
  dataDir: string;
  disk: string;
}

/** Make a fresh computer in a new temporary folder under `parent`, its disk holding `files` (path → content). */
export function createComputer(
  craftos: Craftos,
  parent: string,
  files: Record<string, string>,
): ComputerDisk {
  mkdirSync(parent, { recursive: true });
  const dataDir = mkdtempSync(path.join(parent, 'computer-'));
  const disk = path.join(dataDir, 'computer', '0');
  mkdirSync(path.join(dataDir, 'config'), { recursive: true });
  mkdirSync(disk, { recursive: true });
  const lastVersion = /CraftOS-PC (v\S+)/.exec(craftos.version)?.[1];
  writeFileSync(
    path.join(dataDir, 'config', 'global.json'),
    JSON.stringify({
      ...(lastVersion ? { lastVersion } : {}),
      checkUpdates: false,
      http_enable: true,
      http_websocket_enabled: true,
      http_whitelist: ['*'],
      http_blacklist: [],
    }),
  );
  writeFileSync(
    path.join(disk, '.settings'),
    '{ [ "motd.enable" ] = false, [ "bios.use_multishell" ] = false, }',
  );
  for (const [file, content] of Object.entries(files)) writeOnDisk(disk, file, content);
  return { dataDir, disk };
}

/** The host path of a computer path (`/a/b.lua`); refuses paths that climb out of the disk. */
export function hostPath(disk: string, file: string): string {
  const full = path.resolve(disk, `.${path.posix.normalize(`/${file}`)}`);
  if (full !== disk && !full.startsWith(disk + path.sep)) {
    throw new EvalError('checker_failed', `path ${file} is outside the computer`);
  }
  return full;
}

/** Write a file on a computer's disk, creating its folders. */
export function writeOnDisk(disk: string, file: string, content: string): void {
  const full = hostPath(disk, file);
  mkdirSync(path.dirname(full), { recursive: true });
  writeFileSync(full, content);
}

function argvFor(craftos: Craftos, computer: ComputerDisk, script: string, mounts: string[][]): string[] {
  const argv = ['--headless', '-d', computer.dataDir, '-i', '0', '--script', script];
  if (craftos.rom) argv.push('--rom', craftos.rom);
  for (const m of mounts) argv.push(...m);
  return argv;
}

/** A running agent host. */
export interface RunningHost {
  /** Kill the emulator (it ignores SIGTERM) and wait for it to exit. */
  stop(): Promise<void>;
  /** Whether it exited on its own (a crash), and what it printed. */
  exited(): boolean;
  output(): string;
}

/**
 * Boot the computer running the real Lua client's agent host, connected to `wsUrl` as `clientId` (the client
 * library mounted read-only at /ccagent from `luaDir`, the layout its installer writes).
 */
export function startHost(
  craftos: Craftos,
  computer: ComputerDisk,
  opts: { luaDir: string; wsUrl: string; clientId: string },
): RunningHost {
  const script = path.join(computer.dataDir, 'host.lua');
  writeFileSync(
    script,
    [
      'package.path = "/ccagent/?.lua;/ccagent/?/init.lua;" .. package.path',
      'local ccagent = require "ccagent"',
      `local client = ccagent.connect(${JSON.stringify(opts.wsUrl)}, { client_id = ${JSON.stringify(opts.clientId)},`,
      '  reconnect_min = 0.5, reconnect_max = 2, state_dir = "/.ccagent/state" })',
      'require("ccagent.host").new(client, { shell = shell })',
      'client:run()',
      '',
    ].join('\n'),
  );
  const child = spawnOwned(
    craftos.bin,
    argvFor(craftos, computer, script, [['--mount-ro', `/ccagent=${opts.luaDir}`]]),
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  const keep = (b: Buffer) => {
    if (out.length < 200_000) out += b.toString('utf8');
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const exit = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let done = false;
  void exit.then(() => (done = true));
  return {
    async stop() {
      if (!done) child.kill('SIGKILL');
      await exit;
    },
    exited: () => done,
    output: () => out,
  };
}

/**
 * Run programs on a computer that is not running anything else, one after the other in one boot, the way the agent
 * host runs them (`lua/eval-run.lua`). A run still going at `timeoutMs` (and every run after it) fails with
 * `timed out`.
 */
export async function runPrograms(
  craftos: Craftos,
  computer: ComputerDisk,
  runs: readonly ProgramRun[],
  opts: { luaDir: string; timeoutMs?: number },
): Promise<RunOutcome[]> {
  if (runs.length === 0) return [];
  const io = mkdtempSync(path.join(computer.dataDir, 'eval-io-'));
  try {
    writeFileSync(
      path.join(io, 'runs.json'),
      JSON.stringify(runs.map((r) => ({ program: r.program, args: r.args ?? [] }))),
    );
    const child = spawnOwned(
      craftos.bin,
      argvFor(craftos, computer, RUNNER_LUA, [
        ['--mount-ro', `/ccagent=${opts.luaDir}`],
        ['--mount-rw', `/.eval=${io}`],
      ]),
      { stdio: ['ignore', 'ignore', 'ignore'] },
    );
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 30_000);
    await new Promise<void>((resolve) => child.once('exit', () => resolve()));
    clearTimeout(timer);
    const outFile = path.join(io, 'out.json');
    const got = existsSync(outFile) ? (JSON.parse(readFileSync(outFile, 'utf8')) as RunOutcome[]) : [];
    const hung = runs[got.length];
    return runs.map(
      (r, i) =>
        got[i] ?? {
          ok: false,
          output: '',
          error:
            i === got.length
              ? `timed out: ${r.program} did not finish within ${opts.timeoutMs ?? 30_000} ms`
              : `not run: ${hung?.program} before it timed out`,
        },
    );
  } finally {
    rmSync(io, { recursive: true, force: true });
  }
}
