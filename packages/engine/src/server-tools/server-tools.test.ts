/**
 * Server-side tools through a real Engine and store: registration rules (a name taken twice, by a server tool or a
 * computer's command, is refused), parameters validated (types, enums) and defaulted before execute, the per-tool
 * timeout, the allow-list checked at the last point before a tool runs, and the calls in the history and step log
 * like a computer's.
 */
import os from 'node:os';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../clock.js';
import { Engine } from '../engine.js';
import { isEngineError } from '../engine-error.js';
import { InMemoryTaskStore } from '../in-memory-task-store.js';
import type { TaskStrategy, ToolCallRequest, ToolExecutor } from '../ports.js';
import type { CommandOutcome, Decision, JsonValue } from '../types.js';
import { builtInServerTools, hardwareTier } from './built-in-tools.js';
import { defineServerTool } from './server-tool.js';
import { withServerTools } from './server-tool-executor.js';
import { ServerToolRegistry } from './server-tool-registry.js';

/** Makes the given calls in order, then completes with every outcome. */
function script(calls: Array<{ command: string; args: JsonValue; timeoutMs?: number }>): TaskStrategy {
  return {
    decide(_task, history) {
      const results = history.filter((e) => e.type === 'tool_result');
      const last = history[history.length - 1];
      // the engine refused the call (a note): stop there, with what it said
      if (last?.type === 'note')
        return Promise.resolve({ type: 'fail', error: { code: 'refused', message: last.text } });
      const next = calls[results.length];
      const d: Decision = next
        ? {
            type: 'tool_call',
            command: next.command,
            args: next.args,
            ...(next.timeoutMs ? { timeoutMs: next.timeoutMs } : {}),
          }
        : {
            type: 'complete',
            result: results.map((r) => (r.type === 'tool_result' ? r.outcome : null)) as never,
          };
      return Promise.resolve(d);
    },
  };
}

/** A computer executor double: offers `fs_read`, answers every call it gets with its name. */
class ComputerExecutor implements ToolExecutor {
  readonly calls: ToolCallRequest[] = [];
  listCommands() {
    return [{ name: 'fs_read', description: 'read a file' }];
  }
  execute(call: ToolCallRequest): Promise<CommandOutcome> {
    this.calls.push(call);
    return Promise.resolve({ ok: true, result: { ran_on: 'computer', command: call.command } });
  }
}

async function runTask(
  registry: ServerToolRegistry,
  calls: Array<{ command: string; args: JsonValue; timeoutMs?: number }>,
  opts: { clock?: ManualClock; allowedCommands?: string[]; executor?: ToolExecutor } = {},
) {
  const store = new InMemoryTaskStore();
  const clock = opts.clock ?? new ManualClock(1_000);
  const engine = new Engine({
    store,
    strategies: { demo: script(calls) },
    clock,
    executor: opts.executor ?? new ComputerExecutor(),
    serverTools: registry,
    tickIntervalMs: 0,
  });
  await engine.start();
  const task = await engine.createTask({
    kind: 'demo',
    prompt: 'use tools',
    ...(opts.allowedCommands ? { allowedCommands: opts.allowedCommands } : {}),
  });
  for (let i = 0; i < 500; i++) {
    const t = await store.getTask(task.id);
    if (t && ['completed', 'failed'].includes(t.status)) break;
    await clock.advance(i > 100 ? 100 : 0);
  }
  const done = await store.getTask(task.id);
  await engine.stop();
  return {
    task: done,
    history: await store.getHistory(task.id),
    steps: await store.getSteps(task.id),
    outcomes: done?.result as unknown as CommandOutcome[],
  };
}

describe('ServerToolRegistry registration', () => {
  const tool = (name: string) =>
    defineServerTool({ name, description: 'x', parameters: { type: 'object' }, execute: () => 1 });

  it('refuses a name registered twice, and keeps the first (guards: a second tool silently replacing one)', () => {
    const r = new ServerToolRegistry();
    const first = tool('weather');
    r.register(first);
    let err: unknown;
    try {
      r.register({ ...tool('weather'), description: 'other' });
    } catch (e) {
      err = e;
    }
    expect(isEngineError(err, 'tool_exists')).toBe(true);
    expect((err as Error).message).toBe('a server tool named "weather" is already registered');
    expect(r.descriptors()).toHaveLength(1);
    expect(r.descriptors()[0]?.description).toBe('x');
  });

  it("refuses a name a computer's command already has, naming the clash (guards: a task not knowing which runs)", () => {
    const r = new ServerToolRegistry();
    withServerTools(new ComputerExecutor(), r);
    expect(() => r.register(tool('fs_read'))).toThrow(
      /server tool "fs_read" clashes with a computer's command "fs_read"/,
    );
    expect(r.has('fs_read')).toBe(false);
  });

  it('refuses unusable definitions with invalid_input (guards: a broken tool found only when a model calls it)', () => {
    const r = new ServerToolRegistry();
    const bad: Array<[unknown, RegExp]> = [
      [{ ...tool('x'), name: 'has space' }, /name "has space" is not usable/],
      [{ ...tool('x'), description: ' ' }, /needs a description/],
      [{ ...tool('x'), parameters: { type: 'string' } }, /must be a JSON Schema with "type": "object"/],
      [
        { ...tool('x'), parameters: { type: 'object', properties: { a: { type: 'nope' } } } },
        /not a usable JSON Schema/,
      ],
      [{ ...tool('x'), timeoutSeconds: 0 }, /timeoutSeconds must be a number of seconds/],
      [{ ...tool('x'), execute: undefined }, /has no execute function/],
    ];
    for (const [def, msg] of bad) {
      let err: unknown;
      try {
        r.register(def as never);
      } catch (e) {
        err = e;
      }
      expect(isEngineError(err, 'invalid_input'), String(msg)).toBe(true);
      expect((err as Error).message).toMatch(msg);
    }
    expect(r.names()).toEqual([]);
  });
});

describe('server tools in a task', () => {
  it('offers server tools beside the computer’s commands and runs each where it belongs, recorded like a computer call', async () => {
    const registry = new ServerToolRegistry();
    for (const t of builtInServerTools({ clock: new ManualClock(Date.UTC(2026, 0, 31, 12)) }))
      registry.register(t);
    const computer = new ComputerExecutor();
    const executor = withServerTools(computer, new ServerToolRegistry());
    expect(executor.listCommands?.(null).map((c) => c.name)).toEqual(['fs_read']);
    const run = await runTask(
      registry,
      [
        { command: 'echo', args: { message: 'héllo' } },
        { command: 'get_time', args: {} },
        { command: 'get_time', args: { format: 'timestamp' } },
        { command: 'fs_read', args: { path: 'a' } },
      ],
      { executor: computer },
    );
    expect(run.task?.status).toBe('completed');
    expect(run.outcomes).toEqual([
      { ok: true, result: { message: 'héllo' } },
      // the schema's default format (iso) filled in
      { ok: true, result: { format: 'iso', time: '2026-01-31T12:00:00.000Z' } },
      { ok: true, result: { format: 'timestamp', time: Date.UTC(2026, 0, 31, 12) / 1000 } },
      { ok: true, result: { ran_on: 'computer', command: 'fs_read' } },
    ]);
    // only the computer's command reached the computer
    expect(computer.calls.map((c) => c.command)).toEqual(['fs_read']);
    // write-ahead: each call is in the history before its result, and its result is a step-log record
    const kinds = run.history
      .filter((e) => e.type === 'tool_call' || e.type === 'tool_result')
      .map((e) => e.type);
    expect(kinds).toEqual([
      'tool_call',
      'tool_result',
      'tool_call',
      'tool_result',
      'tool_call',
      'tool_result',
      'tool_call',
      'tool_result',
    ]);
    const logged = run.steps.filter((s) => s.kind === 'tool_result');
    expect(logged.map((s) => (s.toolCall as { command: string }).command)).toEqual([
      'echo',
      'get_time',
      'get_time',
      'fs_read',
    ]);
    expect(logged[0]?.toolResult).toEqual({ ok: true, result: { message: 'héllo' } });
  });

  it('validates arguments before execute: wrong type, value outside the enum, unknown field (guards: a tool run with bad input)', async () => {
    let runs = 0;
    const registry = new ServerToolRegistry();
    registry.register(
      defineServerTool<{ city: string; units: string }>({
        name: 'weather',
        description: 'weather of a city',
        parameters: {
          type: 'object',
          properties: {
            city: { type: 'string' },
            units: { type: 'string', enum: ['metric', 'imperial'], default: 'metric' },
          },
          required: ['city'],
          additionalProperties: false,
        },
        execute: (args) => {
          runs++;
          return { ...args, temp: 21 };
        },
      }),
    );
    const run = await runTask(registry, [
      { command: 'weather', args: { city: 7 } },
      { command: 'weather', args: { city: 'Oslo', units: 'kelvin' } },
      { command: 'weather', args: { city: 'Oslo', wind: true } },
      { command: 'weather', args: { city: 'Oslo' } },
    ]);
    expect(run.outcomes.slice(0, 3).map((o) => (o.ok ? 'ok' : o.error.code))).toEqual([
      'invalid_args',
      'invalid_args',
      'invalid_args',
    ]);
    const messages = run.outcomes.slice(0, 3).map((o) => (o.ok ? '' : o.error.message));
    expect(messages[0]).toContain('$.city must be string');
    expect(messages[1]).toContain(
      '$.units must be equal to one of the allowed values ("metric", "imperial")',
    );
    expect(messages[2]).toContain('must NOT have additional properties ("wind")');
    expect(run.outcomes[3]).toEqual({ ok: true, result: { city: 'Oslo', units: 'metric', temp: 21 } });
    expect(runs).toBe(1);
  });

  it('ends a call at the tool’s own timeout in seconds and aborts its signal (guards: a hung tool holding the task)', async () => {
    const clock = new ManualClock(1_000);
    let aborted = false;
    const registry = new ServerToolRegistry({ clock });
    registry.register(
      defineServerTool({
        name: 'slow',
        description: 'never finishes',
        parameters: { type: 'object' },
        timeoutSeconds: 1.5,
        execute: (_args, ctx) =>
          new Promise(() => {
            ctx.signal.addEventListener('abort', () => (aborted = true));
          }),
      }),
    );
    // The call's own timeout is the tool's (its descriptor): the engine closes the call then, marked timed out.
    const run = await runTask(
      registry,
      [
        { command: 'slow', args: {} },
        // a longer timeout asked by the strategy (the native loop's TOOL_EXECUTION_TIMEOUT) does not outlast the tool's
        { command: 'slow', args: {}, timeoutMs: 60_000 },
      ],
      { clock },
    );
    expect(run.outcomes).toEqual([
      { ok: false, error: { code: 'timeout', message: 'command "slow" timed out after 1500 ms' } },
      { ok: false, error: { code: 'timeout', message: 'server tool "slow" timed out after 1.5 s' } },
    ]);
    expect(aborted).toBe(true);
    const results = run.history.filter((e) => e.type === 'tool_result');
    expect(results[0]?.type === 'tool_result' && results[0].timedOut).toBe(true);
    // ended at 1.5 s of the clock, not at the 60 s the strategy allowed
    expect((results[1]?.at ?? 0) - (results[0]?.at ?? 0)).toBeLessThan(2_000);
  });

  it('a tool that ignores its abort signal does not hold the task past its timeout, and its late result is dropped and logged (guards: a tool that never looks at ctx.signal)', async () => {
    const clock = new ManualClock(1_000);
    const late: Array<(v: JsonValue) => void> = [];
    const warnings: string[] = [];
    const logger = {
      debug: () => undefined,
      info: () => undefined,
      warn: (_o: unknown, msg?: string) => warnings.push(msg ?? ''),
      error: () => undefined,
    };
    const registry = new ServerToolRegistry({ clock, logger });
    registry.register(
      defineServerTool({
        name: 'stubborn',
        description: 'ignores its signal; answers when released',
        parameters: { type: 'object' },
        timeoutSeconds: 1,
        execute: () => new Promise<JsonValue>((resolve) => late.push(resolve)),
      }),
    );
    registry.register(
      defineServerTool({
        name: 'release',
        description: 'lets the stubborn calls answer now, while the task still runs',
        parameters: { type: 'object' },
        execute: () => {
          for (const r of late) r({ late: true });
          return 'released';
        },
      }),
    );
    const run = await runTask(
      registry,
      [
        { command: 'stubborn', args: {}, timeoutMs: 60_000 },
        { command: 'release', args: {} },
        { command: 'release', args: {} },
      ],
      { clock },
    );
    expect(run.task?.status).toBe('completed');
    expect(run.outcomes).toEqual([
      { ok: false, error: { code: 'timeout', message: 'server tool "stubborn" timed out after 1 s' } },
      { ok: true, result: 'released' },
      { ok: true, result: 'released' },
    ]);
    // Ended at the tool's 1 s on the clock, not at the 60 s the strategy allowed, though the tool never stopped.
    const calls = run.history.filter((e) => e.type === 'tool_call');
    const results = run.history.filter((e) => e.type === 'tool_result');
    expect((results[0]?.at ?? 0) - (calls[0]?.at ?? 0)).toBeLessThanOrEqual(1_100);
    // The stubborn call's result came while the task ran: dropped, no outcome of its own, said in the log.
    expect(late).toHaveLength(1);
    expect(results).toHaveLength(3);
    expect(JSON.stringify(run.history)).not.toContain('"late"');
    expect(warnings).toContain(
      'server tool finished after its call ended (timeout or abort); its result is dropped',
    );
  });

  it('a tool that throws fails the call with its code; the task goes on (guards: a tool error failing the task)', async () => {
    const registry = new ServerToolRegistry();
    registry.register(
      defineServerTool({
        name: 'boom',
        description: 'throws',
        parameters: { type: 'object' },
        execute: () => {
          throw Object.assign(new Error('no network'), { code: 'offline' });
        },
      }),
    );
    const run = await runTask(registry, [{ command: 'boom', args: {} }]);
    expect(run.task?.status).toBe('completed');
    expect(run.outcomes[0]).toEqual({ ok: false, error: { code: 'offline', message: 'no network' } });
  });

  it('the task’s allow-list applies to server tools, in the engine and again at the last point before execute', async () => {
    let runs = 0;
    const registry = new ServerToolRegistry();
    registry.register(
      defineServerTool({
        name: 'secret',
        description: 'not for everyone',
        parameters: { type: 'object' },
        execute: () => ++runs,
      }),
    );
    const run = await runTask(registry, [{ command: 'secret', args: {} }], { allowedCommands: ['fs_read'] });
    expect(runs).toBe(0);
    expect(run.history.some((e) => e.type === 'note' && e.text.includes('"secret" is not allowed'))).toBe(
      true,
    );
    // the executor's own check, for a call that reaches it (a re-dispatch after the task's list changed, a host bug)
    const executor = withServerTools(undefined, registry);
    const refused = await executor.execute({
      taskId: 't',
      callId: 't:call:1',
      clientId: null,
      command: 'secret',
      args: {},
      timeoutMs: 1000,
      attempt: 1,
      allowedCommands: ['echo'],
      signal: new AbortController().signal,
    });
    expect(refused).toEqual({
      ok: false,
      error: { code: 'not_allowed', message: '"secret" is not allowed for this task; allowed: echo' },
    });
    expect(runs).toBe(0);
  });
});

describe('built-in tools', () => {
  it('get_system_info reports this host’s CPU, RAM, GPUs and a tier', async () => {
    const registry = new ServerToolRegistry();
    for (const t of builtInServerTools()) registry.register(t);
    const run = await runTask(registry, [
      { command: 'get_system_info', args: {} },
      { command: 'get_system_info', args: { detailed: true } },
    ]);
    const [brief, detailed] = run.outcomes.map((o) => (o.ok ? (o.result as Record<string, JsonValue>) : {}));
    expect(brief?.cpu).toEqual({ model: os.cpus()[0]?.model.trim(), cores: os.cpus().length });
    expect((brief?.ram as { total_gib: number }).total_gib).toBeCloseTo(os.totalmem() / 1024 ** 3, 1);
    expect(Array.isArray(brief?.gpus)).toBe(true);
    expect(['low', 'medium', 'high']).toContain(brief?.tier);
    expect(brief?.uptime_s).toBeUndefined();
    expect(detailed?.uptime_s).toBeGreaterThan(0);
    expect(detailed?.cpu_speeds_mhz).toHaveLength(os.cpus().length);
  });

  it('hardwareTier: RAM and cores, or GPU memory', () => {
    expect(hardwareTier(8, 4, [])).toBe('low');
    expect(hardwareTier(16, 4, [])).toBe('medium');
    expect(hardwareTier(64, 16, [])).toBe('high');
    expect(hardwareTier(8, 2, [{ vendor: 'NVIDIA', memoryMiB: 12_288 }])).toBe('high');
  });
});
