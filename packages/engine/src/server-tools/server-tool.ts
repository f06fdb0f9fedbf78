/**
 * What a server-side tool is: a tool that runs inside the host process (the orchestrator, or any application
 * embedding the engine) rather than on a remote computer — a name, a description, JSON-Schema parameters (types,
 * defaults, enums), an async `execute` and a timeout in seconds, as seed 004 defines a tool.
 */
import type { Logger } from '../ports.js';
import type { JsonValue } from '../types.js';

/** JSON Schema of a tool's parameters: an object schema (`properties`, `required`, `default`s and `enum`s inside). */
export interface ServerToolParameters {
  type: 'object';
  properties?: Record<string, JsonValue>;
  required?: string[];
  additionalProperties?: boolean | JsonValue;
  [keyword: string]: JsonValue | undefined;
}

/** What a tool's `execute` gets besides its arguments. */
export interface ServerToolContext {
  /**
   * Aborted when the call ends without this execution's result: the tool's timeout, the task cancelled or failed,
   * the engine stopping. A tool doing slow work should pass it on (to `fetch`, a child process) or check it.
   */
  signal: AbortSignal;
  taskId: string;
  callId: string;
  /** 1 on the first run of this call; more when it runs again after a restart (a crash mid-call runs it again). */
  attempt: number;
  logger: Logger;
}

/**
 * A server-side tool. `execute` receives the arguments already validated against `parameters`, with the schema's
 * defaults filled in, and returns (or resolves with) the JSON result the model is shown; throwing reports a failed
 * call (`code` of the thrown error when it has a string one, else `tool_error`).
 */
export interface ServerTool<Args extends Record<string, JsonValue> = Record<string, JsonValue>> {
  /** Unique among the server's tools and the computers' commands: letters, digits, `_` and `-`, starting with a letter. */
  name: string;
  /** What the tool does, for the model. */
  description: string;
  parameters: ServerToolParameters;
  /** Longest run of one call, in seconds (fractions allowed); default the registry's (30 s). */
  timeoutSeconds?: number;
  execute(args: Args, ctx: ServerToolContext): Promise<JsonValue> | JsonValue;
}

/** Identity: a tool with its argument type checked (`defineServerTool<{ city: string }>({ … })`). */
export function defineServerTool<Args extends Record<string, JsonValue> = Record<string, JsonValue>>(
  tool: ServerTool<Args>,
): ServerTool {
  return tool as unknown as ServerTool;
}
