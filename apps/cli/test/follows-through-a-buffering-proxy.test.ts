// `tasks follow --url` behind a buffering reverse proxy: the built CLI follows a task on a real orchestrator (the
// cc-orchestrator library in this process, a scripted strategy writing a record every 300 ms for 6 s) through a real HTTP
// proxy that forwards every request upstream but holds each response until it has all of it — as a proxy with
// response buffering on does. For the JSON routes that changes nothing; the event stream never ends, so its headers
// (or, in the second form, its records) never reach the follower. Guards against a follower waiting forever for the
// stream (or, headers given, sleeping its 5 s push fallback between reads): it must give up on push within a bounded
// time, then poll at its interval, print every record soon after its commit, and exit when the task ends.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Decision, StepContext, Task, TaskStrategy } from '@ccagent/engine';
import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import { loadConfig, startOrchestrator, type RunningOrchestrator } from 'cc-orchestrator';
import { afterEach, describe, expect, it } from 'vitest';
import { startCli } from './support/run-cli.js';

/**
 * A forwarding proxy that buffers each upstream response. `hold`: `whole` sends nothing (not even the headers) until
 * the upstream body ended; `body` sends the headers at once and the body when it ended.
 */
async function bufferingProxy(
  target: string,
  hold: 'whole' | 'body',
): Promise<{ url: string; server: Server; requests: string[] }> {
  const upstream = new URL(target);
  const requests: string[] = [];
  const server = createServer((req, res) => {
    requests.push(req.url ?? '');
    const headers: IncomingHttpHeaders = { ...req.headers, host: upstream.host };
    const up = request(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers },
      (upRes) => {
        const chunks: Buffer[] = [];
        const head = { ...upRes.headers };
        delete head['content-length'];
        delete head['transfer-encoding'];
        if (hold === 'body') {
          res.writeHead(upRes.statusCode ?? 502, head);
          res.flushHeaders();
        }
        upRes.on('data', (c: Buffer) => chunks.push(c));
        upRes.on('end', () => {
          const body = Buffer.concat(chunks);
          if (hold === 'whole')
            res.writeHead(upRes.statusCode ?? 502, { ...head, 'content-length': body.length });
          res.end(body);
        });
      },
    );
    up.on('error', () => res.destroy());
    // The client gave up (or finished): drop the upstream request too.
    res.on('close', () => up.destroy());
    req.pipe(up);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address() as { port: number };
  return { url: `http://127.0.0.1:${addr.port}`, server, requests };
}

/** Steps of the task, one note each, 300 ms apart. */
const STEPS = 20;
/** The CLI's bound on the wait for the stream's first record, set through CCAGENT_EVENTS_WAIT_MS (default 10 s). */
const FIRST_RECORD_MS = 3000;

let cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

async function follow(hold: 'whole' | 'body'): Promise<void> {
  // Twenty steps, each writing one note, 300 ms apart: the task ends about 6 s after it starts.
  const strategy: TaskStrategy = {
    decide(_task: Task, _history, ctx: StepContext): Promise<Decision> {
      return ctx
        .logStep({ kind: 'note', output: { step: ctx.step } })
        .then(() =>
          ctx.step < STEPS
            ? { type: 'continue', note: `step ${ctx.step}`, wakeAfterMs: 300 }
            : { type: 'complete', result: { steps: ctx.step } },
        );
    },
  };
  const dir = mkdtempSync(path.join(tmpdir(), 'ccagent-cli-buffered-'));
  const fake: FakeOllama = await startFakeOllama({ installed: ['qwen3:8b'] });
  const loaded = loadConfig({ overrides: {} });
  if (!loaded.ok) throw loaded.error;
  const server: RunningOrchestrator = await startOrchestrator({
    config: loaded.value,
    host: '127.0.0.1',
    port: 0,
    dbPath: path.join(dir, 'ccagent.db'),
    ollamaUrl: fake.url,
    strategies: () => strategy,
    logger: { debug() {}, info() {}, warn() {}, error() {} },
    env: {},
  });
  const proxy = await bufferingProxy(server.url, hold);
  cleanup.push(
    () => rmSync(dir, { recursive: true, force: true }),
    () => fake.close(),
    () => server.close(),
    () => {
      proxy.server.closeAllConnections();
      return new Promise<void>((r) => proxy.server.close(() => r()));
    },
  );
  // The JSON routes work through the proxy as they are.
  const created = (await (
    await fetch(`${proxy.url}/api/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ task_kind: 'code_job', prompt: 'write twenty notes slowly' }),
    })
  ).json()) as { task: { id: string } };
  const id = created.task.id;

  const started = Date.now();
  const cli = startCli(['--url', proxy.url, '--json', 'tasks', 'follow', id, '--interval', '100'], {
    CCAGENT_EVENTS_WAIT_MS: String(FIRST_RECORD_MS),
  });
  let out = '';
  let err = '';
  // When each record was printed (by seq).
  const printedAt = new Map<number, number>();
  let partial = '';
  cli.stdout?.setEncoding('utf8').on('data', (d: string) => {
    out += d;
    const lines = (partial + d).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) {
      const e = JSON.parse(line) as { event: string; step?: { seq: number } };
      if (e.event === 'step' && e.step) printedAt.set(e.step.seq, Date.now());
    }
  });
  cli.stderr?.setEncoding('utf8').on('data', (d: string) => (err += d));
  // Today's task takes ~2 s; a follower stuck on the stream would never exit. Kill it after 20 s.
  const watchdog = setTimeout(() => cli.kill('SIGKILL'), 20_000);
  const code = await new Promise<number | null>((resolve) => cli.on('close', resolve));
  clearTimeout(watchdog);
  expect({ code, err }).toEqual({ code: 0, err: '' });

  // It tried the stream, gave up on it, and polled through the proxy.
  expect(proxy.requests.some((u) => u.startsWith('/api/events'))).toBe(true);
  expect(proxy.requests.filter((u) => u.startsWith(`/api/tasks/${id}/steps?`)).length).toBeGreaterThanOrEqual(
    2,
  );
  // Every record once, in order, then the completion.
  const steps = (
    (await (await fetch(`${server.url}/api/tasks/${id}`)).json()) as {
      steps: Array<{ seq: number; at: number }>;
    }
  ).steps;
  const stored = steps.map((s) => s.seq);
  // Once it polls (a bounded wait for the stream after the start), each record is printed soon after its commit.
  const late = steps
    .filter((s) => s.at > started + FIRST_RECORD_MS + 1000)
    .map((s) => ({ seq: s.seq, ms: (printedAt.get(s.seq) ?? Infinity) - s.at }));
  expect(late.length).toBeGreaterThanOrEqual(5);
  expect(late.filter((l) => l.ms > 1500)).toEqual([]);
  const events = out
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { event: string; step?: { seq: number }; status?: string });
  expect(events.filter((e) => e.event === 'step').map((e) => e.step?.seq)).toEqual(stored);
  expect(stored.length).toBeGreaterThanOrEqual(STEPS);
  expect(events.at(-1)).toMatchObject({ event: 'end', status: 'completed' });
}

describe('tasks follow --url behind a buffering proxy', { timeout: 40_000 }, () => {
  it('gives up on an event stream whose headers never come and follows the task to its end by polling', async () => {
    await follow('whole');
  });

  it('gives up on an event stream whose records never come and follows the task to its end by polling', async () => {
    await follow('body');
  });
});
