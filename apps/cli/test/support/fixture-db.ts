/**
 * Writes the CLI tests' database by a REAL run: the planner/executor strategy of @ccagent/agent calling models
 * through the real `ollama` client (OllamaChatModel) against the scripted fake Ollama server of @ccagent/testkit, a
 * real Engine, and the SQLite store the orchestrator uses. Only the CC computer is scripted (an in-process
 * ToolExecutor with the Lua host's result shapes). Ids are fixed and the clock steps by a fixed amount per reading,
 * so everything but measured model latencies is the same on every run.
 */
import {
  Engine,
  type Clock,
  type CommandDescriptor,
  type CommandOutcome,
  type JsonValue,
  type Task,
  type TimerHandle,
  type ToolCallRequest,
  type ToolExecutor,
} from '@ccagent/engine';
import { createPlannerExecutorStrategy } from '@ccagent/agent';
import { OllamaChatModel } from '@ccagent/models';
import { openSqliteStore } from '@ccagent/store';
import { startFakeOllama } from '@ccagent/testkit';

/** Fixed ids of the fixture's tasks (newest last). */
export const FIXTURE_IDS = {
  countdown: '3f6b2a10-8c4d-4e1f-9a7b-2d5e6c8f1a01',
  ask: '9c1e7d42-5b3a-4f60-8e21-7a4d3c2b1f02',
  unknownKind: 'b7a2c9e1-1d4f-4c3b-a5e6-0f9d8c7b6a03',
  cancelled: 'e4d3c2b1-a0f9-4e8d-b7c6-5a4b3c2d1e04',
} as const;

/** Fixture start time: 2026-11-23 08:00:00 UTC. */
export const FIXTURE_T0 = Date.UTC(2026, 10, 23, 8, 0, 0);
/** Models of the fixture run. */
export const PLANNER_MODEL = 'qwen2.5-coder:7b';
export const EXECUTOR_MODEL = 'qwen2.5:3b';
/** The CC client the fixture's tasks are bound to. */
export const CLIENT_ID = 'turtle-7';

/** A clock that moves forward `stepMs` at every reading: deterministic timestamps for a sequential run. */
class SteppingClock implements Clock {
  constructor(
    private t: number,
    private readonly stepMs: number,
  ) {}
  now(): number {
    const v = this.t;
    this.t += this.stepMs;
    return v;
  }
  setTimeout(fn: () => void, ms: number): TimerHandle {
    const h = setTimeout(fn, ms);
    h.unref();
    return h;
  }
  clearTimeout(handle: TimerHandle): void {
    clearTimeout(handle as NodeJS.Timeout);
  }
}

const STR = { type: 'string' };
/** The core commands the Lua agent host registers (names, descriptions and argument schemas). */
export const CORE_COMMANDS: CommandDescriptor[] = [
  {
    name: 'fs_read',
    description: 'Read a file.',
    argsSchema: { type: 'object', properties: { path: STR }, required: ['path'] },
  },
  {
    name: 'fs_write',
    description: 'Write (or append to) a file, creating parent directories.',
    argsSchema: { type: 'object', properties: { path: STR, content: STR }, required: ['path', 'content'] },
  },
  {
    name: 'fs_list',
    description: 'List a directory.',
    argsSchema: { type: 'object', properties: { path: STR } },
  },
  {
    name: 'run_program',
    description:
      'Run a Lua program with arguments; returns ok, its output and the error with stack traceback.',
    argsSchema: {
      type: 'object',
      properties: { path: STR, args: { type: 'array', items: STR } },
      required: ['path'],
    },
  },
  {
    name: 'shell_exec',
    description: 'Run a CraftOS shell command line.',
    argsSchema: { type: 'object', properties: { command: STR }, required: ['command'] },
  },
];

const BUGGY = [
  'local n = tonumber(arg[1])',
  'for i = n, 1, -1 do',
  '  print(i)',
  'end',
  'print("Liftoff!")',
  '',
].join('\n');
const FIXED = [
  'local args = { ... }',
  'local n = tonumber(args[1]) or 10',
  'for i = n, 1, -1 do',
  '  print(i)',
  '  sleep(1)',
  'end',
  'print("Liftoff!")',
  '',
].join('\n');

/** What the CC computer answers: the Lua host's result shapes, scripted for this scenario. */
class ScriptedComputer implements ToolExecutor {
  readonly files = new Map<string, string>();
  readonly calls: ToolCallRequest[] = [];
  listCommands(): CommandDescriptor[] {
    return CORE_COMMANDS;
  }
  execute(call: ToolCallRequest): Promise<CommandOutcome> {
    this.calls.push(call);
    const a = call.args as Record<string, JsonValue>;
    const path = String(a.path ?? '');
    switch (call.command) {
      case 'fs_write':
        this.files.set(path, String(a.content));
        return ok({ path, bytes: Buffer.byteLength(String(a.content)) });
      case 'fs_read': {
        const content = this.files.get(path);
        if (content === undefined)
          return Promise.resolve({
            ok: false,
            error: { code: 'not_found', message: `${path}: no such file` },
          });
        return ok({ path, content, size: Buffer.byteLength(content) });
      }
      case 'run_program': {
        const src = this.files.get(path);
        if (src === undefined) return ok({ ok: false, output: '', error: `No such program: ${path}` });
        if (src === BUGGY) {
          return ok({
            ok: false,
            output: '',
            error: `${path}:1: attempt to index global 'arg' (a nil value)\nstack traceback:\n\t${path}:1: in main chunk`,
          });
        }
        const n = Number((a.args as string[] | undefined)?.[0] ?? 10);
        const lines = Array.from({ length: n }, (_, i) => String(n - i));
        return ok({ ok: true, output: [...lines, 'Liftoff!'].join('\n') });
      }
      default:
        return Promise.resolve({
          ok: false,
          error: { code: 'unknown_command', message: `no command ${call.command}` },
        });
    }
  }
}
const ok = (result: JsonValue): Promise<CommandOutcome> => Promise.resolve({ ok: true, result });

const PLANNER_REPLIES = [
  [
    'PLAN:',
    '1. Write countdown.lua that counts down from the number given as its first argument.',
    '2. Run it with 3 to test it.',
    '',
    'WRITE_FILE',
    'PATH: countdown.lua',
    'LANGUAGE: lua',
    'CONTENT:',
    '```lua',
    BUGGY.trimEnd(),
    '```',
    'THEN:',
    '- countdown.lua 3',
  ].join('\n'),
  [
    'CC:Tweaked programs get their arguments from `...`, not from the global `arg`. I will read them with',
    '`local args = { ... }` and pause a second between numbers.',
    '',
    'WRITE_FILE',
    'PATH: countdown.lua',
    'LANGUAGE: lua',
    'CONTENT:',
    '```lua',
    FIXED.trimEnd(),
    '```',
    'THEN:',
    '- countdown.lua 3',
  ].join('\n'),
  [
    'DONE',
    'SUMMARY: countdown.lua counts down from its first argument (default 10) and prints "Liftoff!"; the run with 3',
    'printed 3, 2, 1, Liftoff!.',
    'NOTES: It waits one second between numbers.',
  ].join('\n'),
  // The second task: a question only a person can answer.
  [
    'ASK_USER',
    'QUESTION: Which chest should the turtle empty the ores into: the one on its left or the one behind it?',
    'WHY: The task does not say where the ores go and both chests are empty.',
    'NEXT: Write sort.lua to turn towards that chest and drop every ore into it.',
  ].join('\n'),
];

const tool = (explanation: string, name: string, parameters: Record<string, unknown>): string =>
  JSON.stringify({ kind: 'tool', explanation, tool: name, parameters });

const EXECUTOR_REPLIES = [
  // A small model forgets the file content: the reply is rejected with a validation error and repaired once.
  tool('Write countdown.lua and run it', 'cc_write_and_run', {
    path: 'countdown.lua',
    runs: [{ path: 'countdown.lua', args: ['3'] }],
  }),
  tool('Write countdown.lua and run it', 'cc_write_and_run', {
    path: 'countdown.lua',
    content: BUGGY,
    runs: [{ path: 'countdown.lua', args: ['3'] }],
  }),
  '```json\n' +
    tool('Write the fixed countdown.lua and run it', 'cc_write_and_run', {
      path: 'countdown.lua',
      content: FIXED,
      runs: [{ path: 'countdown.lua', args: ['3'] }],
    }) +
    '\n```',
  JSON.stringify({
    kind: 'final',
    explanation: 'The program works',
    result: {
      success: true,
      message: 'countdown.lua counts down and prints Liftoff!',
      details: 'Tested with 3.',
    },
  }),
  tool('Ask where the ores go', 'ask_user', {
    question: 'Which chest should the turtle empty the ores into: the one on its left or the one behind it?',
    why: 'The task does not say where the ores go and both chests are empty.',
  }),
];

/** What {@link writeFixtureDb} leaves in the file. */
export interface FixtureSummary {
  path: string;
  tasks: Record<keyof typeof FIXTURE_IDS, Task>;
}

/**
 * Runs the scenario into a new database at `path`: a completed code task (a validation error and its repair, a
 * failing run, a fix, a successful run, DONE), a task waiting for a person's answer, a task of an unknown kind
 * (failed) and a cancelled one, plus a client and its model-written tools.
 */
export async function writeFixtureDb(path: string): Promise<FixtureSummary> {
  const fake = await startFakeOllama({ now: () => new Date(FIXTURE_T0) });
  fake.script(PLANNER_MODEL, PLANNER_REPLIES);
  fake.script(EXECUTOR_MODEL, EXECUTOR_REPLIES);
  const model = new OllamaChatModel({ host: fake.url, retry: { retries: 0 }, timeoutMs: 10_000 });
  const store = openSqliteStore({ path });
  const clock = new SteppingClock(FIXTURE_T0, 1500);
  const computer = new ScriptedComputer();
  const strategy = createPlannerExecutorStrategy({
    planner: { model, name: PLANNER_MODEL, options: { temperature: 0.2, numCtx: 8192 } },
    executor: { model, name: EXECUTOR_MODEL, options: { temperature: 0, numCtx: 4096 } },
    mode: 'model',
    systemPrompt:
      'You write Lua 5.2 programs for CC:Tweaked. Test every program by running it before finishing.',
  });
  const engine = new Engine({
    store,
    strategies: { code_job: strategy },
    executor: computer,
    clock,
    tickIntervalMs: 0,
  });
  const settle = (id: string, until: (t: Task) => boolean): Promise<Task> =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`fixture task ${id} did not settle`)), 20_000);
      engine.on('taskUpdated', ({ task }) => {
        if (task.id === id && until(task)) {
          clearTimeout(timer);
          resolve(task);
        }
      });
    });
  const ended = (t: Task): boolean => ['completed', 'failed', 'cancelled'].includes(t.status);
  try {
    await store.upsertClient({
      clientId: CLIENT_ID,
      commands: CORE_COMMANDS,
      connected: true,
      seenAt: clock.now(),
      clientVersion: '0.1.0',
    });
    await engine.start();
    const allowed = ['fs_read', 'fs_write', 'fs_list', 'run_program'];

    let done = settle(FIXTURE_IDS.countdown, ended);
    await engine.createTask({
      id: FIXTURE_IDS.countdown,
      kind: 'code_job',
      prompt:
        'Write countdown.lua: it counts down from the number given as its first argument, then prints "Liftoff!".',
      clientId: CLIENT_ID,
      allowedCommands: allowed,
      budgets: { maxSteps: 30, maxToolCalls: 20 },
    });
    const countdown = await done;

    done = settle(FIXTURE_IDS.ask, (t) => t.status === 'waiting_for_user' || ended(t));
    await engine.createTask({
      id: FIXTURE_IDS.ask,
      kind: 'code_job',
      prompt: 'Sort the ores from the chest in front of the turtle into the right chest.',
      clientId: CLIENT_ID,
      allowedCommands: allowed,
    });
    const ask = await done;

    done = settle(FIXTURE_IDS.unknownKind, ended);
    await engine.createTask({
      id: FIXTURE_IDS.unknownKind,
      kind: 'tree_farm',
      prompt: 'Plant and harvest a birch farm.',
    });
    const unknownKind = await done;

    // A task cancelled before its client came back: created for a kind whose strategy never ran.
    done = settle(FIXTURE_IDS.cancelled, ended);
    await engine.createTask({
      id: FIXTURE_IDS.cancelled,
      kind: 'code_job',
      prompt: 'Dig a 3x3 tunnel 64 blocks long.',
      clientId: 'turtle-9',
      allowedCommands: allowed,
    });
    await engine.cancelTask(FIXTURE_IDS.cancelled, 'changed my mind');
    const cancelled = await done;

    await store.setClientConnected(CLIENT_ID, false, clock.now());
    const at = clock.now();
    await store.replaceClientTools(
      CLIENT_ID,
      [
        {
          name: 'dig_tunnel',
          status: 'active',
          version: 3,
          description: 'Dig a 3x3 tunnel N blocks long, placing torches every 8 blocks.',
          file: '/tools/dig_tunnel.lua',
          updatedAt: at,
        },
        {
          name: 'sort_ores',
          status: 'test',
          version: 1,
          description: 'Move ores from the front chest into the chest behind.',
          file: '/tools/sort_ores.lua',
          updatedAt: at,
        },
        {
          name: 'refuel',
          status: 'draft',
          version: 0,
          description: 'Refuel from coal in any slot.',
          file: '/tools/refuel.lua',
          updatedAt: at,
        },
        {
          name: 'strip_mine',
          status: 'retired',
          version: 2,
          description: 'Superseded by dig_tunnel.',
          file: '/tools/strip_mine.lua',
          updatedAt: at,
        },
      ],
      at,
    );
    return { path, tasks: { countdown, ask, unknownKind, cancelled } };
  } finally {
    await engine.stop();
    await store.close();
    await fake.close();
  }
}
