import type { Task } from '@ccagent/engine';
import { describe, expect, it } from 'vitest';
import { decideAccess, ROUTE_ACCESS, taskListClient, type RouteAccess } from './route-access.js';
import type { Principal } from '@ccagent/security';

const p = (role: Principal['role'], extra: Partial<Principal> = {}): Principal => ({
  role,
  actor: `cred_${role}`,
  grants: {},
  source: 'test',
  ...extra,
});
const operator = p('operator');
const viewer = p('viewer');
const pcB = p('computer', { clientId: 'pc-b' });
const watcher = p('computer', { clientId: 'watcher', grants: { observeOthers: true } });
const taskOf = (clientId: string): Task =>
  ({ id: `t-${clientId}`, clientId, metadata: {} }) as unknown as Task;

/** Who may call a route of each access, as the table in route-access.ts says ('+': allowed). */
const EXPECTED: Record<RouteAccess, string> = {
  //            operator viewer computer observer
  public: '++++',
  pairing: '++++',
  operator: '+---',
  view: '++--',
  read: '++-+',
  task_list: '++-+', // a computer without observe_others: its own client only (below)
  task_read: '++-+', // another computer's task (a computer's own: below)
  task_act: '+---', // another computer's task
};

describe('decideAccess', () => {
  it('allows each role exactly what its access level says, for another computer’s task and list (guards against a level that lets a viewer write or a computer reach another’s data)', () => {
    const other = { task: taskOf('pc-a'), listsClient: 'pc-a' };
    for (const access of ROUTE_ACCESS) {
      const got = [operator, viewer, pcB, watcher]
        .map((who) => (decideAccess(access, who, other).ok ? '+' : '-'))
        .join('');
      expect(got, access).toBe(EXPECTED[access]);
    }
  });

  it('lets a computer at its own task and its own list, and never lets a viewer act, even on a task that does not exist', () => {
    expect(decideAccess('task_read', pcB, { task: taskOf('pc-b') }).ok).toBe(true);
    expect(decideAccess('task_act', pcB, { task: taskOf('pc-b') }).ok).toBe(true);
    expect(decideAccess('task_act', watcher, { task: taskOf('pc-a') }).ok).toBe(false);
    expect(decideAccess('task_list', pcB, { listsClient: 'pc-b' }).ok).toBe(true);
    expect(decideAccess('task_list', pcB, {}).ok).toBe(false);
    expect(decideAccess('task_act', viewer, {}).ok).toBe(false);
    expect(taskListClient(pcB)).toBe('pc-b');
    expect([operator, viewer, watcher, undefined].map(taskListClient)).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
  });
});
