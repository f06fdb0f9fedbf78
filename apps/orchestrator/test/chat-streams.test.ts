/**
 * The direct chat mode, end to end: the built `cc-orchestrator serve`, a temp SQLite file, the real `ollama` client
 * streaming from the fake model server (NDJSON chunks with a delay between them). A computer creates a `chat` task
 * over WebSocket; its reply reaches the computer as `task_update` deltas and an HTTP reader of `GET /api/events` as
 * `delta` records while the model writes it, throttled, all before `task_completed`; the step log holds the whole
 * text. A follow-up message over HTTP continues the same conversation, streamed again.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { serve, type Served } from './support/spawn.js';
import { TestClient } from './support/ws-test-client.js';

type Rec = Record<string, unknown>;

let dir: string;
let fake: FakeOllama;
const servers: Served[] = [];
const clients: TestClient[] = [];

beforeEach(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'cco-chat-'));
  fake = await startFakeOllama({ installed: ['qwen3:8b'] });
});
afterEach(async () => {
  for (const c of clients.splice(0)) c.terminate();
  for (const s of servers.splice(0)) await s.kill9();
  await fake.close();
  rmSync(dir, { recursive: true, force: true });
});

const FIRST =
  'A turtle is a small robot from the ComputerCraft mod. It can move, dig, place blocks and carry items, ' +
  'and it runs Lua programs like any computer.';
const SECOND =
  'Call turtle.dig() to mine the block in front of it, then turtle.forward() to move into the gap.';
/** Pieces of 4 characters, 25 ms apart: each reply streams for about a second. */
const streamed = (content: string) => ({
  content,
  chunkChars: 4,
  fault: { latencyMs: 300, tokenDelayMs: 25 },
});

/** Read `GET /api/events?task=<id>` until `done` holds for the records seen; returns them. */
async function readEvents(
  s: Served,
  id: string,
  done: (records: Array<{ event: string; data: Rec }>) => boolean,
): Promise<Array<{ event: string; data: Rec }>> {
  const ctl = new AbortController();
  const timer = setTimeout(() => ctl.abort(), 20_000);
  const res = await fetch(`${s.url}/api/events?task=${encodeURIComponent(id)}`, { signal: ctl.signal });
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  const out: Array<{ event: string; data: Rec }> = [];
  let buf = '';
  try {
    for (;;) {
      const { value, done: ended } = await reader.read();
      if (ended) break;
      buf += decoder.decode(value, { stream: true });
      let end: number;
      while ((end = buf.indexOf('\n\n')) >= 0) {
        const record = buf.slice(0, end);
        buf = buf.slice(end + 2);
        const event = /^event: (.*)$/m.exec(record)?.[1];
        const data = /^data: (.*)$/m.exec(record)?.[1];
        if (event !== undefined && data !== undefined) out.push({ event, data: JSON.parse(data) as Rec });
      }
      if (done(out)) return out;
    }
  } finally {
    clearTimeout(timer);
    ctl.abort();
  }
  throw new Error(`event stream ended early: ${JSON.stringify(out)}`);
}

const completedIn = (records: Array<{ event: string; data: Rec }>, after = 0) =>
  records.filter((r) => r.event === 'task' && r.data.status === 'completed').length > after;

it('a chat task streams its reply to the computer (task_update.delta) and to /api/events while the model writes it, throttled, and a follow-up message continues the conversation (guards: a reply only seen whole, every prompt a new chat)', async () => {
  fake.script('qwen3:8b', [streamed(FIRST), streamed(SECOND)]);
  const s = await serve([
    '--port',
    '0',
    '--db',
    path.join(dir, 'ccagent.db'),
    '--ollama-url',
    fake.url,
    '--log-level',
    'warn',
  ]);
  servers.push(s);
  const c = await TestClient.connect(s.url, 'pc-1', { commands: [{ name: 'fs_list' }] });
  clients.push(c);
  c.send({
    type: 'create_task',
    request_id: 'r1',
    task_kind: 'chat',
    client_id: 'pc-1',
    prompt: 'What is a turtle?',
    allowed_commands: [],
  });
  const id = String((await c.waitFor('task_created', { request_id: 'r1' })).task_id);
  // The model server answers after 300 ms: the reader is subscribed before the first piece.
  const events = await readEvents(s, id, (r) => completedIn(r));
  await c.waitFor('task_completed', { task_id: id });

  const wsDeltas = c.messages.filter(
    (m) => m.type === 'task_update' && m.task_id === id && m.delta !== undefined,
  );
  const pieces = Math.ceil(FIRST.length / 4);
  expect(wsDeltas.map((m) => m.delta).join('')).toBe(FIRST);
  // Streamed (several updates) but throttled (fewer updates than the server's pieces: ≤ 10 a second).
  expect(wsDeltas.length).toBeGreaterThanOrEqual(3);
  expect(wsDeltas.length).toBeLessThan(pieces / 2);
  expect(wsDeltas.every((m) => m.status === 'running')).toBe(true);
  // Every delta before the task's end.
  const completedAt = c.messages.findIndex((m) => m.type === 'task_completed' && m.task_id === id);
  expect(c.messages.indexOf(wsDeltas.at(-1) as (typeof c.messages)[number])).toBeLessThan(completedAt);
  expect(c.messages[completedAt]?.result).toMatchObject({ message: FIRST });

  const sseDeltas = events.filter((r) => r.event === 'delta');
  expect(sseDeltas.map((r) => r.data.delta).join('')).toBe(FIRST);
  expect(sseDeltas.length).toBeGreaterThanOrEqual(3);
  expect(sseDeltas.every((r) => r.data.task_id === id && typeof r.data.step === 'number')).toBe(true);
  const lastDelta = events.lastIndexOf(sseDeltas.at(-1) as (typeof events)[number]);
  expect(lastDelta).toBeLessThan(
    events.findIndex((r) => r.event === 'task' && r.data.status === 'completed'),
  );

  // The whole text is in the step log; the request offered no tools.
  const detail = (await (await fetch(`${s.url}/api/tasks/${id}`)).json()) as {
    steps: Array<Rec & { kind: string; output?: Rec }>;
  };
  expect(detail.steps.find((st) => st.kind === 'native')?.output).toMatchObject({ content: FIRST });
  const req1 = fake.chatRequests('qwen3:8b')[0]?.body as { tools?: unknown[]; stream?: boolean };
  expect(req1.tools ?? []).toEqual([]);

  // A follow-up message over HTTP: the same task answers again, streamed to the computer that created it.
  const before = c.messages.length;
  const more = readEvents(s, id, (r) => completedIn(r));
  const completedAgain = c.nextNew('task_completed', { task_id: id }, 20_000);
  const m = await fetch(`${s.url}/api/tasks/${id}/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ text: 'How do I make it mine?' }),
  });
  expect(m.status).toBe(200);
  const again = await more;
  expect((await completedAgain).result).toMatchObject({ message: SECOND });
  const wsAgain = c.messages
    .slice(before)
    .filter((x) => x.type === 'task_update' && x.task_id === id && x.delta !== undefined);
  expect(wsAgain.map((x) => x.delta).join('')).toBe(SECOND);
  expect(
    again
      .filter((r) => r.event === 'delta')
      .map((r) => r.data.delta)
      .join(''),
  ).toBe(SECOND);
  const msgs = (
    fake.chatRequests('qwen3:8b')[1]?.body as { messages: Array<{ role: string; content: string }> }
  ).messages;
  const roles = msgs.map((x) => `${x.role}: ${x.content}`);
  expect(roles).toContain(`assistant: ${FIRST}`);
  expect(roles.at(-1)).toBe('user: How do I make it mine?');
});
