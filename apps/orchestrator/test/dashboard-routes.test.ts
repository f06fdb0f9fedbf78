/**
 * The HTTP side of the dashboard, in process: the page's files (CSP, gzip, open without a token), the live event
 * stream (token, per-task filter), the short step form of the timeline, the task read without its log, search, and
 * the feature list.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import type { Decision } from '@ccagent/engine';
import {
  parseHttpEvent,
  TaskStepSummariesResponseSchema,
  TaskWithoutStepsResponseSchema,
} from '@ccagent/protocol';
import { describe, expect, it } from 'vitest';
import { everyKind, eventually, strategyOf, writeThenRun } from './support/harness.js';
import { useHarness } from './support/session.js';

const t = useHarness();
type Json = Record<string, unknown>;
const TOKEN = 'dash-token-123';

function pageDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'cco-page-'));
  mkdirSync(path.join(dir, 'assets'));
  writeFileSync(
    path.join(dir, 'index.html'),
    '<!doctype html><script type="module" src="./assets/app-1.js"></script>',
  );
  writeFileSync(path.join(dir, 'assets', 'app-1.js'), `console.log(${JSON.stringify('x'.repeat(4000))});`);
  return dir;
}

/** Read SSE records from `res` until `n` of the named events arrived. */
async function records(res: Response, until: (r: { event: string; data: Json }[]) => boolean) {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  const out: { event: string; data: Json }[] = [];
  let buf = '';
  while (!until(out)) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += value;
    let i: number;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, i);
      buf = buf.slice(i + 2);
      const event = /^event: (.*)$/m.exec(block)?.[1];
      const data = /^data: (.*)$/m.exec(block)?.[1];
      if (event !== undefined && data !== undefined) out.push({ event, data: JSON.parse(data) as Json });
    }
  }
  await reader.cancel();
  return out;
}

describe('dashboard routes', () => {
  it('serves the page without a token, with a CSP that forbids inline and foreign scripts, gzip-compressed when asked', async () => {
    const h = await t.start({ token: TOKEN, dashboardDir: pageDir() });
    const page = await h.http('/', { auth: false });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("default-src 'none'");
    expect(csp).not.toContain('unsafe-inline');
    expect(page.headers.get('x-content-type-options')).toBe('nosniff');
    expect(await page.text()).toContain('./assets/app-1.js');
    // fetch decompresses on its own: ask with node's own header handling to see the wire form.
    const raw = await new Promise<{ enc: string | undefined; body: Buffer; cache: string | undefined }>(
      (resolve, reject) => {
        import('node:http')
          .then(({ get }) =>
            get(`${h.url}/assets/app-1.js`, { headers: { 'accept-encoding': 'gzip' } }, (res) => {
              const chunks: Buffer[] = [];
              res.on('data', (c: Buffer) => chunks.push(c));
              res.on('end', () =>
                resolve({
                  enc: res.headers['content-encoding'],
                  body: Buffer.concat(chunks),
                  cache: res.headers['cache-control'],
                }),
              );
            }).on('error', reject),
          )
          .catch(reject);
      },
    );
    expect(raw.enc).toBe('gzip');
    expect(raw.body.length).toBeLessThan(500);
    expect(gunzipSync(raw.body).toString()).toContain('xxxx');
    expect(raw.cache).toContain('immutable');
    expect((await h.http('/assets/missing.js', { auth: false })).status).toBe(404);
    // The API the page calls still wants the token.
    expect((await h.http('/api/tasks', { auth: false })).status).toBe(401);
    expect((await h.http('/api/events', { auth: false })).status).toBe(401);
  });

  it('says plainly when the build has no dashboard instead of a JSON 404 at /', async () => {
    const h = await t.start({ dashboardDir: mkdtempSync(path.join(tmpdir(), 'cco-nopage-')) });
    const res = await h.http('/');
    expect(res.status).toBe(503);
    expect(await res.text()).toContain('npx nx run orchestrator:build');
  });

  it('streams task and step events to a subscriber with the token, and ?task= keeps only that task', async () => {
    let gate: (() => void) | undefined;
    const slow = strategyOf(async (task, history): Promise<Decision> => {
      if (task.prompt === 'wait' && history.length === 0) await new Promise<void>((r) => (gate = r));
      return { type: 'complete', result: { done: task.prompt } };
    });
    const h = await t.start({ token: TOKEN, strategies: everyKind(slow) });
    const mk = async (prompt: string): Promise<string> => {
      const r = await h.http('/api/tasks', { method: 'POST', json: { task_kind: 'general', prompt } });
      return ((await r.json()) as { task: { id: string } }).task.id;
    };
    const other = await mk('other');
    const all = await h.http('/api/events');
    expect(all.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const id = await mk('wait');
    const filtered = await h.http(`/api/events?task=${encodeURIComponent(id)}`);
    await eventually(() => Promise.resolve(gate !== undefined));
    gate?.();
    const [a, f] = await Promise.all([
      records(all, (r) =>
        r.some((x) => x.event === 'task' && x.data.id === id && x.data.status === 'completed'),
      ),
      records(filtered, (r) => r.some((x) => x.event === 'task' && x.data.status === 'completed')),
    ]);
    expect(a[0]?.event).toBe('hello');
    expect(a.filter((x) => x.event === 'step' && x.data.task_id === id).length).toBeGreaterThan(0);
    expect(f.every((x) => x.event === 'hello' || x.data.task_id === id || x.data.id === id)).toBe(true);
    expect(f.some((x) => x.data.id === other || x.data.task_id === other)).toBe(false);
    const bad = await h.http('/api/events?task=');
    expect(bad.status).toBe(200);
    await bad.body?.cancel();
    expect((await h.http('/api/events?tasks=x')).status).toBe(400);
  });

  it('sends only records that parse with the event schemas of @ccagent/protocol (guards against the server and its readers drifting apart)', async () => {
    const h = await t.start({ strategies: everyKind(writeThenRun) });
    const stream = await h.http('/api/events');
    const c = await t.connect('pc-1');
    c.ws.on('message', (d: Buffer) => {
      const m = JSON.parse(d.toString()) as Json;
      if (m.type === 'command_call')
        c.send({ type: 'command_result', task_id: m.task_id, call_id: m.call_id, ok: true, result: {} });
    });
    const id = await t.createTask(c, 'pc-1');
    const seen = await records(stream, (r) =>
      r.some((x) => x.event === 'task' && x.data.id === id && x.data.status === 'completed'),
    );
    const kinds = new Set(seen.map((x) => x.event));
    for (const k of ['hello', 'client', 'task', 'step', 'call']) expect(kinds).toContain(k);
    const failures = seen
      .map((x) => ({ event: x.event, r: parseHttpEvent(x.event, JSON.stringify(x.data)) }))
      .filter((x) => !x.r.ok);
    expect(failures).toEqual([]);
  });

  it('gives timeline rows without the model input and output (summary=1) and the task without its log (steps=0)', async () => {
    const h = await t.start({ strategies: everyKind(writeThenRun) });
    const c = await t.connect('pc-1');
    c.ws.on('message', (d: Buffer) => {
      const m = JSON.parse(d.toString()) as Json;
      if (m.type === 'command_call')
        c.send({
          type: 'command_result',
          task_id: m.task_id,
          call_id: m.call_id,
          ok: true,
          result: { out: 'y'.repeat(5000) },
        });
    });
    const id = await t.createTask(c, 'pc-1');
    await eventually(
      async () =>
        ((await (await h.http(`/api/tasks/${id}`)).json()) as { task: { status: string } }).task.status ===
        'completed',
    );
    const full = (await (await h.http(`/api/tasks/${id}/steps?limit=500`)).json()) as { steps: Json[] };
    const short = (await (await h.http(`/api/tasks/${id}/steps?limit=500&summary=1`)).json()) as {
      steps: Json[];
    };
    expect(TaskStepSummariesResponseSchema.safeParse(short).error).toBeUndefined();
    expect(short.steps.map((s) => s.seq)).toEqual(full.steps.map((s) => s.seq));
    const result = short.steps.find((s) => s.kind === 'tool_result')!;
    expect(result.tool_result).toEqual({ ok: true });
    expect(String(result.preview).length).toBeLessThanOrEqual(201);
    expect(JSON.stringify(short.steps).length).toBeLessThan(JSON.stringify(full.steps).length / 3);
    const decision = short.steps.find((s) => s.kind === 'decision')!;
    expect(decision.directive).toMatchObject({ type: 'tool_call', command: 'fs_write' });
    const lean = (await (await h.http(`/api/tasks/${id}?steps=0`)).json()) as Json;
    expect(Object.keys(lean).sort()).toEqual(['command_calls', 'questions', 'task']);
    expect(TaskWithoutStepsResponseSchema.safeParse(lean).error).toBeUndefined();
    expect((await h.http(`/api/tasks/${id}?steps=2`)).status).toBe(400);
    expect((await h.http(`/api/tasks/${id}/steps?summary=yes`)).status).toBe(400);
  });

  it('finds tasks by prompt words or id prefix with ?q=, counting every match (not only the page)', async () => {
    const h = await t.start({
      strategies: everyKind(strategyOf(() => ({ type: 'complete', result: null }))),
    });
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) {
      const r = await h.http('/api/tasks', {
        method: 'POST',
        json: { task_kind: 'general', prompt: i % 3 === 0 ? `Fix the QUARRY ${i}` : `other ${i}` },
      });
      ids.push(((await r.json()) as { task: { id: string } }).task.id);
    }
    const page = (await (await h.http('/api/tasks?q=quarry&limit=2')).json()) as {
      tasks: Json[];
      total: number;
    };
    expect(page.total).toBe(4);
    expect(page.tasks).toHaveLength(2);
    const byId = (await (await h.http(`/api/tasks?q=${ids[5]!.slice(0, 8)}`)).json()) as { tasks: Json[] };
    expect(byId.tasks.map((x) => x.id)).toContain(ids[5]);
  });

  it('tells the dashboard the task kinds and which optional features this server has', async () => {
    const h = await t.start();
    const f = (await (await h.http('/api/dashboard')).json()) as { task_kinds: string[]; features: string[] };
    expect(f.task_kinds).toEqual(expect.arrayContaining(['general_agent', 'code_job', 'general']));
    expect(f.features).toEqual(expect.arrayContaining(['events', 'search', 'step_summary']));
  });
});
