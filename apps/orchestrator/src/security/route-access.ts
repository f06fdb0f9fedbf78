/**
 * Who may call an HTTP route: the access levels a route declares on the route table (http/routes/index.ts), and the
 * rules of each, as pure functions of the caller and the one parsed request. The access check in front of a route
 * (http-access.ts) and the routes that serve a role only its own data (the task list, a task and its steps, cancel
 * and answer) both decide with these functions, on the same parsed values, so they cannot read a request
 * differently.
 */
import { mayAccessTask, mayCreateTaskFor, type Task } from '@ccagent/engine';
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
 * - `task_act`: the task named by the path's `id`: operators, and a computer key for its own task;
 * - `task_create`: operators, and a computer key for itself or a computer of its group (`server.groups`): the route
 *   decides on the parsed body's `client_id` with {@link mayCreateOver}, right before it creates.
 *
 * With `server.groups`, a computer's own tasks include those of the computers of its group (the `peer` test of
 * {@link AccessTarget}): it reads, lists, cancels and answers them as its own.
 */
export type RouteAccess =
  | 'public'
  | 'pairing'
  | 'operator'
  | 'view'
  | 'read'
  | 'task_list'
  | 'task_read'
  | 'task_act'
  | 'task_create';

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
  'task_create',
];

/** Whether another client is a computer of the caller's group (`server.groups`); absent: no group applies. */
export type PeerTest = (otherClientId: string) => boolean;

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
  /** The computers of the caller's group (a computer caller on a server with `server.groups`). */
  peer?: PeerTest | undefined;
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
      if (only === undefined || mayListClient(who, target.listsClient, target.peer)) return { ok: true };
      return refuse(`a computer lists its own tasks (or its group's): add ?client=${only}`);
    }
    case 'task_create':
      // A computer: the route checks the body's client id (its own or its group's) before it creates.
      return who.role === 'computer' ? { ok: true } : refuse('a viewer key is read-only');
    case 'task_read':
    case 'task_act': {
      if (who.role === 'viewer')
        return access === 'task_read' ? { ok: true } : refuse('a viewer key is read-only');
      // A computer: its own task (any to read with observe_others); an unknown id is the route's 404.
      if (target.task === undefined) return { ok: true };
      return mayUseTask(who, target.task, access === 'task_read' ? 'read' : 'act', target.peer)
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
 * Whether a computer `who`, limited to listing its own tasks, may list those of `client`: its own, or (with `peer`) a
 * computer of its group's.
 */
export function mayListClient(who: Principal, client: string | undefined, peer?: PeerTest): boolean {
  const own = who.clientId ?? '';
  if (client === undefined) return false;
  return client === own || (client !== '' && peer?.(client) === true);
}

/**
 * Whether `who` may read (`read`) or act on (`act`: cancel, answer) `task` over HTTP: operators everything, viewers
 * read, a computer its own tasks and (with `peer`) those of its group (read any with `observe_others`) — the engine's
 * rule without `crossClientAccess`, which widens a computer's reach on the WebSocket only. No caller (a server without
 * a token) is the operator.
 */
export function mayUseTask(
  who: Principal | undefined,
  task: Task,
  intent: 'read' | 'act',
  peer?: PeerTest,
): boolean {
  if (who === undefined || who.role === 'operator') return true;
  if (who.role === 'viewer') return intent === 'read';
  return mayAccessTask(task, who.clientId ?? '', intent, {
    observeOthers: observesOthers(who),
    ...(peer ? { peer } : {}),
  });
}

/**
 * Whether `who` may create a task bound to `clientId` over HTTP: operators any (or none), a computer one for itself or
 * (with `peer`) for a computer of its group — the WebSocket's `create_task` rule without `crossClientAccess` — and
 * only of a kind its key allows. A computer must name the computer: a task for any computer is an operator's.
 */
export function mayCreateOver(
  who: Principal | undefined,
  clientId: string | null,
  kind: string,
  peer?: PeerTest,
): AccessDecision {
  if (who === undefined || who.role === 'operator') return { ok: true };
  if (who.role !== 'computer') return { ok: false, reason: 'a viewer key is read-only' };
  const own = who.clientId ?? '';
  if (clientId === null)
    return {
      ok: false,
      reason: `a computer names the computer its task is for (client_id "${own}" or one of its group)`,
    };
  if (!mayCreateTaskFor(own, clientId, peer ? { peer } : {})) {
    return {
      ok: false,
      reason: peer
        ? `a computer creates tasks for itself ("${own}") or a computer of its group; "${clientId}" is not in one with it`
        : `a computer creates tasks for itself ("${own}") only`,
    };
  }
  const kinds = who.grants.kinds;
  if (kinds !== undefined && !kinds.includes(kind))
    return { ok: false, reason: `this computer may not create tasks of kind "${kind}"` };
  return { ok: true };
}

/** The message of a 403 for `who`: the reason and who was refused. */
export function refusalMessage(who: Principal, reason: string): string {
  return `${reason} (${who.role} ${who.actor})`;
}

function observesOthers(who: Principal): boolean {
  return who.role === 'computer' && who.grants.observeOthers === true;
}
