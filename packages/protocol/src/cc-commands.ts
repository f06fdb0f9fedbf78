/**
 * The commands every ComputerCraft agent host registers (its "core"), in one home. The orchestrator's default
 * allow-lists, the confirmation rule and the Lua host (`lua-client/src/ccagent/host.lua`, `M.CORE`) all follow these
 * lists; a lua-client test loads the host under a real Lua interpreter and fails when its list differs.
 */

/** The commands a task's model works with: the shell, files, programs. The default task kinds allow these. */
export const CC_TASK_COMMANDS = [
  'shell_exec',
  'fs_list',
  'fs_read',
  'fs_write',
  'fs_delete',
  'fs_move',
  'run_program',
] as const;

/**
 * The computer's small information commands. (Seed 004's `echo`, `get_time` and `get_system_info` are the
 * orchestrator's server-side tools, `@ccagent/engine`'s built-ins; a computer may not register those names.)
 */
export const CC_INFO_COMMANDS = ['computer_time', 'computer_info'] as const;

/** The commands that manage model-written tools on the computer. */
export const CC_TOOL_COMMANDS = [
  'tool_list',
  'tool_create',
  'tool_test',
  'tool_set_status',
  'tools_reload',
] as const;

/** Every core command, in the order the Lua host lists them; a model-written tool may not take one of these names. */
export const CC_CORE_COMMANDS = [...CC_TASK_COMMANDS, ...CC_INFO_COMMANDS, ...CC_TOOL_COMMANDS] as const;

/** One of {@link CC_CORE_COMMANDS}. */
export type CcCoreCommand = (typeof CC_CORE_COMMANDS)[number];

/** The core commands that change files, and the argument names holding the paths they change. */
export const CC_FILE_CHANGE_ARGS: Readonly<Record<string, readonly string[]>> = {
  fs_write: ['path'],
  fs_delete: ['path'],
  fs_move: ['from', 'to'],
};
