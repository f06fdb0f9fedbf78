/**
 * Every answer of the server carries the browser defences, not only the dashboard's: `X-Content-Type-Options: nosniff`,
 * `Cross-Origin-Resource-Policy: same-origin` (a page elsewhere cannot load `/metrics` or an API answer as a script
 * or image and so learn that ccagent runs), no framing (`frame-ancestors 'none'`, `X-Frame-Options: DENY`), and
 * `Cache-Control: no-store` on authenticated answers. Swept over every route @ccagent/protocol documents (the same
 * list the route table is checked against), answered, refused (401, 403, 415, 421) or not found, and over the raw
 * answers of refused WebSocket upgrades on both endpoints.
 */
import { request } from 'node:http';
import { HTTP_ROUTES } from '@ccagent/protocol';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { Harness } from './support/harness.js';
import { useHarness } from './support/session.js';

const t = useHarness();
const TOKEN = 'operator-token-h';

/** A concrete path for a documented path pattern. */
const sample = (p: string): string => p.replace(':id', 'task-1').replace('<path>', 'ccagent/json.lua');

type Headers = Record<string, string | string[] | undefined>;

/** The defences every answer must carry (names lower case, as node reports them). */
function missingDefences(headers: Headers): string[] {
  const out: string[] = [];
  if (headers['x-content-type-options'] !== 'nosniff') out.push('x-content-type-options');
  if (headers['cross-origin-resource-policy'] !== 'same-origin') out.push('cross-origin-resource-policy');
  const csp = String(headers['content-security-policy'] ?? '');
  if (!/frame-ancestors 'none'/.test(csp)) out.push('content-security-policy frame-ancestors');
  if (String(headers['x-frame-options']).toUpperCase() !== 'DENY') out.push('x-frame-options');
  return out;
}

/** One raw request (node's client: any Host, no body unless given); resolves at the answer's head. */
function raw(
  h: { url: string },
  method: string,
  p: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<{ status: number; headers: Headers }> {
  const u = new URL(h.url);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, method, path: p, headers, agent: false }, (res) => {
      resolve({ status: res.statusCode ?? 0, headers: res.headers });
      // Event streams never end: read nothing more.
      res.destroy();
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A refused WebSocket upgrade's status and headers (or `open`). */
function upgrade(
  url: string,
  headers: Record<string, string>,
): Promise<{ status: number; headers: Headers } | 'open'> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, { headers });
    ws.on('unexpected-response', (_req, res) => {
      resolve({ status: res.statusCode ?? 0, headers: res.headers });
      res.resume();
      ws.terminate();
    });
    ws.on('open', () => {
      resolve('open');
      ws.close();
    });
    ws.on('error', () => {});
  });
}

const json = { 'content-type': 'application/json' };

describe('headers on every response', () => {
  it('carries nosniff, same-origin CORP and no framing on every documented route, answered or refused, and no-store on every authenticated answer (guards against /metrics or an API answer loading as a script from any page)', async () => {
    const h: Harness = await t.start({ token: TOKEN, minecraft: true });
    // An operator key, not the token: keys are checked even once the wrong keys below have throttled the address.
    const made = await h.http('/api/credentials/keys', { method: 'POST', json: { role: 'operator' } });
    const bearer = { authorization: `Bearer ${((await made.json()) as { key: string }).key}` };
    const seen: string[] = [];
    const problems: string[] = [];
    const check = async (
      what: string,
      method: string,
      p: string,
      headers: Record<string, string>,
      body?: string,
      authenticated = false,
    ): Promise<void> => {
      const r = await raw(h, method, p, headers, body);
      seen.push(`${what} ${method} ${p} ${r.status}`);
      for (const m of missingDefences(r.headers)) problems.push(`${what} ${method} ${p} (${r.status}): ${m}`);
      if (authenticated && r.status < 300 && r.headers['cache-control'] !== 'no-store')
        problems.push(
          `${what} ${method} ${p} (${r.status}): cache-control ${String(r.headers['cache-control'])}`,
        );
    };
    for (const route of HTTP_ROUTES) {
      const p = sample(route.path);
      const body = route.method === 'POST' ? '{}' : undefined;
      const withBody = route.method === 'POST' ? json : {};
      // With the operator token, as the route answers it (200, 201, 400, 404 …).
      await check('operator', route.method, p, { ...bearer, ...withBody }, body, !route.open);
      // Without a credential (401 unless open), with a wrong one, with a foreign Host (421).
      await check('anonymous', route.method, p, withBody, body);
      await check('wrong key', route.method, p, { authorization: 'Bearer nope', ...withBody }, body);
      await check('foreign host', route.method, p, { host: 'evil.example', ...bearer, ...withBody }, body);
      if (route.method === 'POST') {
        // A foreign Origin (403) and a form's type (415).
        await check('foreign origin', 'POST', p, { ...bearer, ...json, origin: 'http://evil.example' }, body);
        await check('text/plain', 'POST', p, { ...bearer, 'content-type': 'text/plain' }, body);
      }
    }
    // Not found, a wrong method, a broken path and a broken body.
    await check('operator', 'GET', '/api/nothing-here', bearer, undefined, true);
    await check('operator', 'GET', '/nothing', bearer);
    await check('operator', 'DELETE', '/api/tasks', bearer);
    await check('operator', 'GET', '/api/tasks/%E0%A4%A', bearer);
    await check('operator', 'POST', '/api/tasks', { ...bearer, ...json }, '{"prompt":');
    expect(problems, seen.join('\n')).toEqual([]);
    // Every documented route was tried at least four ways.
    expect(seen.length).toBeGreaterThanOrEqual(HTTP_ROUTES.length * 4);
    expect(seen.some((s) => s.startsWith('operator GET /metrics 200'))).toBe(true);
  });

  it('carries them on the raw answers of refused WebSocket upgrades, on the CC endpoint and the mod endpoint (guards against answers written past the HTTP listener)', async () => {
    const h = await t.start({ token: TOKEN, minecraft: true });
    const ws = `${h.url.replace(/^http/, 'ws')}`;
    const mc = h.running.report.minecraft;
    if (mc === undefined || !('url' in mc)) throw new Error('the mod endpoint is not running');
    const refusals = [
      await upgrade(`${ws}/ws`, { origin: 'http://evil.example' }),
      await upgrade(`${ws}/ws`, { host: 'evil.example' }),
      await upgrade(`${ws}/not-ws`, {}),
      await upgrade(mc.url, { origin: 'http://evil.example' }),
      await upgrade(mc.url, {}),
    ];
    expect(refusals.map((r) => (r === 'open' ? 'open' : r.status))).toEqual([403, 421, 404, 403, 401]);
    for (const r of refusals) if (r !== 'open') expect(missingDefences(r.headers)).toEqual([]);
    // The mod endpoint's plain HTTP answer (426) too.
    const plain = await raw({ url: mc.url.replace(/^ws/, 'http') }, 'GET', '/');
    expect(plain.status).toBe(426);
    expect(missingDefences(plain.headers)).toEqual([]);
  });
});
