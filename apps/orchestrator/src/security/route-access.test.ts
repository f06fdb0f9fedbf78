import type { Task } from '@ccagent/engine';
import { describe, expect, it } from 'vitest';
import {
  decideAccess,
  mayCreateOver,
  mayListClient,
  ROUTE_ACCESS,
  taskListClient,
  type RouteAccess,
} from './route-access.js';
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
  task_create: '+-++', // a computer: the route decides on the body's client id (mayCreateOver, below)
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

describe('a computer and its group over HTTP (server.groups)', () => {
  const base = new Set(['pc-b', 'pc-a']);
  const peer = (other: string): boolean => base.has(other) && other !== 'pc-b';

  it('reads, lists and acts on the tasks of a computer of its group as its own, never an outsider’s', () => {
    expect(decideAccess('task_read', pcB, { task: taskOf('pc-a'), peer }).ok).toBe(true);
    expect(decideAccess('task_act', pcB, { task: taskOf('pc-a'), peer }).ok).toBe(true);
    expect(decideAccess('task_list', pcB, { listsClient: 'pc-a', peer }).ok).toBe(true);
    expect(decideAccess('task_read', pcB, { task: taskOf('stranger'), peer }).ok).toBe(false);
    expect(decideAccess('task_act', pcB, { task: taskOf('stranger'), peer }).ok).toBe(false);
    expect(decideAccess('task_list', pcB, { listsClient: 'stranger', peer }).ok).toBe(false);
    expect(decideAccess('task_list', pcB, { peer }).ok).toBe(false);
    expect(mayListClient(pcB, '', peer)).toBe(false);
  });

  it('creates for itself or a computer of its group, of a kind its key allows; never for an outsider or for any computer', () => {
    expect(mayCreateOver(pcB, 'pc-b', 'job').ok).toBe(true);
    expect(mayCreateOver(pcB, 'pc-a', 'job').ok).toBe(false);
    expect(mayCreateOver(pcB, 'pc-a', 'job', peer).ok).toBe(true);
    const outsider = mayCreateOver(pcB, 'stranger', 'job', peer);
    expect(outsider).toMatchObject({ ok: false, reason: expect.stringMatching(/not in one with it/) });
    expect(mayCreateOver(pcB, null, 'job', peer).ok).toBe(false);
    const limited = p('computer', { clientId: 'pc-b', grants: { kinds: ['farm'] } });
    expect(mayCreateOver(limited, 'pc-a', 'job', peer)).toMatchObject({ ok: false });
    expect(mayCreateOver(limited, 'pc-a', 'farm', peer).ok).toBe(true);
    expect(mayCreateOver(viewer, null, 'job').ok).toBe(false);
    expect(mayCreateOver(operator, null, 'job').ok).toBe(true);
    expect(mayCreateOver(undefined, null, 'job').ok).toBe(true);
  });
});
