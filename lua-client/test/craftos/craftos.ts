// Starts real CC:Tweaked computers (headless CraftOS-PC) for the lua-client's CraftOS tier, and for any later
// end-to-end test that needs one (e.g. against the built orchestrator): nothing here knows about the fake server.
// Emulator lookup: $CRAFTOS_PC_DIR, then ../shared/craftos beside the repo, then `craftos` on PATH.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
/** lua-client/ (absolute). */
export const PKG_ROOT = path.resolve(here, '..', '..');
/** lua-client/src: mounted read-only at /ccagent by default, the layout the installer writes. */
export const SRC_DIR = path.join(PKG_ROOT, 'src');
const REPO_ROOT = path.resolve(PKG_ROOT, '..');

/** Where the emulator binary (and, for a CraftOS-PC folder, its ROM) were found. */
export interface Craftos {
  bin: string;
  rom?: string;
  /** How it was found (for the printed notice). */
  source: string;
  /** `craftos --version` output. */
  version: string;
}

function probe(bin: string, rom: string | undefined, source: string): Craftos {
  const r = spawnSync(bin, ['--version'], { encoding: 'utf8', timeout: 10_000 });
  if (r.error || r.status !== 0) {
    // Found but unusable (usually missing shared libraries): fail loudly rather than skip.
    throw new Error(
      `CraftOS-PC at ${bin} (${source}) does not run: ${r.error?.message ?? r.stderr.trim()}. ` +
        'Run its install-deps.sh (see docs/lua-client.md).',
    );
  }
  return { bin, rom, source, version: r.stdout.trim() };
}

function fromDir(dir: string, source: string): Craftos | undefined {
  const bin = path.join(dir, 'bin', 'craftos');
  if (!existsSync(bin)) return undefined;
  const rom = path.join(dir, 'share', 'craftos');
  return probe(bin, existsSync(rom) ? rom : undefined, source);
}

/**
 * Find CraftOS-PC, or undefined when there is none (callers skip with a printed notice). Throws when an emulator
 * is present but cannot start, so a broken install never looks like a skipped tier.
 */
export function findCraftos(): Craftos | undefined {
  const envDir = process.env.CRAFTOS_PC_DIR;
  if (envDir) {
    const c = fromDir(path.resolve(envDir), `CRAFTOS_PC_DIR=${envDir}`);
    if (c) return c;
  }
  const shared = fromDir(path.resolve(REPO_ROOT, '..', 'shared', 'craftos'), '../shared/craftos');
  if (shared) return shared;
  const which = spawnSync('sh', ['-c', 'command -v craftos'], { encoding: 'utf8' });
  const bin = which.stdout.trim();
  if (which.status === 0 && bin) return probe(bin, undefined, 'PATH');
  return undefined;
}

/** A host folder mounted into the computer. */
export interface Mount {
  /** Path inside the computer, e.g. `/ccagent`. */
  at: string;
  /** Absolute host directory. */
  dir: string;
  readOnly?: boolean;
}

/** How to start a computer. */
export interface StartOptions {
  /** Arguments for the program (its `...`/`arg`). */
  args?: string[];
  /** Mount lua-client/src read-only at /ccagent (default true; the installer test starts from an empty disk). */
  mountLibrary?: boolean;
  /** Extra mounts. */
  mounts?: Mount[];
  /** Files written to the computer's own disk before boot (path → content). */
  files?: Record<string, string | Buffer>;
  /** Block private/loopback addresses for http and websockets, like CC:Tweaked's default server config. */
  blockPrivate?: boolean;
  /** Hard limit; the emulator is killed after it (default 30 s). */
  timeoutMs?: number;
  /**
   * Reuse this data directory (config + computer disks) instead of a fresh temporary one, e.g. to boot the same
   * computer again after killing it. It is not deleted by {@link Computer.stop}.
   */
  dataDir?: string;
}

/** A running computer. */
export interface Computer {
  /** The computer's own disk on the host (computer/0): inspect what the program wrote. */
  readonly disk: string;
  /**
   * Resolves when the emulator exits: `code` is 0 when the program returned, 1 when it raised (null: killed or
   * crashed before the program finished).
   */
  readonly exited: Promise<{ code: number | null; stdout: string }>;
  /** Everything the emulator printed so far (the raw headless terminal stream). */
  stdout(): string;
  /** Kill the emulator (it ignores SIGTERM) and delete its data dir. */
  stop(): Promise<void>;
}

const EXIT_MARKER = '.craftos-exit';

const luaString = (s: string): string =>
  '"' + [...Buffer.from(s, 'utf8')].map((b) => `\\${b}`).join('') + '"';

/**
 * Boot a fresh computer (id 0) that runs `program` (Lua source, saved as /test-program.lua) the way the CraftOS
 * shell runs a program, then shuts down with 0 (returned), 1 (raised) or the code passed to os.shutdown.
 */
export function startComputer(craftos: Craftos, program: string, opts: StartOptions = {}): Computer {
  const data = opts.dataDir ?? mkdtempSync(path.join(tmpdir(), 'ccagent-craftos-'));
  const disk = path.join(data, 'computer', '0');
  mkdirSync(path.join(data, 'config'), { recursive: true });
  mkdirSync(disk, { recursive: true });
  const lastVersion = /CraftOS-PC (v\S+)/.exec(craftos.version)?.[1];
  writeFileSync(
    path.join(data, 'config', 'global.json'),
    JSON.stringify({
      ...(lastVersion ? { lastVersion } : {}),
      checkUpdates: false,
      http_enable: true,
      http_websocket_enabled: true,
      http_whitelist: ['*'],
      http_blacklist: opts.blockPrivate ? ['$private'] : [],
    }),
  );
  writeFileSync(
    path.join(disk, '.settings'),
    '{ [ "motd.enable" ] = false, [ "bios.use_multishell" ] = false, }',
  );
  for (const [p, content] of Object.entries(opts.files ?? {})) {
    const full = path.join(disk, p);
    mkdirSync(path.dirname(full), { recursive: true });
    writeFileSync(full, content);
  }
  writeFileSync(path.join(disk, 'test-program.lua'), program);
  // CraftOS-PC 2.8.4 sometimes segfaults inside os.shutdown once a websocket has been used, so the outcome is
  // written to a marker file first and read from there, not from the emulator's exit status.
  const marker = path.join(disk, EXIT_MARKER);
  rmSync(marker, { force: true });
  const args = (opts.args ?? []).map(luaString).join(', ');
  writeFileSync(
    path.join(data, 'wrapper.lua'),
    [
      `local ok = shell.execute("/test-program.lua"${args ? `, ${args}` : ''})`,
      `local h = fs.open("/${EXIT_MARKER}", "w") h.write(ok and "0" or "1") h.close()`,
      'os.shutdown(ok and 0 or 1)',
      '',
    ].join('\n'),
  );
  const argv = ['--headless', '-d', data, '-i', '0', '--script', path.join(data, 'wrapper.lua')];
  if (craftos.rom) argv.push('--rom', craftos.rom);
  const mounts: Mount[] = [
    ...(opts.mountLibrary === false ? [] : [{ at: '/ccagent', dir: SRC_DIR, readOnly: true }]),
    ...(opts.mounts ?? []),
  ];
  for (const m of mounts) argv.push(m.readOnly ? '--mount-ro' : '--mount-rw', `${m.at}=${m.dir}`);

  let out = '';
  const child: ChildProcess = spawn(craftos.bin, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout?.on('data', (d: Buffer) => (out += d.toString('utf8')));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString('utf8')));
  const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 30_000);
  const exited = new Promise<{ code: number | null; stdout: string }>((resolve) => {
    child.on('exit', () => {
      clearTimeout(timer);
      const code = existsSync(marker) ? Number(readFileSync(marker, 'utf8')) : null;
      resolve({ code, stdout: out });
    });
  });
  return {
    disk,
    exited,
    stdout: () => out,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
      if (!opts.dataDir) rmSync(data, { recursive: true, force: true });
    },
  };
}

/** The terminal stream with whitespace runs (wrapped lines, padding) collapsed to one space, for text checks. */
export function screenText(c: Computer): string {
  return c.stdout().replace(/\s+/g, ' ');
}

/** Lua prelude for test programs: make the mounted library requireable the way the programs do it. */
export const PRELUDE = 'package.path = "/ccagent/?.lua;/ccagent/?/init.lua;" .. package.path\n';

/**
 * Lua for a test program that runs the real agent session (`ccagent.session`: the host and the triggers of
 * `/.ccagent/triggers.lua`) as `clientId`, connecting to the URL passed as the program's argument. The emulator cannot
 * set a redstone input, so the program's table `inputs` (side → level, `back` = 0) stands in for them. `session`,
 * `inputs` and `url` are locals the rest of the program uses; the session's start-up problems are printed.
 */
export function sessionProgram(clientId: string): string {
  return `${PRELUDE}
local url = ...
local inputs = { back = 0 }
redstone.getAnalogInput = function(side) return inputs[side] or 0 end
redstone.getInput = function(side) return (inputs[side] or 0) > 0 end
local session_mod = require "ccagent.session"
local session = session_mod.create({ ws_url = url, client_id = "${clientId}", state_dir = "/.ccagent/state" },
    { shell = shell })
for _, p in ipairs(session.problems) do print("problem: " .. tostring(p.error)) end`;
}
