import type {
  CommandDescriptor,
  CommandOutcome,
  JsonValue,
  ToolCallRequest,
  ToolExecutor,
} from '@ccagent/engine';
import { z } from 'zod';
import { DEFAULT_ACTION_TIMEOUT_MS } from '../protocol/constants.js';
import { ActionSchema, InstanceIdSchema } from '../protocol/messages.js';
import type { MinecraftEndpoint } from './mc-endpoint.js';

/** The engine command a `minecraft_agent` task's actions are issued as. */
export const MC_ACTION_COMMAND = 'minecraft_action';

/** Arguments of {@link MC_ACTION_COMMAND}: which instance runs which action (with its stable id). */
export const McActionArgsSchema = z.object({ instanceId: InstanceIdSchema, action: ActionSchema });

/**
 * The engine's `ToolExecutor` for Minecraft actions: `minecraft_action {instanceId, action}` → `execute_action` on the
 * mod endpoint → the action's outcome. A re-dispatch after a restart sends the same action id again; the mod reports
 * the earlier outcome instead of running it twice.
 */
export class MinecraftActionExecutor implements ToolExecutor {
  /**
   * `refusal(instanceId, type)`: why an action type may not run on an instance (its allow/deny list), checked here,
   * the last point before the mod; a refused action fails with `action_refused` and is never sent.
   */
  constructor(
    private readonly endpoint: MinecraftEndpoint,
    private readonly refusal: (instanceId: string, type: string) => string | null = () => null,
  ) {}

  /** True for the commands this executor handles (a composition root routes by it). */
  handles(command: string): boolean {
    return command === MC_ACTION_COMMAND;
  }

  async execute(call: ToolCallRequest): Promise<CommandOutcome> {
    const args = McActionArgsSchema.safeParse(call.args);
    if (!args.success) {
      return {
        ok: false,
        error: {
          code: 'invalid_args',
          message: `minecraft_action: ${args.error.issues[0]?.message ?? 'invalid'}`,
        },
      };
    }
    const refused = this.refusal(args.data.instanceId, args.data.action.type);
    if (refused !== null) {
      this.endpoint.noteRefused(args.data.instanceId, args.data.action, refused, call.taskId);
      return { ok: false, error: { code: 'action_refused', message: refused } };
    }
    const o = await this.endpoint.executeAction(args.data.instanceId, args.data.action, {
      signal: call.signal,
      taskId: call.taskId,
    });
    return o.ok
      ? { ok: true, result: (o.result ?? null) as JsonValue }
      : { ok: false, error: { code: o.code, message: o.error } };
  }

  listCommands(): CommandDescriptor[] {
    return [
      {
        name: MC_ACTION_COMMAND,
        description: 'Run one Minecraft action on a mod instance',
        timeoutMs: DEFAULT_ACTION_TIMEOUT_MS,
      },
    ];
  }
}
