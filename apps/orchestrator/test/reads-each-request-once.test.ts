/**
 * One reading of a request (issue 32, hole 1): the access check and the route must read the same path and query. A
 * sweep sends every route of the HTTP API (`HTTP_ROUTES`), under every role (operator key, viewer key, a computer's
 * own key, a computer granted `observe_others`, a computer mid-pairing that holds only its request's secret, no
 * credential), in every form of its path and query parameters that a reader could take differently: a parameter
 * twice (own value first and the other's second, and the reverse, and with an empty second), its name in another
 * case or percent-encoded, its value percent-encoded, empty or in another case, the task id of the path encoded,
 * in another case, empty, double-encoded or with a dot segment, and parameters a route does not declare.
 *
 * Guards against: a computer reading another computer's task through any form of a request (the check reading
 * the first `client`, the route the last); any role changing what it may not (a viewer anything, a computer
 * another's task) through such a form; a repeated single-valued parameter being accepted instead of a 400 that
 * names it; any form making the server fail (500).
 */
import { request } from 'node:http';
import { HTTP_ROUTES } from '@ccagent/protocol';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { everyKind, strategyOf, type Harness } from './support/harness.js';
import { enroll } from './support/security.js';
import { useHarness } from './support/session.js';

const t = useHarness();
const TOKEN = 'sweep-operator-token';
/** What only pc-a's task contains: a computer other than pc-a must never receive it. */
const SECRET = 'SWEEP-SECRET-OF-PC-A';

/** Every task asks its user a question (with its prompt in it) and waits. */
const asks = everyKind(strategyOf((task) => ({ type: 'ask_user', question: `about: ${task.prompt}` })));

type Role = 'operator' | 'viewer' | 'computer' | 'observer' | 'pairing' | 'none';
const ROLES: readonly Role[] = ['operator', 'viewer', 'computer', 'observer', 'none', 'pairing'];

interface Answer {
  status: number;
  body: string;
  contentType: string;
}

/** A request with the exact path given (fetch would normalise it); an event stream is cut after its headers. */
function raw(
  h: Harness,
  method: string,
  p: string,
  headers: Record<string, string>,
  body?: string,
): Promise<Answer> {
  const u = new URL(h.url);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: u.hostname,
        port: u.port,
        method,
        path: p,
        headers: { ...headers, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      },
      (res) => {
        const contentType = String(res.headers['content-type'] ?? '');
        if (contentType.startsWith('text/event-stream')) {
          // The stream's first records are read (a leak would be in them), then it is cut.
          let text = '';
          const done = (): void => {
            res.destroy();
            resolve({ status: res.statusCode ?? 0, body: text, contentType });
          };
          const timer = setTimeout(done, 150);
          res.on('data', (c: Buffer) => {
            text += c.toString('utf8');
          });
          res.on('error', () => {
            clearTimeout(timer);
            done();
          });
          return;
        }
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8'), contentType }),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** A plausible value of a query parameter (own/other for `client`). */
function sample(key: string, which: 'own' | 'other'): string {
  switch (key) {
    case 'client':
      return which === 'own' ? 'pc-b' : 'pc-a';
    case 'status':
      return 'waiting_for_user';
    case 'q':
      return which === 'own' ? 'pc-b' : SECRET;
    case 'kind':
      return 'general_agent';
    case 'limit':
      return which === 'own' ? '5' : '50';
    case 'offset':
    case 'after_seq':
      return '0';
    case 'order':
      return which === 'own' ? 'newest' : 'oldest';
    case 'steps':
    case 'summary':
      return which === 'own' ? '0' : '1';
    case 'before':
      return '1000';
    case 'task':
      return which === 'own' ? 'own-task' : 'other-task';
    case 'action':
      return 'task.create';
    default:
      return which === 'own' ? 'a' : 'b';
  }
}

const encodeAll = (s: string): string =>
  [...Buffer.from(s, 'utf8')].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join('');

/** One form of a request: the path and query as sent, and whether it repeats a declared parameter. */
interface Form {
  label: string;
  path: string;
  repeats: boolean;
}

/** The declared query parameters of a route (the protocol's schema, plus those of `/api/events`). */
function queryKeys(spec: (typeof HTTP_ROUTES)[number]): string[] {
  if (spec.path === '/api/events') return ['task', 'last_event_id'];
  const shape = (spec.query as z.ZodObject | undefined)?.shape;
  return shape ? Object.keys(shape) : [];
}

/** Every form of `spec`'s request, with `ids` the task ids (the other computer's first) for `:id`. */
function forms(spec: (typeof HTTP_ROUTES)[number], other: string, own: string): Form[] {
  const idValue = spec.path.startsWith('/api/minecraft/instances/') ? 'pc-a' : other;
  const at = (id: string): string =>
    spec.path.replace(':id', id).replace('<path>', id === other ? 'ccagent/json.lua' : id);
  const paths: Array<[string, string]> = [['plain', at(idValue)]];
  if (spec.path.includes(':id') || spec.path.includes('<path>')) {
    const v = spec.path.includes('<path>') ? 'ccagent/json.lua' : idValue;
    paths.push(
      ['id percent-encoded', at(encodeAll(v))],
      ['id in upper case', at(v.toUpperCase())],
      ['id empty', at('')],
      ['id double-encoded', at(encodeAll(v).replace(/%/g, '%25'))],
      ['id with an encoded slash', at(`${own}%2F..%2F${v}`)],
      ['id with a dot segment', at(`${own}/../${v}`)],
    );
    // Its own task, to read (a computer acting on its own task is allowed, and not what this sweep is about).
    if (spec.method === 'GET') paths.push(['own id', at(own)]);
  } else {
    paths.push(
      ['path in upper case', spec.path.toUpperCase()],
      ['path with a trailing slash', `${spec.path}/`],
    );
  }
  const out: Form[] = paths.map(([label, path]) => ({ label, path, repeats: false }));
  const base = at(idValue);
  const keys = queryKeys(spec);
  for (const k of keys) {
    const own1 = sample(k, 'own');
    const oth = sample(k, 'other');
    const q = (label: string, query: string, repeats: boolean): void => {
      out.push({ label: `${k}: ${label}`, path: `${base}?${query}`, repeats });
    };
    q('twice, own value first', `${k}=${encodeURIComponent(own1)}&${k}=${encodeURIComponent(oth)}`, true);
    q('twice, other value first', `${k}=${encodeURIComponent(oth)}&${k}=${encodeURIComponent(own1)}`, true);
    q('twice, the second empty', `${k}=${encodeURIComponent(own1)}&${k}=`, true);
    q(
      'twice, the second name percent-encoded',
      `${k}=${encodeURIComponent(own1)}&${encodeAll(k)}=${encodeURIComponent(oth)}`,
      true,
    );
    q(
      'twice, the second with a plus for a space',
      `${k}=${encodeURIComponent(own1)}&${k}=${encodeURIComponent(oth)}+`,
      true,
    );
    q('name in upper case', `${k.toUpperCase()}=${encodeURIComponent(oth)}`, false);
    q(
      'name in upper case beside the name',
      `${k}=${encodeURIComponent(own1)}&${k.toUpperCase()}=${encodeURIComponent(oth)}`,
      false,
    );
    q('value percent-encoded', `${k}=${encodeAll(oth)}`, false);
    q('value in upper case', `${k}=${encodeURIComponent(oth.toUpperCase())}`, false);
    q('value empty', `${k}=`, false);
    q('name without a value', k, false);
    q('own value', `${k}=${encodeURIComponent(own1)}`, false);
  }
  // Parameters the route does not declare.
  out.push(
    {
      label: 'client twice, whether declared or not',
      path: `${base}?client=pc-b&client=pc-a`,
      repeats: keys.includes('client'),
    },
    {
      label: 'undeclared parameter',
      path: `${base}?${keys.length > 0 ? 'surprise=1' : 'x=1&x=2'}`,
      repeats: false,
    },
  );
  return out;
}

/** A body that would do something if the request were let through (roles that must not act), or one no route takes. */
function bodyFor(spec: (typeof HTTP_ROUTES)[number], role: Role, pairingId: string): string | undefined {
  if (spec.method !== 'POST') return undefined;
  // The operator may do everything: a body every route refuses (400) keeps the sweep from changing anything.
  if (role === 'operator' || spec.path.startsWith('/api/pair')) return JSON.stringify({ sweep: true });
  const bodies: Record<string, unknown> = {
    '/api/tasks': { task_kind: 'general_agent', prompt: 'made by the sweep', client_id: 'pc-a' },
    '/api/tasks/:id/cancel': {},
    '/api/tasks/:id/answer': { text: 'answered by the sweep' },
    '/api/tasks/:id/messages': { text: 'message from the sweep' },
    '/api/tasks/:id/events': { name: 'sweep' },
    '/api/tasks/:id/retry': {},
    '/api/credentials/enroll': { client_id: 'sweep-made' },
    '/api/credentials/revoke': { client_id: 'pc-a' },
    '/api/credentials/rotate': { client_id: 'pc-a' },
    '/api/credentials/keys': { role: 'operator' },
    '/api/credentials/pairings/approve': { id: pairingId },
    '/api/credentials/pairings/deny': { id: pairingId },
    '/api/minecraft/tasks': { instance_id: 'pc-a', prompt: 'made by the sweep' },
    '/api/minecraft/instances/:id/stop': {},
    '/api/minecraft/tasks/:id/retry': {},
  };
  return JSON.stringify(bodies[spec.path] ?? {});
}

describe('one reading of a request', () => {
  it('sweeps every route’s path and query parameters under every role: no form reads another computer’s data, changes what the role may not, is accepted with a repeated parameter, or fails the server', async () => {
    const h = await t.start({ token: TOKEN, strategies: asks, minecraft: true });
    const make = async (role: 'operator' | 'viewer'): Promise<string> =>
      (
        (await (await h.http('/api/credentials/keys', { method: 'POST', json: { role } })).json()) as {
          key: string;
        }
      ).key;
    const operatorKey = await make('operator');
    const viewerKey = await make('viewer');
    const keyA = await enroll(h, 'pc-a');
    const keyB = await enroll(h, 'pc-b');
    const keyWatcher = await enroll(h, 'watcher', { observe_others: true });
    const created = async (clientId: string, prompt: string): Promise<string> => {
      const r = await h.http('/api/tasks', {
        method: 'POST',
        json: { task_kind: 'general_agent', prompt, client_id: clientId },
      });
      expect(r.status).toBe(201);
      return ((await r.json()) as { task: { id: string } }).task.id;
    };
    const taskA = await created('pc-a', `${SECRET}: what pc-a asked`);
    const taskB = await created('pc-b', 'what pc-b asked');
    const waiting = async (id: string): Promise<void> => {
      for (let i = 0; i < 100; i++) {
        const r = await h.http(`/api/tasks/${id}?steps=0`);
        if (((await r.json()) as { task: { status: string } }).task.status === 'waiting_for_user') return;
        await new Promise((res) => setTimeout(res, 20));
      }
      throw new Error(`task ${id} never waited for its user`);
    };
    await waiting(taskA);
    await waiting(taskB);
    const pairing = (await (
      await fetch(`${h.url}/api/pair/request`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ client_id: 'pc-new' }),
      })
    ).json()) as { request_id: string; secret: string };
    // The sweep's wrong bearers throttle the shared token from this address: the checks use a key.
    const snapshot = async (): Promise<unknown> => {
      const get = async (p: string): Promise<unknown> =>
        (await fetch(`${h.url}${p}`, { headers: { authorization: `Bearer ${operatorKey}` } })).json();
      const detail = (id: string) =>
        get(`/api/tasks/${id}`).then((d) => {
          const x = d as { task: Record<string, unknown>; history: unknown[]; questions: unknown[] };
          return { status: x.task.status, history: x.history.length, questions: x.questions };
        });
      return {
        a: await detail(taskA),
        b: await detail(taskB),
        tasks: ((await get('/api/tasks')) as { total: number }).total,
        credentials: (await get('/api/credentials')) as unknown,
        pairings: (
          (await get('/api/credentials/pairings')) as { pairings: Array<{ state: string }> }
        ).pairings.map((p) => p.state),
      };
    };
    const before = await snapshot();

    const headersOf: Record<Role, Record<string, string>> = {
      operator: { authorization: `Bearer ${operatorKey}` },
      viewer: { authorization: `Bearer ${viewerKey}` },
      computer: { authorization: `Bearer ${keyB}` },
      observer: { authorization: `Bearer ${keyWatcher}` },
      none: {},
      // A computer between asking to pair and collecting its key holds only its request's secret.
      pairing: { authorization: `Bearer ${pairing.secret}` },
    };
    const failures: string[] = [];
    let sent = 0;
    for (const role of ROLES) {
      for (const spec of HTTP_ROUTES) {
        for (const f of forms(spec, taskA, taskB)) {
          const a = await raw(
            h,
            spec.method,
            f.path,
            headersOf[role],
            bodyFor(spec, role, pairing.request_id),
          );
          sent++;
          const where = `${role} ${spec.method} ${f.path} (${f.label})`;
          const ok = a.status >= 200 && a.status < 300;
          if (a.status === 500 || a.body.includes('"internal"'))
            failures.push(`${where}: ${a.status} ${a.body}`);
          // A repeated declared parameter is never accepted, and an operator (who may call every route) is told
          // which one (the others may be refused before the query is read).
          if (f.repeats) {
            if (ok) failures.push(`${where}: accepted a repeated parameter (${a.status})`);
            if (role === 'operator' && !(a.status === 400 && a.body.includes('"invalid_query"')))
              failures.push(`${where}: ${a.status} ${a.body} instead of 400 invalid_query`);
          }
          // Only pc-a, operators, viewers and observers may see pc-a's task.
          if (ok && (role === 'computer' || role === 'none' || role === 'pairing')) {
            if (a.body.includes(SECRET) || a.body.includes(taskA))
              failures.push(`${where}: ${a.status} shows pc-a's task: ${a.body.slice(0, 300)}`);
          }
          // Nothing but the operator (and pairing routes' own checks) may change anything.
          if (ok && spec.method === 'POST' && role !== 'operator')
            failures.push(`${where}: a ${role} changed state (${a.status} ${a.body.slice(0, 200)})`);
        }
      }
    }
    console.log(
      `[one reading] ${HTTP_ROUTES.length} routes × ${ROLES.length} roles: ${sent} requests, ${failures.length} failures`,
    );
    expect(sent).toBeGreaterThan(1000);
    expect(failures, failures.slice(0, 40).join('\n')).toEqual([]);
    // And the state after the sweep is the state before it: nothing was cancelled, answered, messaged, created,
    // enrolled, revoked, rotated, approved or denied.
    expect(await snapshot()).toEqual(before);
    expect((await raw(h, 'GET', '/api/tasks?client=pc-a', { authorization: `Bearer ${keyA}` })).status).toBe(
      200,
    );
  });
});
