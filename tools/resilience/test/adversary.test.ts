/**
 * An adversary against the built orchestrator while enrolled computers run real tasks: impersonation of every
 * enrolled id (no key, random keys, other computers' keys, the shared token, operator and viewer keys), revoked and
 * expired (rotated) keys, replayed enrollment codes, pairing-request abuse, role violations by an enrolled computer of its own (reading,
 * subscribing to, cancelling, answering another computer's tasks and calls, creating tasks for it, reading them through
 * a repeated query parameter) and by a viewer, browser-shaped requests, client ids made to rewrite an operator's terminal, brute force of the shared token over HTTP and
 * in `hello`, and what an unauthenticated caller can cost or reach (chunks before `hello`, sockets past the
 * per-address cap, bodies and prompts over the input limits, embedding an answer from another site, the mod endpoint
 * from a page, a guessing budget per channel, audit rows from refused pairing requests). Every attempt is counted as
 * accepted or refused; the legitimate computers must keep their connections and finish every task with every call
 * executed once. Guards against: any forged identity, key or code being accepted; a role doing what it must not;
 * an attack disturbing a legitimate computer (including through the per-address throttle, which all of them share
 * here with the attacker on 127.0.0.1).
 */
import { randomBytes } from 'node:crypto';
import { request } from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { jobPrompt, jobScript, MODEL } from './support/model.js';
import { LONG, orchestratorBuilt, startServer, type Server } from './support/server.js';
import { SimClient, type Msg } from './support/sim-client.js';

const TOKEN = 'adversary-operator-token';
const COMPUTERS = 3;
const TASKS_EACH = LONG ? 6 : 2;
const STEPS = LONG ? 8 : 4;
const ROUNDS = LONG ? 20 : 4;
const GUESSES = LONG ? 2000 : 300;

let fake: FakeOllama;
let dir: string;

beforeAll(async () => {
  fake = await startFakeOllama({ installed: [MODEL] });
  fake.script(MODEL, jobScript());
  dir = mkdtempSync(path.join(tmpdir(), 'resilience-adversary-'));
});
afterAll(async () => {
  await fake?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Tally of one attack category. */
interface Tally {
  attempts: number;
  accepted: number;
}

/** A `hello` on a fresh socket: true when the server welcomed it. */
function helloAccepted(s: Server, clientId: string, token: string | undefined): Promise<boolean> {
  return new Promise((resolve) => {
    const ws = new WebSocket(`${s.url.replace(/^http/, 'ws')}/ws`);
    const done = (v: boolean): void => {
      resolve(v);
      ws.terminate();
    };
    ws.on('open', () =>
      ws.send(
        JSON.stringify({
          type: 'hello',
          client_id: clientId,
          protocol_version: 1,
          commands: [{ name: 'fs_write' }],
          ...(token !== undefined ? { token } : {}),
        }),
      ),
    );
    ws.on('message', (d: Buffer) => done((JSON.parse(d.toString('utf8')) as Msg).type === 'welcome'));
    ws.on('close', () => resolve(false));
    ws.on('error', () => resolve(false));
  });
}

/** A socket that sends `frames` before any hello: true when the server still holds it open after `waitMs`. */
function heldBeforeHello(s: Server, frames: string[], waitMs = 2000): Promise<boolean> {
  return new Promise((resolve) => {
    const ws = new WebSocket(`${s.url.replace(/^http/, 'ws')}/ws`);
    ws.on('open', () => {
      for (const f of frames) ws.send(f);
      // Still OPEN: the server has not sent its close frame (it reads nothing more of a socket it closes, so the
      // TCP close itself comes only when it terminates the socket).
      setTimeout(() => {
        resolve(ws.readyState === WebSocket.OPEN);
        ws.terminate();
      }, waitMs);
    });
    ws.on('unexpected-response', () => resolve(false));
    ws.on('error', () => resolve(false));
  });
}

/** Open `n` sockets that say nothing; resolves with how many opened (the caller closes them). */
async function openSilent(url: string, n: number): Promise<{ opened: number; sockets: WebSocket[] }> {
  const sockets: WebSocket[] = [];
  const results = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<boolean>((resolve) => {
          const ws = new WebSocket(url);
          sockets.push(ws);
          ws.on('open', () => resolve(true));
          ws.on('unexpected-response', () => resolve(false));
          ws.on('error', () => resolve(false));
        }),
    ),
  );
  return { opened: results.filter(Boolean).length, sockets };
}

/** A JSON POST from another loopback address (its own failure budget); resolves with the status. */
function postFrom(s: Server, localAddress: string, p: string, body: unknown): Promise<number> {
  const u = new URL(s.url);
  const text = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: u.hostname,
        port: u.port,
        method: 'POST',
        path: p,
        localAddress,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) },
      },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

/** A free loopback port (for the mod endpoint). */
function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** The defences an answer must carry so no other site can embed it. */
function embeddable(res: Response): boolean {
  return (
    res.headers.get('cross-origin-resource-policy') !== 'same-origin' ||
    res.headers.get('x-content-type-options') !== 'nosniff' ||
    res.headers.get('x-frame-options') !== 'DENY'
  );
}

/** An object nested `depth` levels deep, as JSON text. */
const deepJson = (depth: number): string => `${'{"a":'.repeat(depth - 1)}{}${'}'.repeat(depth - 1)}`;

function post(s: Server, p: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${s.url}${p}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}

const bearer = (key: string): Record<string, string> => ({ authorization: `Bearer ${key}` });

describe.skipIf(!orchestratorBuilt)(
  'adversary: forged identities, keys, codes, roles and brute force',
  () => {
    it(`accepts none of the attacks and disturbs no legitimate computer (${COMPUTERS} computers × ${TASKS_EACH} tasks × ${STEPS} calls)`, async () => {
      const mcPort = await freePort();
      const s = await startServer({
        db: path.join(dir, 'ccagent.db'),
        ollamaUrl: fake.url,
        token: TOKEN,
        config: { server: { security: { rotationOverlapMs: 300 } } },
        args: ['--mc-port', String(mcPort)],
      });
      const modUrl = `ws://127.0.0.1:${mcPort}`;
      try {
        // ---- set-up with the operator token: codes, pairing, an operator key and a viewer key.
        const enroll = async (clientId: string): Promise<{ code: string; key: string }> => {
          const issued = await post(s, '/api/credentials/enroll', { client_id: clientId }, bearer(TOKEN));
          const { code } = (await issued.json()) as { code: string };
          const paired = await post(s, '/api/pair', { code, client_id: clientId });
          expect(paired.status).toBe(200);
          return { code, key: ((await paired.json()) as { key: string }).key };
        };
        const makeKey = async (role: string): Promise<string> =>
          (
            (await (await post(s, '/api/credentials/keys', { role }, bearer(TOKEN))).json()) as {
              key: string;
            }
          ).key;
        const opKey = await makeKey('operator');
        const viewerKey = await makeKey('viewer');
        const ids = Array.from({ length: COMPUTERS }, (_, i) => `legit-${i}`);
        const creds = new Map<string, { code: string; key: string }>();
        for (const id of ids) creds.set(id, await enroll(id));
        const mallory = await enroll('mallory');
        const former = await enroll('former');
        await post(s, '/api/credentials/revoke', { client_id: 'former' }, bearer(opKey));
        const rotated = await enroll('rotated');
        await post(s, '/api/credentials/rotate', { client_id: 'rotated' }, bearer(opKey));
        await new Promise((r) => setTimeout(r, 400)); // past the rotation overlap: the old key has expired
        // Pairing by request: one computer asked, was approved and collected its key; another still waits.
        const ask = async (clientId: string): Promise<{ request_id: string; secret: string }> => {
          const t = (await (await post(s, '/api/pair/request', { client_id: clientId })).json()) as {
            request_id: string;
            secret: string;
          };
          return { request_id: t.request_id, secret: t.secret };
        };
        const newcomer = await ask('newcomer');
        await post(s, '/api/credentials/pairings/approve', { id: newcomer.request_id }, bearer(opKey));
        expect((await post(s, '/api/pair/collect', newcomer)).status).toBe(200);
        const waiting = await ask('waiting');

        // ---- the legitimate computers start their work.
        const legit = ids.map((id) => new SimClient(id, { token: creds.get(id)!.key }));
        for (const c of legit) await c.connect(s.url);
        for (const c of legit)
          for (let t = 0; t < TASKS_EACH; t++)
            c.createTask(`${c.clientId}-t${t}`, jobPrompt(`${c.clientId}-${t}`, STEPS));
        const evil = new SimClient('mallory', { token: mallory.key, autoAnswer: false });
        await evil.connect(s.url);

        const tallies: Record<string, Tally> = {};
        const count = (category: string, accepted: boolean): void => {
          const t = (tallies[category] ??= { attempts: 0, accepted: 0 });
          t.attempts++;
          if (accepted) t.accepted++;
        };
        const randomKey = (): string => `cck_${randomBytes(32).toString('base64url')}`;

        for (let round = 0; round < ROUNDS; round++) {
          // Impersonation of every enrolled id.
          for (const id of ids) {
            const others = ids.filter((x) => x !== id).map((x) => creds.get(x)!.key);
            for (const token of [undefined, randomKey(), ...others, mallory.key, TOKEN, opKey, viewerKey]) {
              count('impersonation', await helloAccepted(s, id, token));
            }
          }
          // Wrong, expired and revoked keys.
          count('revoked key', await helloAccepted(s, 'former', former.key));
          count('expired key (rotated)', await helloAccepted(s, 'rotated', rotated.key));
          count('random key', await helloAccepted(s, `stranger-${round}`, randomKey()));
          count('revoked key', (await fetch(`${s.url}/api/tasks`, { headers: bearer(former.key) })).ok);
          // Identifiers that would write to the operator's terminal (issue 32, hole 2): a client id with ESC, CR, BEL,
          // an OSC title sequence, a C1 CSI or a bidi override, in a hello with the shared token (which stands in
          // for any id never enrolled) and in a pairing request from an address of its own; both must be refused.
          for (const hostile of [
            `evil\u001b[31m-${round}`,
            `evil\r-${round}`,
            `evil\u0007-${round}`,
            `\u001b]0;pwned\u0007-${round}`,
            `evil\u009b2J-${round}`,
            `evil\u202e-${round}`,
          ]) {
            count('terminal: hostile client id in hello', await helloAccepted(s, hostile, TOKEN));
            const status = await postFrom(s, '127.0.0.3', '/api/pair/request', { client_id: hostile });
            count('terminal: hostile client id in a pairing request', status === 202);
          }
          // Replayed enrollment codes.
          for (const id of [...ids, 'mallory']) {
            const code = id === 'mallory' ? mallory.code : creds.get(id)!.code;
            count('replayed code', (await post(s, '/api/pair', { code, client_id: id })).ok);
            count('replayed code', (await post(s, '/api/pair', { code, client_id: `new-${round}` })).ok);
          }
          // Pairing-request abuse: asking for an enrolled id, replaying a collected request, guessing a pending
          // request's secret, collecting one nobody approved, approving with a computer's or a viewer's key.
          for (const id of [...ids, 'mallory'])
            count(
              'pairing: request for an enrolled id',
              (await post(s, '/api/pair/request', { client_id: id })).status === 202,
            );
          count('pairing: replayed collect', (await post(s, '/api/pair/collect', newcomer)).ok);
          count(
            'pairing: wrong secret',
            (await post(s, '/api/pair/collect', { request_id: waiting.request_id, secret: randomKey() }))
              .status === 200,
          );
          count(
            'pairing: collect without approval',
            (await post(s, '/api/pair/collect', waiting)).status === 200,
          );
          for (const key of [mallory.key, viewerKey])
            count(
              'pairing: approve without operator rights',
              (await post(s, '/api/credentials/pairings/approve', { id: waiting.request_id }, bearer(key)))
                .ok,
            );
          // Role violations by mallory (an enrolled computer) on the legitimate computers' tasks and calls.
          const tasks = legit.flatMap((c) => [...c.created.values()]);
          const openCalls = legit.flatMap((c) =>
            c.messages
              .filter((m) => m.type === 'command_call')
              .map((m) => ({ task: String(m.task_id), call: String(m.call_id) })),
          );
          for (const [i, taskId] of tasks.entries()) {
            const rid = `r${round}-${i}`;
            const from = evil.messages.length;
            evil.send({ type: 'subscribe', task_id: taskId, request_id: `${rid}-s` });
            evil.send({ type: 'cancel_task', task_id: taskId, request_id: `${rid}-c` });
            const replies = await Promise.all([
              evil.next((m) => m.request_id === `${rid}-s`, 10_000, from),
              evil.next((m) => m.request_id === `${rid}-c`, 10_000, from),
            ]);
            for (const r of replies)
              count('role: computer on another computer\u2019s task (ws)', r.type !== 'error');
            count(
              'role: computer on another computer\u2019s task (http)',
              (await fetch(`${s.url}/api/tasks/${taskId}`, { headers: bearer(mallory.key) })).ok,
            );
            count(
              'role: computer on another computer\u2019s task (http)',
              (await post(s, `/api/tasks/${taskId}/cancel`, {}, bearer(mallory.key))).ok,
            );
            count(
              'role: viewer changing state',
              (await post(s, `/api/tasks/${taskId}/cancel`, {}, bearer(viewerKey))).ok,
            );
          }
          // Repeated query parameters: mallory's own id first and a legitimate computer's after it (and the other
          // spellings of a repeat), on the task list, and a repeated parameter on each task's page.
          for (const id of ids) {
            for (const query of [
              `client=mallory&client=${id}`,
              `client=${id}&client=mallory`,
              `client=mallory&%63lient=${id}`,
              `client=mallory&client=${encodeURIComponent(id).replace(/-/g, '%2D')}`,
            ]) {
              const res = await fetch(`${s.url}/api/tasks?${query}`, { headers: bearer(mallory.key) });
              const body = await res.text();
              count('role: repeated query parameter', res.ok || tasks.some((t) => body.includes(t)));
            }
          }
          for (const taskId of tasks) {
            const res = await fetch(`${s.url}/api/tasks/${taskId}?steps=0&steps=1`, {
              headers: bearer(mallory.key),
            });
            count('role: repeated query parameter', res.ok || (await res.text()).includes('"prompt"'));
          }
          for (const [i, c] of openCalls.slice(-COMPUTERS).entries()) {
            const from = evil.messages.length;
            evil.send({
              type: 'command_result',
              task_id: c.task,
              call_id: c.call,
              ok: true,
              result: { forged: round },
            });
            const r = await evil.next(
              (m) => m.call_id === c.call && (m.type === 'error' || m.type === 'command_ack'),
              10_000,
              from,
            );
            count('role: answering another computer\u2019s call', r.type !== 'error');
            const rid = `x${round}-${i}`;
            evil.send({
              type: 'create_task',
              request_id: rid,
              task_kind: 'general_agent',
              client_id: ids[i % COMPUTERS],
              prompt: 'p',
              allowed_commands: [],
            });
            const cr = await evil.next((m) => m.request_id === rid, 10_000, from);
            count('role: creating tasks for another computer', cr.type !== 'error');
          }
          // Browser-shaped requests.
          count(
            'browser: cross-site POST',
            (
              await fetch(`${s.url}/api/tasks`, {
                method: 'POST',
                headers: { 'content-type': 'text/plain', origin: 'http://evil.example', ...bearer(opKey) },
                body: '{"task_kind":"general_agent","prompt":"x"}',
              })
            ).ok,
          );
          // What an unauthenticated caller can cost: chunks before hello past maxHelloBytes (512 KiB) stay held,
          // sockets past the per-address cap of unauthenticated ones (16) open.
          const chunk = (i: number): string =>
            JSON.stringify({
              type: 'chunk',
              chunk_id: `junk-${round}`,
              index: i,
              count: 64,
              data: 'x'.repeat(120_000),
            });
          count(
            'unauthenticated: chunks before hello held',
            await heldBeforeHello(
              s,
              Array.from({ length: 6 }, (_, i) => chunk(i)),
            ),
          );
          const silent = await openSilent(`${s.url.replace(/^http/, 'ws')}/ws`, 17);
          count('unauthenticated: sockets past the per-address cap', silent.opened > 16);
          for (const ws of silent.sockets) ws.terminate();
          await new Promise((r) => setTimeout(r, 200));
          // Input limits: a body nested 5,000 deep, prompts over the limit over HTTP and the WebSocket.
          const deepBody = await fetch(`${s.url}/api/tasks`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', ...bearer(opKey) },
            body: `{"task_kind":"general_agent","prompt":"p","context":${deepJson(5000)}}`,
          });
          count('input: body nested 5,000 deep (http, not a 400)', deepBody.status !== 400);
          count(
            'input: prompt over the limit (http)',
            (
              await post(
                s,
                '/api/tasks',
                { task_kind: 'general_agent', prompt: 'x'.repeat(1024 * 1024 + 1) },
                bearer(opKey),
              )
            ).ok,
          );
          {
            const rid = `big-${round}`;
            const from = evil.messages.length;
            const text = JSON.stringify({
              type: 'create_task',
              request_id: rid,
              task_kind: 'general_agent',
              client_id: 'mallory',
              prompt: 'x'.repeat(1024 * 1024 + 1),
              allowed_commands: [],
            });
            const n = Math.ceil(text.length / 100_000);
            for (let i = 0; i < n; i++)
              evil.send({
                type: 'chunk',
                chunk_id: rid,
                index: i,
                count: n,
                data: text.slice(i * 100_000, (i + 1) * 100_000),
              });
            const r = await evil.next((m) => m.request_id === rid, 10_000, from);
            count('input: prompt over the limit (ws)', r.type !== 'error');
          }
          // Embedding an answer from another site (no CORP/nosniff/framing) and the mod endpoint from a page.
          for (const p of ['/metrics', '/health', '/api/tasks', '/lua/install.lua', '/no-such-route'])
            count('browser: answer embeddable by another site', embeddable(await fetch(`${s.url}${p}`)));
          for (const origin of [`http://127.0.0.1:${mcPort}`, s.url, 'http://evil.example'])
            count(
              'browser: mod endpoint from a page',
              await new Promise<boolean>((resolve) => {
                const ws = new WebSocket(modUrl, { headers: { origin, authorization: `Bearer ${TOKEN}` } });
                ws.on('open', () => {
                  resolve(true);
                  ws.terminate();
                });
                ws.on('unexpected-response', () => resolve(false));
                ws.on('error', () => resolve(false));
              }),
            );
        }

        // Brute force of the shared token: HTTP bearer guesses and hello guesses for an id never enrolled.
        let throttled = 0;
        for (let i = 0; i < GUESSES; i++) {
          const res = await fetch(`${s.url}/api/tasks`, {
            headers: bearer(`guess-${i}-${randomBytes(4).toString('hex')}`),
          });
          if (res.status === 429) throttled++;
          count('brute force (http token)', res.ok);
        }
        for (let i = 0; i < GUESSES / 10; i++)
          count('brute force (hello token)', await helloAccepted(s, 'unenrolled', `guess-${i}`));
        // The HTTP guesses spent the address's budget for every channel: the token is not even checked in a hello
        // or by the mod endpoint now (a budget per channel would let them through).
        count(
          'throttle: token on another channel after HTTP guesses (ws)',
          await helloAccepted(s, 'unenrolled', TOKEN),
        );
        count(
          'throttle: token on another channel after HTTP guesses (mod endpoint)',
          await new Promise<boolean>((resolve) => {
            const ws = new WebSocket(modUrl, { headers: { authorization: `Bearer ${TOKEN}` } });
            ws.on('open', () => {
              resolve(true);
              ws.terminate();
            });
            ws.on('unexpected-response', () => resolve(false));
            ws.on('error', () => resolve(false));
          }),
        );
        // Pairing spam from an address the guesses did not throttle: every request refused, and counted.
        let spam = 0;
        for (let i = 0; i < 40; i++) {
          const status = await postFrom(s, '127.0.0.2', '/api/pair/request', {
            client_id: ids[i % COMPUTERS],
          });
          count('pairing: request for an enrolled id', status === 202);
          if (status === 409) spam++;
        }
        // Refused pairing requests were counted, not written one row each.
        const audit = (await (
          await fetch(`${s.url}/api/audit?action=client.pair_request&limit=1000`, { headers: bearer(opKey) })
        ).json()) as {
          entries: Array<{ outcome: string }>;
        };
        const refusedRows = audit.entries.filter((e) => e.outcome === 'refused').length;
        const refusedRequests = tallies['pairing: request for an enrolled id']?.attempts ?? 0;

        // ---- the legitimate work finished undisturbed.
        for (const c of legit) {
          for (let t = 0; t < TASKS_EACH; t++) {
            await c.waitFor(
              'task_completed',
              { task_id: await waitCreated(c, `${c.clientId}-t${t}`) },
              60_000,
            );
          }
        }
        let disturbed = 0;
        for (const c of legit) {
          if (!c.isOpen || c.closed !== undefined) disturbed++;
          const perTask = new Map<string, number>();
          for (const e of c.executions) perTask.set(e.taskId, (perTask.get(e.taskId) ?? 0) + 1);
          for (const n of perTask.values()) expect(n).toBe(STEPS);
          expect(new Set(c.executions.map((e) => e.callId)).size).toBe(c.executions.length);
        }
        // Computers with keys are never throttled by the attacker's failures on the same address.
        const after = await fetch(`${s.url}/api/tasks`, { headers: bearer(opKey) });
        expect(after.status).toBe(200);

        const rows = Object.entries(tallies).map(([k, v]) => `| ${k} | ${v.attempts} | ${v.accepted} |`);
        const total = Object.values(tallies).reduce(
          (a, t) => ({ attempts: a.attempts + t.attempts, accepted: a.accepted + t.accepted }),
          { attempts: 0, accepted: 0 },
        );
        console.log(
          [
            `[adversary] ${COMPUTERS} legitimate computers, ${COMPUTERS * TASKS_EACH} tasks × ${STEPS} calls; disturbed sessions: ${disturbed}`,
            '| attack | attempts | accepted |',
            ...rows,
            `| total | ${total.attempts} | ${total.accepted} |`,
            `[adversary] brute force: ${throttled} of ${GUESSES} HTTP guesses answered 429 (throttled)`,
            `[adversary] audit: ${refusedRequests} refused pairing requests (${spam} of them answered 409 client_taken from 127.0.0.2, the rest 429 from the throttled 127.0.0.1) wrote ${refusedRows} audit rows`,
          ].join('\n'),
        );
        for (const [k, v] of Object.entries(tallies)) expect(v.accepted, k).toBe(0);
        expect(disturbed).toBe(0);
        expect(throttled).toBeGreaterThan(GUESSES - 20);
        // One row per reason and minute (the run takes a few minutes at most).
        expect(spam).toBe(40);
        expect(refusedRows).toBeGreaterThanOrEqual(1);
        expect(refusedRows).toBeLessThanOrEqual(5);
        evil.close();
        for (const c of legit) c.close();
      } finally {
        await s.kill9();
      }
    });
  },
);

async function waitCreated(c: SimClient, requestId: string): Promise<string> {
  return String((await c.waitFor('task_created', { request_id: requestId }, 30_000)).task_id);
}
