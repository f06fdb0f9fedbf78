// The event hub's replay under a Minecraft log flood (issue 36): the built server, a mod on a real WebSocket sending
// 10,000 log lines at once, a reader on GET /api/events. The flood is streamed at the per-instance rate with every
// line left out counted (`dropped`), the Minecraft records have their own replay buffer, and a reader reconnecting
// with Last-Event-ID from before the flood still gets the task records published before it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ModClient, type ActionRunner } from '@ccagent/minecraft';
import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from './support/minecraft.js';
import { serveWithConfig, type Served } from './support/spawn.js';

const TOKEN = 'operator-token-flood';
const LINES = 10_000;

let dir: string;
let fake: FakeOllama;
let orch: Served;
let mod: ModClient;

const runner: ActionRunner = {
  state: () => null,
  run: () => Promise.resolve({ ok: true, result: null }),
};

interface Rec {
  id: string;
  event: string;
  data: Record<string, unknown>;
}

/** A reader of GET /api/events: every record it got so far, and `close()`. */
function stream(headers: Record<string, string> = {}): {
  records: Rec[];
  close: () => void;
  ended: Promise<void>;
} {
  const ctl = new AbortController();
  const records: Rec[] = [];
  const ended = (async () => {
    const res = await fetch(`${orch.url}/api/events`, {
      headers: { authorization: `Bearer ${TOKEN}`, accept: 'text/event-stream', ...headers },
      signal: ctl.signal,
    });
    expect(res.status).toBe(200);
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let buf = '';
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value;
        let cut: number;
        while ((cut = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, cut);
          buf = buf.slice(cut + 2);
          const event = /^event: (.*)$/m.exec(block)?.[1];
          const data = /^data: (.*)$/m.exec(block)?.[1];
          const id = /^id: (.*)$/m.exec(block)?.[1] ?? '';
          if (event !== undefined && data !== undefined)
            records.push({ id, event, data: JSON.parse(data) as Rec['data'] });
        }
      }
    } catch (err) {
      if (!ctl.signal.aborted) throw err;
    }
  })();
  return { records, close: () => ctl.abort(), ended };
}

async function until(cond: () => boolean | Promise<boolean>, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'flood-'));
  fake = await startFakeOllama({ installed: ['m'] });
  const mcPort = await freePort();
  // The mod endpoint's own rate limit (50 frames/s by default) raised, so the whole flood reaches the event hub.
  orch = await serveWithConfig(
    dir,
    fake.url,
    {
      models: { planner: { name: 'm' }, executor: { name: 'm' }, native: { name: 'm' } },
      server: { rateLimit: { messagesPerSecond: 1_000_000, burst: 100_000 } },
    },
    ['--token', TOKEN, '--mc-port', String(mcPort), '--log-level', 'warn'],
  );
  mod = new ModClient({
    url: `ws://127.0.0.1:${mcPort}`,
    instanceId: 'Flood',
    token: TOKEN,
    runner,
    version: '1.20.1',
    reconnectDelayMs: 200,
  });
  await mod.start();
  await until(async () => {
    const r = await fetch(`${orch.url}/api/minecraft/instances`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    const body = (await r.json()) as { instances: Array<{ instance_id: string; connected: boolean }> };
    return body.instances.some((i) => i.instance_id === 'Flood' && i.connected);
  });
}, 60_000);

afterAll(async () => {
  mod?.close();
  await orch?.kill9();
  await fake?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('a Minecraft log flood on the event stream', () => {
  it('streams 10,000 lines at the rate with every other line counted, and a resume from before it still replays the task records', async () => {
    const live = stream();
    await until(() => live.records.some((r) => r.event === 'hello'));
    const hello = live.records.find((r) => r.event === 'hello')!;
    const taskIds: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await fetch(`${orch.url}/api/tasks`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ task_kind: 'general', prompt: `before the flood ${i}` }),
      });
      expect(r.status).toBe(201);
      taskIds.push(((await r.json()) as { task: { id: string } }).task.id);
    }
    await until(() =>
      taskIds.every((id) => live.records.some((r) => r.event === 'task' && r.data['id'] === id)),
    );

    for (let i = 1; i <= LINES; i++) mod.log(`flood line ${i}`);
    // Every line is either streamed or counted in a `dropped` line (sent once the flood stops).
    const accounted = (): number =>
      live.records
        .filter((r) => r.event === 'mc_log' && r.data['instance_id'] === 'Flood')
        .reduce((n, r) => n + (typeof r.data['dropped'] === 'number' ? r.data['dropped'] : 1), 0);
    await until(() => accounted() === LINES, 30_000);
    const logs = live.records.filter((r) => r.event === 'mc_log');
    const streamed = logs.filter((r) => r.data['dropped'] === undefined);
    const markers = logs.filter((r) => r.data['dropped'] !== undefined);
    // The burst (200) and 50 a second while the flood lasts: far fewer than the flood.
    expect(streamed.length).toBeGreaterThanOrEqual(200);
    expect(streamed.length).toBeLessThan(1000);
    expect(markers.length).toBeGreaterThanOrEqual(1);
    expect(markers.at(-1)?.data['message']).toMatch(/lines not streamed/);
    // The last line left out names its seq: nothing after the marker is older.
    const seqs = logs.map((r) => r.data['seq'] as number);
    expect([...seqs].sort((a, b) => a - b)).toEqual(seqs);
    live.close();

    // A reader that dropped before the flood resumes: the task records come back, not a resync.
    const resumed = stream({ 'last-event-id': hello.id });
    await until(() =>
      taskIds.every((id) => resumed.records.some((r) => r.event === 'task' && r.data['id'] === id)),
    );
    expect(resumed.records[0]?.event).not.toBe('resync');
    expect(resumed.records.some((r) => r.event === 'resync' && r.data['reason'] === 'unknown_event_id')).toBe(
      false,
    );
    resumed.close();
    await Promise.allSettled([live.ended, resumed.ended]);
  }, 60_000);
});
