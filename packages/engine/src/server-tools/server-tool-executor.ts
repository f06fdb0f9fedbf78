/**
 * Server-side tools beside the computers' commands: a {@link ToolExecutor} that offers a registry's tools together
 * with another executor's commands and runs a call of a server tool in this process, everything else through the
 * other executor. The last checks before a server tool runs are here: the task's allow-list and, when given, the
 * confirmation of a destructive call.
 */
import type { Logger, ToolCallRequest, ToolExecutor } from '../ports.js';
import type { CommandDescriptor, CommandOutcome } from '../types.js';
import type { ServerToolRegistry } from './server-tool-registry.js';

/** Options of {@link withServerTools}. */
export interface ServerToolExecutorOptions {
  /**
   * The last check of a destructive call (the orchestrator's `confirmationCheck`): a call it refuses fails with
   * `confirmation_required` and the tool never runs.
   */
  confirmation?: (call: ToolCallRequest) => Promise<string | undefined>;
  logger?: Logger;
}

/**
 * An executor offering `registry`'s tools and `inner`'s commands together. `listCommands` lists the server tools
 * first, then the other commands (a computer command named like a server tool is not offered: the server tool is
 * what runs). `execute` runs a server tool's call here — refused with `not_allowed` when the task's allow-list
 * (`call.allowedCommands`) does not name it, checked at this last point before it runs — and hands every other call
 * to `inner`; without `inner`, those calls wait for a result submitted to the engine (`call.recorded`).
 *
 * Registering a server tool whose name a command of `inner` already has (`inner.listCommands(null)`) is refused from
 * now on with `EngineError('tool_exists')`; the other direction (a computer registering a server tool's name) is the
 * host's to refuse when the computer registers.
 */
export function withServerTools(
  inner: ToolExecutor | undefined,
  registry: ServerToolRegistry,
  opts: ServerToolExecutorOptions = {},
): ToolExecutor {
  const listInner = inner?.listCommands?.bind(inner);
  if (listInner) {
    registry.addNameCheck((name) =>
      listInner(null).some((c) => c.name === name) ? `a computer's command "${name}"` : undefined,
    );
  }
  return {
    listCommands(clientId: string | null): CommandDescriptor[] {
      const own = registry.descriptors();
      if (!listInner) return own;
      return [...own, ...listInner(clientId).filter((c) => !registry.has(c.name))];
    },
    execute(call: ToolCallRequest): Promise<CommandOutcome> {
      if (!registry.has(call.command)) {
        return inner ? inner.execute(call) : submittedOutcome(call);
      }
      return runServerTool(registry, call, opts);
    },
  };
}

/** Without another executor: the outcome a host submits to the engine, or `aborted` when the call ends first. */
function submittedOutcome(call: ToolCallRequest): Promise<CommandOutcome> {
  return new Promise<CommandOutcome>((resolve) => {
    void call.recorded?.then(resolve);
    const aborted = (): void => resolve({ ok: false, error: { code: 'aborted', message: 'call aborted' } });
    if (call.signal.aborted) aborted();
    else call.signal.addEventListener('abort', aborted, { once: true });
  });
}

async function runServerTool(
  registry: ServerToolRegistry,
  call: ToolCallRequest,
  opts: ServerToolExecutorOptions,
): Promise<CommandOutcome> {
  const allowed = call.allowedCommands;
  if (allowed !== undefined && allowed.length > 0 && !allowed.includes(call.command)) {
    opts.logger?.warn(
      { task_id: call.taskId, call_id: call.callId, tool: call.command },
      'server tool call not allowed for its task; not run',
    );
    return {
      ok: false,
      error: {
        code: 'not_allowed',
        message: `"${call.command}" is not allowed for this task; allowed: ${allowed.join(', ')}`,
      },
    };
  }
  if (opts.confirmation) {
    let refused: string | undefined;
    try {
      refused = await opts.confirmation(call);
    } catch {
      refused = `could not check the confirmation of "${call.command}"; not run`;
    }
    if (refused !== undefined)
      return { ok: false, error: { code: 'confirmation_required', message: refused } };
  }
  return registry.run({
    command: call.command,
    args: call.args,
    taskId: call.taskId,
    callId: call.callId,
    attempt: call.attempt,
    signal: call.signal,
  });
}
