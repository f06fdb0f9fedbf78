import type { IncomingMessage, ServerResponse } from 'node:http';
import { Readable } from 'node:stream';
import type { Task } from '@ccagent/engine';
import { describe, expect, it } from 'vitest';
import type { Principal } from '@ccagent/security';
import { HttpError } from '../http-kit.js';
import type { HttpApiOptions, RouteRequest } from '../route.js';
import { answerTask, cancelTask, getSteps, getTask, listTasks } from './tasks.js';
import { ROUTES } from './index.js';

/** pc-a's task, as the engine returns it. */
const taskOfA: Task = {
  id: 'task-a',
  kind: 'general_agent',
  status: 'waiting_for_user',
  clientId: 'pc-a',
  prompt: 'what pc-a asked',
  allowedCommands: [],
  memory: null,
  metadata: {},
  budgets: {},
  counters: { steps: 1, toolCalls: 0, questions: 1 },
  createdAt: 1,
  updatedAt: 1,
};

const computerB: Principal = {
  role: 'computer',
  actor: 'cred_b',
  clientId: 'pc-b',
  grants: {},
  source: 'test',
};
const viewer: Principal = { role: 'viewer', actor: 'cred_v', grants: {}, source: 'test' };

/** The HTTP side's dependencies, faked at the ports these routes use; `effects` records what reached them. */
function deps(): { d: HttpApiOptions; effects: string[] } {
  const effects: string[] = [];
  const d = {
    engine: { getTask: (id: string) => Promise.resolve(id === taskOfA.id ? taskOfA : undefined) },
    pages: {
      listTasksPage: (q: { clientId?: string }) => {
        effects.push(`list ${q.clientId ?? 'every client'}`);
        return Promise.resolve({ tasks: q.clientId === 'pc-a' || !q.clientId ? [taskOfA] : [], total: 0 });
      },
    },
    store: {
      getSteps: () => Promise.resolve(effects.push('steps read') && []),
      getHistory: () => Promise.resolve(effects.push('history read') && []),
      listCommandCalls: () => Promise.resolve(effects.push('calls read') && []),
      listQuestions: () => Promise.resolve(effects.push('questions read') && []),
    },
    tasks: {
      cancel: (id: string) => Promise.resolve(effects.push(`cancel ${id}`) && { ok: true, value: taskOfA }),
      answer: (id: string) => Promise.resolve(effects.push(`answer ${id}`) && { ok: true, value: taskOfA }),
    },
  } as unknown as HttpApiOptions;
  return { d, effects };
}

/** A request as the server would have parsed it, for `caller`, with no access check having run. */
function request<Q>(
  caller: Principal | undefined,
  query: Q,
  params: Record<string, string>,
  body = '{}',
): RouteRequest<Q> {
  const sent: unknown[] = [];
  const res = {
    writeHead: () => res,
    end: (text: string) => sent.push(JSON.parse(text)),
  } as unknown as ServerResponse;
  return {
    req: Readable.from([Buffer.from(body)]) as unknown as IncomingMessage,
    res,
    path: '/api/tasks',
    params,
    query,
    caller,
    routes: ROUTES,
  };
}

async function refused(p: Promise<void>): Promise<number | undefined> {
  try {
    await p;
    return undefined;
  } catch (err) {
    return err instanceof HttpError ? err.status : -1;
  }
}

const listQuery = { limit: 50, offset: 0, order: 'newest' as const };

describe('the task routes serve a computer only its own tasks themselves (not trusting that the access check ran)', () => {
  it('lists only the caller’s own client for a computer key, and refuses any other filter or none (guards against the task list trusting a check that read the request differently)', async () => {
    const { d, effects } = deps();
    expect(await refused(listTasks(d, request(computerB, { ...listQuery, client: 'pc-a' }, {})))).toBe(403);
    expect(await refused(listTasks(d, request(computerB, listQuery, {})))).toBe(403);
    expect(effects).toEqual([]);
    expect(
      await refused(listTasks(d, request(computerB, { ...listQuery, client: 'pc-b' }, {}))),
    ).toBeUndefined();
    // A computer granted observe_others, a viewer and an operator list every client.
    const observer: Principal = { ...computerB, grants: { observeOthers: true } };
    expect(await refused(listTasks(d, request(observer, listQuery, {})))).toBeUndefined();
    expect(await refused(listTasks(d, request(viewer, listQuery, {})))).toBeUndefined();
    expect(effects).toEqual(['list pc-b', 'list every client', 'list every client']);
  });

  it('refuses another computer’s task to read, its steps, a cancel and an answer, before anything is read or changed (guards against a route reached with a mis-declared or skipped check)', async () => {
    const { d, effects } = deps();
    const id = { id: 'task-a' };
    expect(await refused(getTask(d, request(computerB, {}, id)))).toBe(403);
    expect(await refused(getSteps(d, request(computerB, {}, id)))).toBe(403);
    expect(await refused(cancelTask(d, request(computerB, {}, id)))).toBe(403);
    expect(await refused(answerTask(d, request(computerB, {}, id, '{"text":"y"}')))).toBe(403);
    // A viewer reads but never acts.
    expect(await refused(cancelTask(d, request(viewer, {}, id)))).toBe(403);
    expect(effects).toEqual([]);
    expect(await refused(getSteps(d, request(viewer, {}, id)))).toBeUndefined();
    // pc-a itself acts on its own task.
    const computerA: Principal = { ...computerB, actor: 'cred_a', clientId: 'pc-a' };
    expect(await refused(cancelTask(d, request(computerA, {}, id)))).toBeUndefined();
    expect(effects).toContain('cancel task-a');
  });
});
