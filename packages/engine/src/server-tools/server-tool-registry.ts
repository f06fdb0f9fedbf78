/**
 * The registry of server-side tools: registration (a name taken twice, by another server tool or by a computer's
 * command, is refused with `EngineError('tool_exists')`; a definition that is not usable with `invalid_input`), the
 * descriptors offered to tasks, and one call's run: arguments validated against the tool's JSON Schema with ajv
 * (defaults filled in) before `execute`, the tool's timeout, the result checked to be JSON.
 */
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import { systemClock } from '../clock.js';
import { EngineError } from '../engine-error.js';
import type { Clock, Logger } from '../ports.js';
import type { CommandDescriptor, CommandOutcome, JsonValue } from '../types.js';
import type { ServerTool } from './server-tool.js';

/** Timeout of a tool that sets none, in seconds (seed 004's `TOOL_EXECUTION_TIMEOUT` default). */
export const DEFAULT_SERVER_TOOL_TIMEOUT_SECONDS = 30;
/** Longest result a tool may return, in bytes of JSON (it is stored in the task's history and step log). */
export const MAX_SERVER_TOOL_RESULT_BYTES = 1_000_000;

/** A tool name: model APIs accept these everywhere (OpenAI's function names, Ollama's tools). */
const NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;

/** One call of a server tool, as {@link ServerToolRegistry.run} needs it. */
export interface ServerToolCall {
  command: string;
  args: JsonValue;
  taskId: string;
  callId: string;
  attempt: number;
  /** Aborted when the call ends without this run's result (task cancelled, engine stop, the call's own timeout). */
  signal: AbortSignal;
}

/** Options of {@link ServerToolRegistry}. */
export interface ServerToolRegistryOptions {
  /** Timeout of tools that set none, seconds. Default {@link DEFAULT_SERVER_TOOL_TIMEOUT_SECONDS}. */
  defaultTimeoutSeconds?: number;
  /** Time source of the tools' timeouts (a manual clock in tests). */
  clock?: Clock;
  logger?: Logger;
}

interface Entry {
  tool: ServerTool;
  validate: ValidateFunction;
  timeoutMs: number;
  descriptor: CommandDescriptor;
}

const silent: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

/**
 * Server-side tools by name. Register them before the engine starts or while it runs; a registered tool is offered to
 * every task whose allow-list admits it (see `withServerTools`).
 */
export class ServerToolRegistry {
  private readonly tools = new Map<string, Entry>();
  private readonly checks: Array<(name: string) => string | undefined> = [];
  // useDefaults: the schema's defaults are written into the (copied) arguments before execute sees them.
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true, useDefaults: true });
  private readonly defaultTimeoutMs: number;
  private readonly clock: Clock;
  private readonly logger: Logger;

  constructor(opts: ServerToolRegistryOptions = {}) {
    const seconds = opts.defaultTimeoutSeconds ?? DEFAULT_SERVER_TOOL_TIMEOUT_SECONDS;
    this.defaultTimeoutMs = timeoutMs(seconds, 'defaultTimeoutSeconds');
    this.clock = opts.clock ?? systemClock;
    this.logger = opts.logger ?? silent;
  }

  /**
   * Add a tool. Throws `EngineError('tool_exists')` when its name is already a server tool or (through the checks
   * {@link ServerToolRegistry.addNameCheck} installed) a computer's command, and `EngineError('invalid_input')` for
   * a bad name, a missing description or `execute`, parameters that are not a usable object schema, or a timeout
   * that is not a positive number of seconds (at most a day). Nothing is registered when it throws.
   */
  register(tool: ServerTool): void {
    const t = tool as Partial<ServerTool> | null;
    if (typeof t !== 'object' || t === null) throw invalid('a server tool must be an object');
    const name = t.name;
    if (typeof name !== 'string' || !NAME.test(name)) {
      throw invalid(
        `server tool name ${JSON.stringify(name)} is not usable: letters, digits, "_" and "-", starting with a letter, at most 64`,
      );
    }
    if (this.tools.has(name)) {
      throw new EngineError('tool_exists', `a server tool named "${name}" is already registered`, {
        details: { name, clash: 'server' },
      });
    }
    for (const check of this.checks) {
      const owner = check(name);
      if (owner !== undefined) {
        throw new EngineError(
          'tool_exists',
          `server tool "${name}" clashes with ${owner}; rename one of them (a task could not tell which runs)`,
          { details: { name, clash: 'computer', owner } },
        );
      }
    }
    if (typeof t.description !== 'string' || t.description.trim() === '') {
      throw invalid(`server tool "${name}" needs a description (the model reads it)`);
    }
    if (typeof t.execute !== 'function') throw invalid(`server tool "${name}" has no execute function`);
    const params = t.parameters as unknown;
    if (typeof params !== 'object' || params === null || (params as { type?: unknown }).type !== 'object') {
      throw invalid(`parameters of server tool "${name}" must be a JSON Schema with "type": "object"`);
    }
    let validate: ValidateFunction;
    try {
      const { $schema: _ignored, ...schema } = params as Record<string, unknown>;
      void _ignored;
      validate = this.ajv.compile(schema);
    } catch (err) {
      throw invalid(
        `parameters of server tool "${name}" are not a usable JSON Schema: ${err instanceof Error ? err.message : String(err)}`,
      );
    }
    const ms =
      t.timeoutSeconds === undefined
        ? this.defaultTimeoutMs
        : timeoutMs(t.timeoutSeconds, `${name}.timeoutSeconds`);
    const descriptor: CommandDescriptor = {
      name,
      description: t.description,
      argsSchema: params as JsonValue,
      timeoutMs: ms,
      origin: 'server',
    };
    this.tools.set(name, { tool: tool, validate, timeoutMs: ms, descriptor });
  }

  /**
   * Install a check run on every later registration: it returns who else uses a name (e.g. `the command "x" of
   * computer "c1"`), or undefined. `withServerTools` installs one reading the computers' commands.
   */
  addNameCheck(check: (name: string) => string | undefined): void {
    this.checks.push(check);
  }

  has(name: string): boolean {
    return this.tools.has(name);
  }

  /** Names of the registered tools, in registration order. */
  names(): string[] {
    return [...this.tools.keys()];
  }

  /** The tools as command descriptors (`origin: 'server'`, the timeout in ms), in registration order. */
  descriptors(): CommandDescriptor[] {
    return [...this.tools.values()].map((e) => e.descriptor);
  }

  /**
   * Run one call: the arguments checked against the tool's schema (an `invalid_args` failure, and `execute` is never
   * called, when they do not match), `execute` raced against the tool's timeout (`timeout`) and the call's signal
   * (`aborted`), the result checked to be JSON of bounded size. Never rejects.
   */
  async run(call: ServerToolCall): Promise<CommandOutcome> {
    const entry = this.tools.get(call.command);
    if (!entry) return failure('unknown_command', `no server tool named "${call.command}"`);
    const args: unknown = call.args === null || call.args === undefined ? {} : structuredClone(call.args);
    if (!entry.validate(args)) {
      return failure(
        'invalid_args',
        `arguments of "${call.command}" do not match its schema: ${describeErrors(entry.validate.errors)}`,
      );
    }
    if (call.signal.aborted) return failure('aborted', 'call aborted');
    const abort = new AbortController();
    const log = { task_id: call.taskId, call_id: call.callId, tool: call.command };
    return new Promise<CommandOutcome>((resolve) => {
      let done = false;
      const finish = (o: CommandOutcome): void => {
        if (done) return;
        done = true;
        this.clock.clearTimeout(timer);
        call.signal.removeEventListener('abort', onAbort);
        resolve(o);
      };
      const onAbort = (): void => {
        abort.abort(call.signal.reason);
        finish(failure('aborted', 'call aborted'));
      };
      const timer = this.clock.setTimeout(() => {
        const seconds = entry.timeoutMs / 1000;
        const err = failure('timeout', `server tool "${call.command}" timed out after ${seconds} s`);
        abort.abort(new EngineError('call_closed', err.ok ? '' : err.error.message));
        this.logger.warn({ ...log, timeout_ms: entry.timeoutMs }, 'server tool timed out');
        finish(err);
      }, entry.timeoutMs);
      call.signal.addEventListener('abort', onAbort, { once: true });
      let pending: Promise<JsonValue> | JsonValue;
      try {
        pending = entry.tool.execute(args as Record<string, JsonValue>, {
          signal: abort.signal,
          taskId: call.taskId,
          callId: call.callId,
          attempt: call.attempt,
          logger: this.logger,
        });
      } catch (err) {
        finish(thrown(err));
        return;
      }
      // A tool that ignores its signal may still settle after its timeout (or the call's end): the call was already
      // answered, so that late result is dropped (logged), never a second outcome.
      const late = (): boolean => {
        if (!done) return false;
        this.logger.warn(
          log,
          'server tool finished after its call ended (timeout or abort); its result is dropped',
        );
        return true;
      };
      Promise.resolve(pending).then(
        (value) => {
          if (!late()) finish(resultOutcome(call.command, value));
        },
        (err: unknown) => {
          if (!late()) finish(thrown(err));
        },
      );
    });
  }
}

function timeoutMs(seconds: unknown, what: string): number {
  if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds <= 0 || seconds > 86_400) {
    throw invalid(`${what} must be a number of seconds in (0, 86400], got ${String(seconds)}`);
  }
  return Math.max(1, Math.round(seconds * 1000));
}

function invalid(message: string): EngineError {
  return new EngineError('invalid_input', message);
}

function failure(code: string, message: string): CommandOutcome {
  return { ok: false, error: { code, message } };
}

function thrown(err: unknown): CommandOutcome {
  const code = (err as { code?: unknown } | null)?.code;
  return failure(
    typeof code === 'string' && code !== '' ? code : 'tool_error',
    err instanceof Error ? err.message : String(err),
  );
}

/** The tool's return value as an outcome: JSON (undefined → null), at most {@link MAX_SERVER_TOOL_RESULT_BYTES}. */
function resultOutcome(name: string, value: unknown): CommandOutcome {
  let text: string | undefined;
  try {
    text = JSON.stringify(value === undefined ? null : value);
  } catch (err) {
    return failure(
      'invalid_result',
      `server tool "${name}" returned a value that is not JSON: ${String(err)}`,
    );
  }
  if (text === undefined)
    return failure('invalid_result', `server tool "${name}" returned a value that is not JSON`);
  if (Buffer.byteLength(text) > MAX_SERVER_TOOL_RESULT_BYTES) {
    return failure(
      'result_too_large',
      `server tool "${name}" returned ${Buffer.byteLength(text)} bytes; at most ${MAX_SERVER_TOOL_RESULT_BYTES}`,
    );
  }
  // The JSON text read back: what is stored is exactly what the model is shown (no Dates, Maps or class instances).
  return { ok: true, result: JSON.parse(text) as JsonValue };
}

function describeErrors(errors: ErrorObject[] | null | undefined): string {
  if (!errors || errors.length === 0) return 'invalid';
  return errors
    .slice(0, 5)
    .map((e) => {
      const at = e.instancePath === '' ? '$' : `$${e.instancePath.replace(/\//g, '.')}`;
      const extra =
        e.keyword === 'enum' && Array.isArray((e.params as { allowedValues?: unknown }).allowedValues)
          ? ` (${(e.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)).join(', ')})`
          : e.keyword === 'additionalProperties'
            ? ` ("${String((e.params as { additionalProperty?: unknown }).additionalProperty)}")`
            : '';
      return `${at} ${e.message ?? 'is invalid'}${extra}`;
    })
    .join('; ');
}
