// `tasks follow` of a long task reads each step-log record once: the built CLI follows a task on a real
// orchestrator (the cc-orchestrator library in this process, with a scripted strategy writing hundreds of records)
// through a recording HTTP proxy, and every poll after the first asks only for the records after the last one it
// printed. Guards against a follower that re-reads the whole log on every poll (O(n) per poll over a night-long task).
// With the event stream, the human view paints each record from the short form its `step` event carries and reads
// none of them: guards against a follower that reads every record after its event said what it is.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Decision, StepContext, Task, TaskStrategy } from '@ccagent/engine';
import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import { loadConfig, startOrchestrator, type RunningOrchestrator } from 'cc-orchestrator';
import { afterEach, describe, expect, it } from 'vitest';
import { startCli } from './support/run-cli.js';

interface Seen {
  url: string;
  /** seq of every step record in the response. */
  seqs: number[];
  hasMore?: boolean;
}

/**
 * An HTTP proxy in front of the orchestrator that records each request and the step records it answered;
 * `beforeForwarding(n)` runs before the n-th request (from 0) goes on.
 */
async function recordingProxy(
  target: string,
  beforeForwarding: (n: number) => Promise<void>,
): Promise<{ url: string; seen: Seen[]; server: Server }> {
  const seen: Seen[] = [];
  let requests = 0;
  const server = createServer((req, res) => {
    // A JSON-only proxy, like a server from before `/api/events`: the follower finds no event stream and polls, which
    // is the path this test is about (the stream never ends, so forwarding it whole would hang here).
    if ((req.url ?? '').startsWith('/api/events')) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { code: 'not_found', message: 'no route' } }));
      return;
    }
    void (async () => {
      await beforeForwarding(requests++);
      const upstream = await fetch(`${target}${req.url ?? '/'}`, { headers: { accept: 'application/json' } });
      const text = await upstream.text();
      const body = JSON.parse(text) as { steps?: Array<{ seq: number }>; has_more?: boolean };
      seen.push({
        url: req.url ?? '',
        seqs: (body.steps ?? []).map((s) => s.seq),
        ...(body.has_more !== undefined ? { hasMore: body.has_more } : {}),
      });
      res.writeHead(upstream.status, { 'content-type': 'application/json' });
      res.end(text);
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address() as { port: number };
  return { url: `http://127.0.0.1:${addr.port}`, seen, server };
}

/**
 * A proxy that forwards everything: the event stream as it comes, each JSON answer whole after recording the step
 * records in it. `onEvents` runs when the follower asks for the stream, which goes upstream `holdEventsMs` later.
 */
async function streamingProxy(
  target: string,
  onEvents: () => void,
  holdEventsMs: number,
): Promise<{ url: string; seen: Seen[]; server: Server }> {
  const upstream = new URL(target);
  const seen: Seen[] = [];
  const server = createServer((req, res) => {
    const url = req.url ?? '/';
    const events = url.startsWith('/api/events');
    if (events) onEvents();
    const forward = (): void => {
      const up = request(
        {
          host: upstream.hostname,
          port: upstream.port,
          method: req.method,
          path: url,
          headers: { ...req.headers, host: upstream.host },
        },
        (upRes) => {
          res.writeHead(upRes.statusCode ?? 502, upRes.headers);
          if (events) {
            upRes.pipe(res);
            return;
          }
          const chunks: Buffer[] = [];
          upRes.on('data', (c: Buffer) => chunks.push(c));
          upRes.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            const body = JSON.parse(text) as { steps?: Array<{ seq: number }> };
            seen.push({ url, seqs: (body.steps ?? []).map((s) => s.seq) });
            res.end(text);
          });
        },
      );
      up.on('error', () => res.destroy());
      res.on('close', () => up.destroy());
      req.pipe(up);
    };
    if (events) setTimeout(forward, holdEventsMs);
    else forward();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address() as { port: number };
  return { url: `http://127.0.0.1:${addr.port}`, seen, server };
}

let cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe('tasks follow --url reads only new step records', () => {
  it('asks for the records after the last one printed on every poll, pages a backlog, and prints each record once', async () => {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let wrote!: () => void;
    const written = new Promise<void>((r) => (wrote = r));
    const strategy: TaskStrategy = {
      async decide(_task: Task, _history, ctx: StepContext): Promise<Decision> {
        if (ctx.step === 1) {
          for (let i = 0; i < 300; i++) await ctx.logStep({ kind: 'note', output: { i } });
          return { type: 'continue', note: 'first batch', wakeAfterMs: 0 };
        }
        // Wait until the follower has read the first 300, then write a backlog larger than a page.
        await released;
        for (let i = 0; i < 450; i++) await ctx.logStep({ kind: 'note', output: { i } });
        wrote();
        return { type: 'complete', result: { notes: 750 } };
      },
    };
    const dir = mkdtempSync(path.join(tmpdir(), 'ccagent-cli-follow-'));
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
    // The first poll finds a backlog larger than a page waiting.
    const proxy = await recordingProxy(server.url, async (n) => {
      if (n !== 1) return;
      release();
      await written;
    });
    cleanup.push(
      () => rmSync(dir, { recursive: true, force: true }),
      () => fake.close(),
      () => server.close(),
      () => new Promise<void>((r) => proxy.server.close(() => r())),
    );

    const created = (await (
      await fetch(`${server.url}/api/tasks`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ task_kind: 'code_job', prompt: 'write many notes' }),
      })
    ).json()) as { task: { id: string } };
    const id = created.task.id;
    for (let n = 0; n < 200; n++) {
      const d = (await (await fetch(`${server.url}/api/tasks/${id}`)).json()) as { steps: unknown[] };
      if (d.steps.length >= 300) break;
      await new Promise((r) => setTimeout(r, 25));
    }

    const follow = startCli(['--url', proxy.url, '--json', 'tasks', 'follow', id, '--interval', '50']);
    let out = '';
    let err = '';
    follow.stdout?.setEncoding('utf8').on('data', (d: string) => (out += d));
    follow.stderr?.setEncoding('utf8').on('data', (d: string) => (err += d));
    const exited = new Promise<number | null>((resolve) => follow.on('close', resolve));
    expect(await exited).toBe(0);
    expect(err).toBe('');

    const all = (await (await fetch(`${server.url}/api/tasks/${id}`)).json()) as {
      steps: Array<{ seq: number }>;
    };
    const stored = all.steps.map((s) => s.seq);
    expect(stored.length).toBeGreaterThanOrEqual(752); // 750 notes and the decisions

    // The first request reads the task whole; every later one asks for what comes after the records it has.
    const [first, ...polls] = proxy.seen;
    expect(first?.url).toBe(`/api/tasks/${id}`);
    expect(polls.length).toBeGreaterThanOrEqual(3);
    let have = first?.seqs.at(-1) ?? 0;
    for (const p of polls) {
      expect(p.url).toBe(`/api/tasks/${id}/steps?after_seq=${have}&limit=200`);
      expect(p.seqs.length).toBeLessThanOrEqual(200);
      have = p.seqs.at(-1) ?? have;
    }
    // Each record crossed the wire once, and the backlog of 450 took more than one page.
    const fetched = proxy.seen.flatMap((s) => s.seqs);
    expect(fetched).toEqual(stored);
    expect(polls.some((p) => p.hasMore === true)).toBe(true);

    // Output unchanged: every record exactly once, in order, then the completion.
    const events = out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { event: string; step?: { seq: number }; status?: string });
    expect(events.filter((e) => e.event === 'step').map((e) => e.step?.seq)).toEqual(stored);
    expect(events.at(-1)).toMatchObject({ event: 'end', status: 'completed' });
  });
  it('paints each record from the short form its step event carries; reads only those committed before its stream opened (the human view)', async () => {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const NOTES = 30;
    const strategy: TaskStrategy = {
      async decide(_task: Task, _history, ctx: StepContext): Promise<Decision> {
        // From when the follower asks for its stream: a note every 60 ms, one with hostile text.
        await released;
        for (let i = 0; i < NOTES; i++) {
          await ctx.logStep({ kind: 'note', output: i === 7 ? { content: '\u001b[2J<wiped?>' } : { i } });
          await new Promise((r) => setTimeout(r, 60));
        }
        return { type: 'complete', result: { notes: NOTES } };
      },
    };
    const dir = mkdtempSync(path.join(tmpdir(), 'ccagent-cli-follow-push-'));
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
    // The stream reaches the server 400 ms after the follower asked: the first notes are committed before it, so
    // their events never come (a gap in seq) and the follower reads them.
    const proxy = await streamingProxy(server.url, release, 400);
    cleanup.push(
      () => rmSync(dir, { recursive: true, force: true }),
      () => fake.close(),
      () => server.close(),
      () => {
        proxy.server.closeAllConnections();
        return new Promise<void>((r) => proxy.server.close(() => r()));
      },
    );
    const created = (await (
      await fetch(`${server.url}/api/tasks`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ task_kind: 'code_job', prompt: 'write notes while followed' }),
      })
    ).json()) as { task: { id: string } };
    const id = created.task.id;

    const follow = startCli(['--url', proxy.url, 'tasks', 'follow', id, '--interval', '50']);
    let out = '';
    let err = '';
    follow.stdout?.setEncoding('utf8').on('data', (d: string) => (out += d));
    follow.stderr?.setEncoding('utf8').on('data', (d: string) => (err += d));
    const watchdog = setTimeout(() => follow.kill('SIGKILL'), 30_000);
    const code = await new Promise<number | null>((resolve) => follow.on('close', resolve));
    clearTimeout(watchdog);
    expect({ code, err }).toEqual({ code: 0, err: '' });

    const records = (
      (await (await fetch(`${server.url}/api/tasks/${id}`)).json()) as {
        steps: Array<{ seq: number; kind: string }>;
      }
    ).steps;
    const stored = records.map((s) => s.seq);
    expect(stored.length).toBeGreaterThanOrEqual(NOTES + 1);
    // Every record printed once, in order; the hostile one inert (the escape shown, never sent raw).
    expect([...out.matchAll(/^ {2}#(\d+) /gm)].map((m) => Number(m[1]))).toEqual(stored);
    expect(out).toContain('{"i":29}');
    expect(out).toContain('␛[2J<wiped?>');
    expect(out).not.toContain('\u001b');
    expect(out).toMatch(/status \w+ → completed/);
    // It read the notes committed before its stream opened, each once, and none after: their events carried them.
    // (The status change is read, with the decision record the engine commits with it.)
    expect(proxy.seen[0]?.url).toBe(`/api/tasks/${id}`);
    const reads = proxy.seen.slice(1).filter((r) => r.url.startsWith(`/api/tasks/${id}/steps?`));
    const notes = records.filter((r) => r.kind === 'note').map((r) => r.seq);
    expect(notes).toHaveLength(NOTES);
    const readNotes = reads.flatMap((r) => r.seqs).filter((seq) => notes.includes(seq));
    expect(readNotes.length).toBeGreaterThanOrEqual(1);
    expect(readNotes.length).toBeLessThanOrEqual(NOTES - 10);
    expect(readNotes).toEqual(notes.slice(0, readNotes.length));
    expect(reads.length).toBeLessThan(6);
  }, 40_000);
});
