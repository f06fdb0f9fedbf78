/**
 * Who may call an HTTP route: the access levels a route declares on the route table (http/routes/index.ts), and the
 * rules of each, as pure functions of the caller and the one parsed request. The access check in front of a route
 * (http-access.ts) and the routes that serve a role only its own data (the task list, a task and its steps, cancel
 * and answer) both decide with these functions, on the same parsed values, so they cannot read a request
 * differently.
 */
import { mayAccessTask, type Task } from '@ccagent/engine';
import type { Principal } from '@ccagent/security';

/**
 * The access a route declares (who may call it):
 * - `public`: anyone, no credential is read (pages, assets, `/health`, the Lua bundle: nothing secret);
 * - `pairing`: anyone without a key; the enrollment code or pairing secret in the body is the credential, which the
 *   route checks (rate-limited per source);
 * - `operator`: operator keys and the shared token only;
 * - `view`: operators and viewer keys;
 * - `read`: operators, viewers, and computer keys granted `observe_others`;
 * - `task_list`: as `read`, and a computer key listing its own client's tasks (`?client=` its id);
 * - `task_read`: the task named by the path's `id`: operators, viewers, and a computer key for its own task (any
 *   task with `observe_others`);
 * - `task_act`: the task named by the path's `id`: operators, and a computer key for its own task.
 */
export type RouteAccess =
  'public' | 'pairing' | 'operator' | 'view' | 'read' | 'task_list' | 'task_read' | 'task_act';

/** Every access level, in the order of the list above. */
export const ROUTE_ACCESS: readonly RouteAccess[] = [
  'public',
  'pairing',
  'operator',
  'view',
  'read',
  'task_list',
  'task_read',
  'task_act',
];

/** Whether a route of this access reads a credential at all (`public` and `pairing` do not). */
export function needsCredential(access: RouteAccess): boolean {
  return access !== 'public' && access !== 'pairing';
}

/** What a decision looks at besides the caller: the parsed request's task (for task routes) and listed client. */
export interface AccessTarget {
  /** The task the path's `id` names (`task_read`, `task_act`, for a computer); undefined when there is none (404). */
  task?: Task | undefined;
  /** The client a task list is filtered to (its parsed `client` parameter), if any. */
  listsClient?: string | undefined;
}

/** The outcome of {@link decideAccess}: allowed, or refused with why (for a 403). */
export type AccessDecision = { ok: true } | { ok: false; reason: string };

/**
 * Whether `who` may call a route declared `access` with this target. `public` and `pairing` routes are never
 * decided here (they have no caller). A task route whose task does not exist is allowed: its route answers 404.
 */
export function decideAccess(access: RouteAccess, who: Principal, target: AccessTarget = {}): AccessDecision {
  if (access === 'public' || access === 'pairing' || who.role === 'operator') return { ok: true };
  const refuse = (reason: string): AccessDecision => ({ ok: false, reason });
  switch (access) {
    case 'operator':
      return refuse(
        who.role === 'viewer' ? 'a viewer key is read-only' : 'this route is open to operator keys only',
      );
    case 'view':
      return who.role === 'viewer' ? { ok: true } : refuse('this route is not open to computer keys');
    case 'read':
      return who.role === 'viewer' || observesOthers(who)
        ? { ok: true }
        : refuse('a computer key reads this only when granted observe_others');
    case 'task_list': {
      const only = taskListClient(who);
      if (only === undefined || target.listsClient === only) return { ok: true };
      return refuse(`a computer lists its own tasks: add ?client=${only}`);
    }
    case 'task_read':
    case 'task_act': {
      if (who.role === 'viewer')
        return access === 'task_read' ? { ok: true } : refuse('a viewer key is read-only');
      // A computer: its own task (any to read with observe_others); an unknown id is the route's 404.
      if (target.task === undefined) return { ok: true };
      return mayUseTask(who, target.task, access === 'task_read' ? 'read' : 'act')
        ? { ok: true }
        : refuse(`task ${target.task.id} belongs to another client`);
    }
  }
}

/**
 * The one client whose tasks `who` may list, or undefined when it may list every task (operators, viewers, computers
 * granted `observe_others`). The task list filters by it itself, whatever the access check did.
 */
export function taskListClient(who: Principal | undefined): string | undefined {
  if (who === undefined || who.role !== 'computer' || observesOthers(who)) return undefined;
  return who.clientId ?? '';
}

/**
 * Whether `who` may read (`read`) or act on (`act`: cancel, answer) `task` over HTTP: operators everything, viewers
 * read, a computer its own tasks (read any with `observe_others`) — the engine's rule without `crossClientAccess`,
 * which widens a computer's reach on the WebSocket only. No caller (a server without a token) is the operator.
 */
export function mayUseTask(who: Principal | undefined, task: Task, intent: 'read' | 'act'): boolean {
  if (who === undefined || who.role === 'operator') return true;
  if (who.role === 'viewer') return intent === 'read';
  return mayAccessTask(task, who.clientId ?? '', intent, { observeOthers: observesOthers(who) });
}

/** The message of a 403 for `who`: the reason and who was refused. */
export function refusalMessage(who: Principal, reason: string): string {
  return `${reason} (${who.role} ${who.actor})`;
}

function observesOthers(who: Principal): boolean {
  return who.role === 'computer' && who.grants.observeOthers === true;
}
