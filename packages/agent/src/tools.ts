import { z } from 'zod';
import type { Result } from './agent-error.js';
import type { Directive, RunSpec } from './directive-parser.js';

/** Names of the executor's tools. */
export type AgentToolName = 'cc_write_and_run' | 'cc_write' | 'cc_run_program' | 'cc_shell' | 'ask_user';

/** Every executor tool, in catalog order. */
export const AGENT_TOOL_NAMES: readonly AgentToolName[] = [
  'cc_write_and_run',
  'cc_write',
  'cc_run_program',
  'cc_shell',
  'ask_user',
];

const path = z.string().trim().min(1, 'path must not be empty');
// Exactly an array of strings: `"args": "add milk"` or `[1]` are normalised, and logged, by the executor-reply
// validation before this schema sees them (validateExecutorOutput), never silently.
const args = z
  .array(z.string(), { error: 'args must be an array of strings, e.g. ["add", "Buy milk"]' })
  .default([]);
const run = z.object({ path, args });

/** zod schema of each tool's parameters (validation happens after the executor object itself is valid). */
export const TOOL_PARAMETERS = {
  cc_write_and_run: z.object({ path, content: z.string(), runs: z.array(run).min(1).max(8) }),
  cc_write: z.object({ path, content: z.string() }),
  cc_run_program: z.object({ path, args }),
  cc_shell: z.object({ command: z.string().trim().min(1, 'command must not be empty') }),
  ask_user: z.object({ question: z.string().trim().min(1), why: z.string().default('') }),
} as const;

/** Parameters of a tool, after validation. */
export type ToolParameters<T extends AgentToolName> = z.infer<(typeof TOOL_PARAMETERS)[T]>;

/** A validated executor tool call. */
export type AgentToolCall = {
  [T in AgentToolName]: { tool: T; parameters: ToolParameters<T> };
}[AgentToolName];

const DESCRIPTIONS: Record<AgentToolName, string> = {
  cc_write_and_run:
    'Write a whole file, then run programs. parameters: {"path": string, "content": string, "runs": [{"path": string, "args": string[]}]}',
  cc_write: 'Write a whole file. parameters: {"path": string, "content": string}',
  cc_run_program: 'Run a program with arguments. parameters: {"path": string, "args": string[]}',
  cc_shell: 'Run a CraftOS shell command line. parameters: {"command": string}',
  ask_user:
    'Ask the user one question (only for an ASK_USER directive). parameters: {"question": string, "why": string}',
};

/** The CC core commands each tool needs. */
export const TOOL_COMMANDS: Record<AgentToolName, readonly string[]> = {
  cc_write_and_run: ['fs_write', 'run_program'],
  cc_write: ['fs_write'],
  cc_run_program: ['run_program'],
  cc_shell: ['shell_exec'],
  ask_user: [],
};

/** One-line description of a tool for the executor prompt. */
export function describeTool(name: AgentToolName): string {
  return `- ${name}: ${DESCRIPTIONS[name]}`;
}

/** Tools whose commands are all in `commands` (ask_user needs none and is always offered). */
export function toolsFor(commands: readonly string[]): AgentToolName[] {
  return AGENT_TOOL_NAMES.filter((t) => TOOL_COMMANDS[t].every((c) => commands.includes(c)));
}

/**
 * Tools an executor reply may use for a directive of this kind: WRITE_FILE → cc_write / cc_write_and_run, RUN →
 * cc_run_program, SHELL → cc_shell, ASK_USER → ask_user, DONE → none (a `final` object). A reply without a directive
 * never reaches the executor (the planner gets it back), so there is no "any tool" case.
 */
export function toolsForDirective(kind: Directive['kind']): readonly AgentToolName[] {
  switch (kind) {
    case 'WRITE_FILE':
      return ['cc_write_and_run', 'cc_write'];
    case 'RUN':
      return ['cc_run_program'];
    case 'SHELL':
      return ['cc_shell'];
    case 'ASK_USER':
      return ['ask_user'];
    case 'DONE':
      return [];
  }
}

/** A CC core command invocation (what the engine dispatches as a `tool_call` decision). */
export interface CommandCall {
  command: string;
  args: Record<string, unknown>;
}

/** What a validated tool call turns into: commands to run in order, or a question for the user. */
export type ToolPlan =
  { kind: 'commands'; calls: CommandCall[] } | { kind: 'ask'; question: string; why: string };

/** Command call of one program run. */
export function runCall(r: RunSpec): CommandCall {
  return { command: 'run_program', args: { path: r.path, args: r.args } };
}

/** Translate a validated tool call into CC core commands (fs_write {path, content}, run_program, shell_exec). */
export function planToolCall(call: AgentToolCall): ToolPlan {
  switch (call.tool) {
    case 'cc_write':
      return { kind: 'commands', calls: [{ command: 'fs_write', args: { ...call.parameters } }] };
    case 'cc_write_and_run':
      return {
        kind: 'commands',
        calls: [
          { command: 'fs_write', args: { path: call.parameters.path, content: call.parameters.content } },
          ...call.parameters.runs.map(runCall),
        ],
      };
    case 'cc_run_program':
      return { kind: 'commands', calls: [runCall(call.parameters)] };
    case 'cc_shell':
      return {
        kind: 'commands',
        calls: [{ command: 'shell_exec', args: { command: call.parameters.command } }],
      };
    case 'ask_user':
      return { kind: 'ask', question: call.parameters.question, why: call.parameters.why };
  }
}

/** Why a command may not run: not in the task's allowed_commands, or no connected client/executor provides it. */
export interface CommandCheckError {
  code: 'not_allowed' | 'not_available';
  command: string;
  message: string;
}

/**
 * Check every call of a plan against the task's allowed commands (an empty list allows any, as in the engine) and
 * the commands currently available to the task.
 */
export function checkCommands(
  calls: readonly CommandCall[],
  allowed: readonly string[],
  available: readonly string[],
): Result<void, CommandCheckError> {
  for (const c of calls) {
    if (allowed.length > 0 && !allowed.includes(c.command)) {
      return {
        ok: false,
        error: {
          code: 'not_allowed',
          command: c.command,
          message: `The command ${c.command} is not allowed for this task (allowed: ${allowed.join(', ') || 'none'}).`,
        },
      };
    }
    if (!available.includes(c.command)) {
      return {
        ok: false,
        error: {
          code: 'not_available',
          command: c.command,
          message: `No connected computer provides ${c.command} right now (available: ${available.join(', ') || 'none'}).`,
        },
      };
    }
  }
  return { ok: true, value: undefined };
}

/**
 * Deterministic translation of a directive (the `parser` executor mode): WRITE_FILE with THEN → cc_write_and_run,
 * WRITE_FILE → cc_write, RUN → cc_run_program, SHELL → cc_shell, ASK_USER → ask_user. DONE has no tool (null).
 */
export function directiveToToolCall(d: Directive): AgentToolCall | null {
  switch (d.kind) {
    case 'WRITE_FILE':
      return d.then.length > 0
        ? { tool: 'cc_write_and_run', parameters: { path: d.path, content: d.content, runs: d.then } }
        : { tool: 'cc_write', parameters: { path: d.path, content: d.content } };
    case 'RUN':
      return { tool: 'cc_run_program', parameters: { path: d.path, args: d.args } };
    case 'SHELL':
      return { tool: 'cc_shell', parameters: { command: d.command } };
    case 'ASK_USER':
      return { tool: 'ask_user', parameters: { question: d.question, why: d.why } };
    case 'DONE':
      return null;
  }
}
