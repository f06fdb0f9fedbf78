/**
 * What the task operations keep in a task's `metadata`, and the rules that read it: the client that created the task
 * (it gets the task's events and may act on it), the request id it was created with, the per-task settings as the
 * request gave them, and the budgets of one run (given again when the task is continued or retried). Also who may see
 * or act on a task, which is decided from the task's client and creator.
 */
import type { TaskSettings } from '@ccagent/protocol';
import type { RunBudgets } from './task-kinds.js';
import type { JsonValue, Task, TaskBudgets } from './types.js';

/** Metadata keys written by `TaskOperations.create` (stable: they are on disk). */
export const TASK_METADATA_KEYS = {
  /** The client that created the task over a connection of its own (it receives the task's events). */
  creator: 'creator_client_id',
  /** The `request_id` the task was created with (idempotency of creation). */
  requestId: 'request_id',
  /** The per-task settings, as the request gave them (omitted fields come from the kind). */
  settings: 'settings',
  /** The budgets of one run ({@link RunBudgets}). */
  runBudgets: 'run_budgets',
  /** The name the player gave the task (an in-game trigger may address a running agent by it). */
  name: 'name',
} as const;

/** The name `task` was given at creation, if any. */
export function taskName(task: Task): string | undefined {
  const name = task.metadata[TASK_METADATA_KEYS.name];
  return typeof name === 'string' ? name : undefined;
}

/** What {@link resolveAgent} found: the one task, or why there is none. */
export type AgentResolution =
  | { ok: true; task: Task }
  | { ok: false; code: 'not_found' | 'ambiguous'; message: string; candidates: string[] };

/**
 * The running task an in-game trigger means by `agent`: among `live` (the tasks that have not ended, already narrowed
 * to those the sender may act on), the one named `agent`; when none is, the one whose id is `agent` (a triggers file
 * written with the task id). Two or more with that name are ambiguous: nothing is chosen, and the message lists them.
 */
export function resolveAgent(live: readonly Task[], agent: string): AgentResolution {
  const named = live.filter((t) => taskName(t) === agent);
  if (named.length === 1) return { ok: true, task: named[0] as Task };
  if (named.length > 1) {
    const ids = named.map((t) => t.id).sort();
    return {
      ok: false,
      code: 'ambiguous',
      message: `${ids.length} running tasks are named "${agent}" (${ids.join(', ')}); give each agent its own name, or use the task id`,
      candidates: ids,
    };
  }
  const byId = live.find((t) => t.id === agent);
  if (byId) return { ok: true, task: byId };
  return {
    ok: false,
    code: 'not_found',
    message: `no running task named "${agent}" that this computer may reach (start the agent with that name, or check the spelling)`,
    candidates: [],
  };
}

/** The client that created `task`, if one did. */
export function taskCreator(task: Task): string | undefined {
  const creator = task.metadata[TASK_METADATA_KEYS.creator];
  return typeof creator === 'string' ? creator : undefined;
}

/** The settings stored with a task, if any (as the request gave them; checked at creation). */
export function taskSettings(task: Task): TaskSettings | undefined {
  const s = task.metadata[TASK_METADATA_KEYS.settings];
  return s !== undefined && s !== null && typeof s === 'object' && !Array.isArray(s)
    ? (s as TaskSettings)
    : undefined;
}

/** The run budgets stored with a task (what a continuation or retry gives it again). */
export function storedRunBudgets(task: Task): RunBudgets | undefined {
  const b = task.metadata[TASK_METADATA_KEYS.runBudgets];
  if (b === undefined || b === null || typeof b !== 'object' || Array.isArray(b)) return undefined;
  return b as RunBudgets;
}

/** The budgets of each run of `task`: those stored with it, else (a task created before they were stored) its kind's. */
export function runBudgetsOf(task: Task, kindBudgets: RunBudgets | undefined): RunBudgets {
  return storedRunBudgets(task) ?? kindBudgets ?? {};
}

/** `RunBudgets` as JSON for the task's metadata. */
export function runBudgetsJson(run: RunBudgets): JsonValue {
  return { ...run };
}

/** The engine budgets of a run starting at `now` (epoch ms) with `counters` already used. */
export function budgetsFrom(
  run: RunBudgets,
  counters: { steps: number; toolCalls: number },
  now: number,
): TaskBudgets {
  const out: TaskBudgets = {};
  if (run.maxSteps !== undefined) out.maxSteps = counters.steps + run.maxSteps;
  if (run.maxToolCalls !== undefined) out.maxToolCalls = counters.toolCalls + run.maxToolCalls;
  if (run.deadlineMs !== undefined) out.deadlineAt = now + run.deadlineMs;
  return out;
}

/** Whether `task` is `clientId`'s own: bound to it, or created by it. */
export function isOwnTask(task: Task, clientId: string): boolean {
  return task.clientId === clientId || taskCreator(task) === clientId;
}

/** What, beyond its own tasks, a client may reach (see {@link mayAccessTask}). */
export interface TaskAccessRights {
  /** Any client may see and act on any task. */
  crossClientAccess?: boolean;
  /** This client may see (never act on) any task. */
  observeOthers?: boolean;
  /**
   * Whether another client is in this client's group (a player's computers, see the orchestrator's `server.groups`):
   * it may create tasks for that client and see and act on the tasks bound to or created by it.
   */
  peer?: (otherClientId: string) => boolean;
}

/**
 * Whether `clientId` may see (`read`) or act on (`act`: cancel, answer, message …) `task`: its own always; any task
 * with `crossClientAccess`; any task read-only with `observeOthers`.
 */
export function mayAccessTask(
  task: Task,
  clientId: string,
  intent: 'read' | 'act',
  rights: TaskAccessRights = {},
): boolean {
  if (rights.crossClientAccess === true || isOwnTask(task, clientId)) return true;
  if (rights.peer !== undefined) {
    const creator = taskCreator(task);
    const bound = task.clientId;
    if (bound !== null && rights.peer(bound)) return true;
    if (creator !== undefined && rights.peer(creator)) return true;
  }
  return intent === 'read' && rights.observeOthers === true;
}

/**
 * Whether `creator` may create a task bound to `clientId`: its own, any client's with `crossClientAccess`, and a
 * client of its group (`peer`).
 */
export function mayCreateTaskFor(creator: string, clientId: string, rights: TaskAccessRights = {}): boolean {
  return clientId === creator || rights.crossClientAccess === true || rights.peer?.(clientId) === true;
}
