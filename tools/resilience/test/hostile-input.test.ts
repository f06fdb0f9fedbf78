/**
 * Hostile input against the built orchestrator: a seeded stream of malformed and adversarial messages (5,000 in
 * CI; `CCAGENT_LONG=1`: 100,000), floods, and authentication/authorization attacks. Guards against: a message that
 * gets no answer (or the wrong one), crashes the server, grows its memory without bound, or touches another
 * client's tasks; a missing or wrong token getting anything but a refusal; one client answering, cancelling,
 * reading or hijacking another's tasks, calls or identity.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHostileGenerator } from '../src/hostile-messages.js';
import { createRng, seedFromEnv } from '../src/rng.js';
import { runFuzz } from './support/fuzz-driver.js';
import { jobPrompt, jobScript, MODEL } from './support/model.js';
import { eventually, faultConfig, LONG, startServer, type Server } from './support/server.js';
import { SimClient, type Msg } from './support/sim-client.js';

const MESSAGES = LONG ? 100_000 : 10_000;
const TOKEN = 'resilience-token-1234';

let fake: FakeOllama;
const dirs: string[] = [];
const tempDb = (): string => {
  const d = mkdtempSync(path.join(tmpdir(), 'resilience-hostile-'));
  dirs.push(d);
  return path.join(d, 'ccagent.db');
};

beforeAll(async () => {
  fake = await startFakeOllama({ installed: [MODEL] });
  fake.script(MODEL, jobScript());
});
afterAll(async () => {
  await fake.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A victim computer with one task waiting for a command and one completed task. */
async function victimWithTasks(
  s: Server,
  token?: string,
): Promise<{ v: SimClient; waitingTask: string; call: Msg; doneTask: string }> {
  const v = new SimClient('victim', { autoAnswer: false, ...(token !== undefined ? { token } : {}) });
  await v.connect(s.url);
  v.createTask('v-done', jobPrompt('vdone', 1));
  const doneTask = String((await v.waitFor('task_created', { request_id: 'v-done' })).task_id);
  v.answer(await v.waitFor('command_call', { task_id: doneTask }));
  await v.waitFor('task_completed', { task_id: doneTask });
  v.createTask('v-wait', jobPrompt('vwait', 2));
  const waitingTask = String((await v.waitFor('task_created', { request_id: 'v-wait' })).task_id);
  const call = await v.waitFor('command_call', { task_id: waitingTask });
  return { v, waitingTask, call, doneTask };
}

async function snapshot(s: Server, ids: string[]): Promise<string[]> {
  return Promise.all(ids.map(async (id) => (await s.http(`/api/tasks/${id}`)).text()));
}

/** The victim's waiting task still works: its call is accepted from it and the task completes. */
async function victimFinishes(v: SimClient, taskId: string, call: Msg): Promise<void> {
  v.answer(call);
  await v.waitFor('command_ack', { call_id: call.call_id });
  const second = await v.next(
    (m) => m.type === 'command_call' && m.task_id === taskId && m.call_id !== call.call_id,
  );
  v.answer(second);
  await v.waitFor('task_completed', { task_id: taskId });
}

describe('fuzz: malformed and adversarial messages', () => {
  it(
    `answers ${MESSAGES.toLocaleString('en-US')} hostile messages with an error (or a close), stays up, bounded memory, other tasks untouched`,
    async () => {
      const s = await startServer({
        db: tempDb(),
        config: faultConfig({ heartbeatMs: 5000 }),
        ollamaUrl: fake.url,
      });
      try {
        const { v, waitingTask, call, doneTask } = await victimWithTasks(s);
        const before = await snapshot(s, [waitingTask, doneTask]);
        const rng = createRng(seedFromEnv());
        console.log(`[fuzz] seed ${rng.seed} (replay with RESILIENCE_SEED=${rng.seed})`);
        const next = createHostileGenerator(rng, {
          clientId: 'fuzzer',
          victimClientId: 'victim',
          victimTaskIds: [waitingTask, doneTask],
          victimCallIds: [String(call.call_id)],
          maxMessageBytes: 131_072,
          hardFrameCap: 1_048_576,
        });
        const summary = await runFuzz({
          url: s.url,
          clientId: 'fuzzer',
          count: MESSAGES,
          next,
          rss: () => s.rssKiB(),
        });

        const crashes = s.alive() ? 0 : 1;
        const after = await snapshot(s, [waitingTask, doneTask]);
        const tasksCorrupted = after.filter((a, i) => a !== before[i]).length;
        const line = {
          seed: rng.seed,
          messages_tried: summary.messages,
          frames: summary.frames,
          errors_returned: summary.errorsReturned,
          pongs: summary.pongs,
          closes_with_code: summary.closes,
          mismatches: summary.mismatches,
          unexpected_messages: summary.unexpected,
          crashes,
          tasks_corrupted: tasksCorrupted,
          rss_mib: {
            start: +(summary.rssKiB.start / 1024).toFixed(1),
            after_warmup: +(summary.rssKiB.afterWarmup / 1024).toFixed(1),
            peak: +(summary.rssKiB.peak / 1024).toFixed(1),
            end: +(summary.rssKiB.end / 1024).toFixed(1),
          },
          seconds: +(summary.ms / 1000).toFixed(1),
          msgs_per_s: Math.round(summary.messages / (summary.ms / 1000)),
          by_category: summary.byCategory,
          error_codes: summary.errorCodes,
        };
        console.log(`[fuzz] summary ${JSON.stringify(line)}`);
        if (summary.mismatchSamples.length > 0)
          console.log(`[fuzz] mismatches:\n${summary.mismatchSamples.join('\n')}`);

        expect(summary.mismatchSamples).toEqual([]);
        expect(summary.errorsReturned + summary.pongs + summary.closes).toBe(MESSAGES);
        expect(summary.unexpected).toBe(0);
        expect(summary.droppedMainConnection).toBe(0);
        expect(crashes).toBe(0);
        expect(tasksCorrupted).toBe(0);
        // Bounded memory: the server holds no per-message state; what it grows to after warm-up it keeps.
        expect(summary.rssKiB.peak - summary.rssKiB.afterWarmup).toBeLessThan(160 * 1024);
        if (LONG) {
          const n = summary.rssKiB.samples.length;
          const mean = (a: number[]): number => a.reduce((x, y) => x + y, 0) / Math.max(1, a.length);
          const early = mean(summary.rssKiB.samples.slice(Math.floor(n * 0.2), Math.floor(n * 0.3)));
          const late = mean(summary.rssKiB.samples.slice(Math.floor(n * 0.9)));
          expect(late - early, 'RSS keeps growing over the run').toBeLessThan(64 * 1024);
        }
        expect(v.closed).toBeUndefined();
        await victimFinishes(v, waitingTask, call);
        expect((await s.http('/health')).status).toBe(200);
      } finally {
        await s.kill9();
      }
    },
    LONG ? 900_000 : 90_000,
  );
});

describe('floods', () => {
  let s: Server;
  beforeAll(async () => {
    s = await startServer({
      db: tempDb(),
      token: TOKEN,
      config: faultConfig({
        rateLimit: { messagesPerSecond: 50, burst: 200 },
        helloTimeoutMs: 500,
        heartbeatMs: 5000,
      }),
      ollamaUrl: fake.url,
    });
  });
  afterAll(async () => {
    await s.kill9();
  });

  it('a message flood is rate limited (dropped with rate_limited) and the flooder closed with 4008; others unaffected', async () => {
    const { v, waitingTask, call } = await victimWithTasks(s, TOKEN);
    const f = new SimClient('flooder', { token: TOKEN });
    await f.connect(s.url);
    for (let i = 0; i < 3000; i++) f.send({ type: 'ping', id: `f${i}` });
    const closed = await f.whenClosed(10_000);
    expect(closed.code).toBe(4008);
    expect(closed.reason).toMatch(/rate limit/);
    const pongs = f.messages.filter((m) => m.type === 'pong').length;
    const limited = f.messages.filter((m) => m.type === 'error' && m.code === 'rate_limited').length;
    expect(pongs).toBeGreaterThan(0);
    expect(pongs).toBeLessThanOrEqual(200 + 50 * 5); // burst + a few seconds at the sustained rate
    expect(limited).toBeGreaterThanOrEqual(1);
    expect(limited).toBeLessThanOrEqual(10); // at most one per second, not one per dropped message
    expect(s.alive()).toBe(true);
    await victimFinishes(v, waitingTask, call);
    v.close();
  });

  it('a connection flood without hello: past the per-address cap of unauthenticated sockets (16) upgrades get 503, and every socket let in is closed with 4004 after the hello timeout', async () => {
    const url = `${s.url.replace(/^http/, 'ws')}/ws`;
    const opened = await Promise.all(
      Array.from(
        { length: 300 },
        () =>
          new Promise<WebSocket | number>((resolve, reject) => {
            const ws = new WebSocket(url);
            ws.once('open', () => resolve(ws));
            ws.once('unexpected-response', (_req, res) => {
              resolve(res.statusCode ?? 0);
              res.resume();
            });
            ws.once('error', reject);
          }),
      ),
    );
    const sockets = opened.filter((o): o is WebSocket => typeof o !== 'number');
    const refused = opened.filter((o): o is number => typeof o === 'number');
    expect(sockets).toHaveLength(16);
    expect(new Set(refused)).toEqual(new Set([503]));
    const codes = await Promise.all(
      sockets.map(
        (ws) => new Promise<number>((resolve) => ws.once('close', (code: number) => resolve(code))),
      ),
    );
    expect(new Set(codes)).toEqual(new Set([4004]));
    const clients = (await (await s.http('/api/clients')).json()) as { clients: unknown[] };
    expect(clients.clients.length).toBeLessThan(10); // none of them registered
    expect((await s.http('/health')).status).toBe(200);
  });
});

describe('authentication and authorization', () => {
  let s: Server;
  let victim: Awaited<ReturnType<typeof victimWithTasks>>;
  beforeAll(async () => {
    s = await startServer({
      db: tempDb(),
      token: TOKEN,
      // Every refusal here must be the exact one (401, 4001): the per-address throttle, which answers 429 / 4008
      // after a few failures from 127.0.0.1, is the adversary suite's subject, not this one's.
      config: faultConfig({ heartbeatMs: 5000, security: { authFailuresPerMinute: 1_000_000 } }),
      ollamaUrl: fake.url,
    });
    victim = await victimWithTasks(s, TOKEN);
  });
  afterAll(async () => {
    victim.v.close();
    await s.kill9();
  });

  it.each([
    ['no token', undefined],
    ['a wrong token', 'wrong-token-123'],
    ['the token with a different case', TOKEN.toUpperCase()],
  ])('WebSocket hello with %s is refused (error unauthorized, close 4001)', async (_name, token) => {
    const c = new SimClient('intruder', token !== undefined ? { token } : {});
    await expect(c.connect(s.url)).rejects.toThrow(/unauthorized/);
    expect((await c.whenClosed()).code).toBe(4001);
  });

  it('a client cannot take over a connected client id without the token; the victim keeps its connection', async () => {
    for (const token of [undefined, 'not-the-token']) {
      const imp = new SimClient('victim', token !== undefined ? { token } : {});
      await expect(imp.connect(s.url)).rejects.toThrow(/unauthorized/);
      expect((await imp.whenClosed()).code).toBe(4001);
    }
    expect(victim.v.isOpen).toBe(true);
    const clients = (await (await s.http('/api/clients')).json()) as {
      clients: Array<{ client_id: string; connected: boolean }>;
    };
    expect(clients.clients.find((c) => c.client_id === 'victim')?.connected).toBe(true);
    // The victim is still the one its calls go to: a ping through its socket still works.
    victim.v.send({ type: 'ping', id: 'still-me' });
    await victim.v.waitFor('pong', { id: 'still-me' });
  });

  it.each([
    ['GET', '/api/tasks'],
    ['GET', '/api/tasks/some-id'],
    ['GET', '/api/clients'],
    ['GET', '/api/tools'],
    ['GET', '/metrics'],
    ['POST', '/api/tasks'],
    ['POST', '/api/tasks/some-id/cancel'],
    ['POST', '/api/tasks/some-id/answer'],
  ])('HTTP %s %s without or with a wrong token is 401 and changes nothing', async (method, route) => {
    const total = async (): Promise<number> =>
      ((await (await s.http('/api/tasks?limit=1')).json()) as { total: number }).total;
    const before = await total();
    const body =
      method === 'POST' ? JSON.stringify({ task_kind: 'general', prompt: 'x', text: 'y' }) : undefined;
    const attempts: Array<Record<string, string>> = [
      {},
      { authorization: 'Bearer wrong' },
      { authorization: `Basic ${TOKEN}` },
    ];
    for (const headers of attempts) {
      const res = await s.http(route, { method, headers, body, auth: false });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('unauthorized');
    }
    expect(await total()).toBe(before);
    expect((await s.http('/health', { auth: false })).status).toBe(200);
  });

  it('another authenticated client cannot answer, cancel, subscribe to, answer questions of or create tasks for the victim', async () => {
    const { waitingTask, call, doneTask } = victim;
    const before = await snapshot(s, [waitingTask, doneTask]);
    const m = new SimClient('mallory', { token: TOKEN });
    await m.connect(s.url);
    const tries: Array<[Record<string, unknown>, string]> = [
      [
        { type: 'command_result', task_id: waitingTask, call_id: call.call_id, ok: true, result: { x: 1 } },
        'forbidden',
      ],
      [{ type: 'cancel_task', task_id: waitingTask, request_id: 'c1' }, 'forbidden'],
      [{ type: 'cancel_task', task_id: doneTask, request_id: 'c2' }, 'forbidden'],
      [{ type: 'subscribe', task_id: waitingTask, request_id: 's1' }, 'forbidden'],
      [{ type: 'user_answer', task_id: waitingTask, question_id: 'q', text: 'yes' }, 'forbidden'],
      [
        {
          type: 'create_task',
          request_id: 'x1',
          task_kind: 'general',
          client_id: 'victim',
          prompt: 'p',
          allowed_commands: [],
        },
        'forbidden',
      ],
    ];
    for (const [msg, code] of tries) {
      const from = m.messages.length;
      m.send(msg);
      const reply = await m.next((x) => x.type !== 'ping', 5000, from);
      expect(reply, JSON.stringify(msg)).toMatchObject({ type: 'error', code });
    }
    // Nothing about the victim's tasks leaked to mallory, and nothing changed.
    expect(
      m.messages.some(
        (x) => x.type === 'task_update' || x.type === 'command_call' || x.type === 'task_completed',
      ),
    ).toBe(false);
    expect(await snapshot(s, [waitingTask, doneTask])).toEqual(before);
    m.close();
  });

  it('with crossClientAccess on, another client may subscribe to and cancel the victim task (the config allows it)', async () => {
    const s2 = await startServer({
      db: tempDb(),
      token: TOKEN,
      config: faultConfig({ crossClientAccess: true }),
      ollamaUrl: fake.url,
    });
    try {
      const vic = await victimWithTasks(s2, TOKEN);
      const m = new SimClient('ops-console', { token: TOKEN });
      await m.connect(s2.url);
      m.send({ type: 'subscribe', task_id: vic.waitingTask, request_id: 's1' });
      await m.waitFor('task_update', { task_id: vic.waitingTask });
      m.send({ type: 'cancel_task', task_id: vic.waitingTask, request_id: 'c1' });
      await m.waitFor('task_update', { task_id: vic.waitingTask, status: 'cancelled' });
      // Still: a call sent to the victim is only accepted from the victim.
      m.send({
        type: 'command_result',
        task_id: vic.waitingTask,
        call_id: vic.call.call_id,
        ok: true,
        result: {},
      });
      const reply = await m.next((x) => x.type === 'error', 5000);
      expect(['forbidden', 'unknown_call']).toContain(reply.code);
      await eventually(async () => {
        const d = (await (await s2.http(`/api/tasks/${vic.waitingTask}`)).json()) as {
          task: { status: string };
        };
        return d.task.status === 'cancelled';
      });
      m.close();
      vic.v.close();
    } finally {
      await s2.kill9();
    }
  });
});
