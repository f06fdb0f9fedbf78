// An in-process ToolExecutor for tests and benches: the CC agent host's core commands (fs_write, fs_read, fs_list,
// fs_delete, run_program, shell_exec) on a directory of this machine, running programs with a real Lua 5.2
// interpreter through cc-shim.lua. Results have the shapes the Lua host (lua-client/src/ccagent/host.lua) returns:
// argument and file-system problems are command errors `{code, message}`; a program that raises an error is a
// successful command whose result is `{ok: false, output, error}` with the message and stack traceback.
import { spawn } from 'node:child_process';
import { mkdir, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const SHIM = fileURLToPath(new URL('./cc-shim.lua', import.meta.url));

/** @typedef {import('@ccagent/engine').ToolExecutor} ToolExecutor */
/** @typedef {import('@ccagent/engine').ToolCallRequest} ToolCallRequest */
/** @typedef {import('@ccagent/engine').CommandOutcome} CommandOutcome */
/** @typedef {import('@ccagent/engine').CommandDescriptor} CommandDescriptor */
/** @typedef {import('@ccagent/engine').JsonValue} JsonValue */

const STR = { type: 'string' };
const obj = (properties, required = []) => ({ type: 'object', properties, required });

/** @type {CommandDescriptor[]} */
export const CORE_COMMANDS = [
  {
    name: 'shell_exec',
    description:
      "Run a CraftOS shell command line; returns ok (the program's success) and its terminal output.",
    argsSchema: obj({ command: STR }, ['command']),
  },
  {
    name: 'fs_list',
    description: 'List a directory: entries with name, is_dir, size.',
    argsSchema: obj({ path: STR }),
  },
  {
    name: 'fs_read',
    description: 'Read a file. Optional byte offset/length.',
    argsSchema: obj({ path: STR, offset: { type: 'integer' }, length: { type: 'integer' } }, ['path']),
  },
  {
    name: 'fs_write',
    description: 'Write (or append to) a file, creating parent directories.',
    argsSchema: obj({ path: STR, content: STR, append: { type: 'boolean' } }, ['path', 'content']),
  },
  { name: 'fs_delete', description: 'Delete a file or directory.', argsSchema: obj({ path: STR }, ['path']) },
  {
    name: 'run_program',
    description:
      'Run a Lua program with arguments; returns ok, its output and the error with stack traceback.',
    argsSchema: obj({ path: STR, args: { type: 'array', items: STR } }, ['path']),
  },
];

class CommandFailure extends Error {
  /** @param {string} code @param {string} message */
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

/** @param {unknown} args @param {string} key @param {boolean} [optional] @returns {string | undefined} */
function argString(args, key, optional = false) {
  const v = args && typeof args === 'object' ? /** @type {Record<string, unknown>} */ (args)[key] : undefined;
  if (v === undefined && optional) return undefined;
  if (typeof v !== 'string') throw new CommandFailure('invalid_args', `'${key}' must be a string`);
  return v;
}

/** Split a shell command line into words, honouring double quotes (CraftOS shell.run semantics). */
export function shellWords(line) {
  const words = [];
  for (const m of line.matchAll(/"([^"]*)"|(\S+)/g)) words.push(m[1] ?? m[2] ?? '');
  return words;
}

/**
 * @param {{ root: string, lua?: string, runTimeoutMs?: number }} options
 *   `root`: directory standing for the computer's root; `lua`: interpreter (default `lua5.2`);
 *   `runTimeoutMs`: longest program run (default 5000) — a longer one fails like CC's "Too long without yielding".
 */
export function createLuaToolExecutor(options) {
  const root = path.resolve(options.root);
  const lua = options.lua ?? 'lua5.2';
  const runTimeoutMs = options.runTimeoutMs ?? 5000;
  /** @type {Map<string, Promise<CommandOutcome>>} */
  const byCallId = new Map();
  /** @type {Array<{ command: string, args: JsonValue, outcome: CommandOutcome }>} */
  const calls = [];

  /** CC path → real path inside root; `..` above the root is refused like CC does. @param {string} p */
  function resolve(p) {
    const parts = [];
    for (const part of p.split(/[\\/]+/)) {
      if (part === '' || part === '.') continue;
      if (part === '..') {
        if (parts.length === 0) throw new CommandFailure('invalid_path', `/${p}: Invalid Path`);
        parts.pop();
      } else parts.push(part);
    }
    return { real: path.join(root, ...parts), display: parts.join('/') };
  }

  /** @param {string} real */
  async function kind(real) {
    try {
      const s = await stat(real);
      return s.isDirectory() ? 'dir' : 'file';
    } catch {
      return 'none';
    }
  }

  /**
   * Run a Lua program through the shim. @param {string} program @param {string[]} argv @param {AbortSignal} signal
   * @returns {Promise<{ ok: boolean, output: string, error?: string }>}
   */
  function runLua(program, argv, signal, timeoutMs) {
    return new Promise((resolvePromise) => {
      const child = spawn(lua, [SHIM, root, program, ...argv], {
        cwd: root,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      let timedOut = false;
      child.stdout.setEncoding('utf8').on('data', (d) => (stdout += d));
      child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
      const kill = () => child.kill('SIGKILL');
      const timer = setTimeout(() => {
        timedOut = true;
        kill();
      }, timeoutMs);
      signal.addEventListener('abort', kill, { once: true });
      child.on('close', (code) => {
        clearTimeout(timer);
        signal.removeEventListener('abort', kill);
        const output = stdout.replace(/\s+$/, '');
        if (timedOut) resolvePromise({ ok: false, output, error: 'Too long without yielding' });
        else if (code === 0) resolvePromise({ ok: true, output });
        else
          resolvePromise({ ok: false, output, error: stderr.replace(/\s+$/, '') || `exit status ${code}` });
      });
    });
  }

  /** @param {string} p */
  async function programPath(p) {
    const { real, display } = resolve(p);
    if ((await kind(real)) === 'file') return display;
    if ((await kind(`${real}.lua`)) === 'file') return `${display}.lua`;
    return null;
  }

  /** @param {ToolCallRequest} call @returns {Promise<JsonValue>} */
  async function run(call) {
    const args = call.args;
    const timeout = Math.min(call.timeoutMs, runTimeoutMs);
    switch (call.command) {
      case 'fs_write': {
        const { real, display } = resolve(argString(args, 'path'));
        const content = argString(args, 'content');
        if ((await kind(real)) === 'dir') throw new CommandFailure('is_a_directory', display);
        await mkdir(path.dirname(real), { recursive: true });
        await writeFile(real, content, { flag: args.append === true ? 'a' : 'w' });
        return { path: display, bytes: Buffer.byteLength(content) };
      }
      case 'fs_read': {
        const { real, display } = resolve(argString(args, 'path'));
        const k = await kind(real);
        if (k === 'none') throw new CommandFailure('not_found', `no such file: ${display}`);
        if (k === 'dir') throw new CommandFailure('is_a_directory', `${display} is a directory`);
        const content = await readFile(real, 'utf8');
        return { path: display, content, size: Buffer.byteLength(content) };
      }
      case 'fs_list': {
        const { real, display } = resolve(argString(args, 'path', true) ?? '/');
        const k = await kind(real);
        if (k === 'none') throw new CommandFailure('not_found', `no such directory: ${display}`);
        if (k === 'file') throw new CommandFailure('not_a_directory', `${display} is a file`);
        const names = (await readdir(real)).sort();
        const entries = [];
        for (const name of names) {
          const s = await stat(path.join(real, name));
          entries.push({ name, is_dir: s.isDirectory(), size: s.isDirectory() ? 0 : s.size });
        }
        return { path: display, entries };
      }
      case 'fs_delete': {
        const { real, display } = resolve(argString(args, 'path'));
        if (display === '') throw new CommandFailure('forbidden', 'refusing to delete the root');
        if ((await kind(real)) === 'none') throw new CommandFailure('not_found', `no such file: ${display}`);
        await rm(real, { recursive: true, force: true });
        return { path: display, deleted: true };
      }
      case 'run_program': {
        const requested = argString(args, 'path');
        const program = await programPath(requested);
        if (!program) throw new CommandFailure('not_found', `no such program: ${resolve(requested).display}`);
        const argv = Array.isArray(args.args) ? args.args.map((a) => String(a)) : [];
        return runLua(program, argv, call.signal, timeout);
      }
      case 'shell_exec': {
        const [name, ...rest] = shellWords(argString(args, 'command'));
        if (!name) return { ok: false, output: '' };
        if (name === 'ls' || name === 'list' || name === 'dir') {
          const { real } = resolve(rest[0] ?? '');
          if ((await kind(real)) !== 'dir') return { ok: false, output: 'Not a directory' };
          return { ok: true, output: (await readdir(real)).sort().join('  ') };
        }
        if (name === 'rm' || name === 'delete') {
          for (const p of rest) await rm(resolve(p).real, { recursive: true, force: true });
          return { ok: true, output: '' };
        }
        if (name === 'mkdir') {
          for (const p of rest) await mkdir(resolve(p).real, { recursive: true });
          return { ok: true, output: '' };
        }
        const program = await programPath(name);
        if (!program) return { ok: false, output: 'No such program' };
        // shell.run prints a program's error to the terminal and returns false.
        const r = await runLua(program, rest, call.signal, timeout);
        if (r.ok) return { ok: true, output: r.output };
        const message = (r.error ?? '').split('\nstack traceback:')[0];
        return { ok: false, output: [r.output, message].filter((x) => x !== '').join('\n') };
      }
      default:
        throw new CommandFailure('unknown_command', `no command named '${call.command}'`);
    }
  }

  /** @type {ToolExecutor & { calls: typeof calls, root: string }} */
  const executor = {
    root,
    calls,
    listCommands: () => CORE_COMMANDS,
    execute(call) {
      // A repeated call id (re-dispatch after recovery) gets the stored outcome: the call is not run twice.
      const known = byCallId.get(call.callId);
      if (known) return known;
      const outcome = run(call).then(
        (result) => /** @type {CommandOutcome} */ ({ ok: true, result }),
        (err) =>
          /** @type {CommandOutcome} */ ({
            ok: false,
            error: {
              code: err instanceof CommandFailure ? err.code : 'internal_error',
              message: err instanceof Error ? err.message : String(err),
            },
          }),
      );
      byCallId.set(call.callId, outcome);
      void outcome.then((o) => calls.push({ command: call.command, args: call.args, outcome: o }));
      return outcome;
    },
  };
  return executor;
}
