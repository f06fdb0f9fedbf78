// `ccagent tasks follow --url` on a chat task: the built CLI against the built orchestrator, the fake Ollama server
// streaming the reply in small pieces. The reply is printed as the model writes it (the event stream's `delta`
// records), before the step's records and the task's end.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { orchestratorBuilt, startOrchestrator, type RunningOrchestrator } from './support/orchestrator.js';
import { runCli, startCli } from './support/run-cli.js';

const REPLY = 'A turtle is a small robot: it digs, builds and carries items, and it runs Lua programs.';
const SECOND = 'Call turtle.dig() to mine the block in front of it.';
/** The server answers after `latencyMs`, then streams 4 characters every 25 ms. */
const slow = (content: string, latencyMs = 2000) => ({
  content,
  chunkChars: 4,
  fault: { latencyMs, tokenDelayMs: 25 },
});

describe.skipIf(!orchestratorBuilt)('tasks follow on a chat task', () => {
  let fake: FakeOllama;
  let server: RunningOrchestrator;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'ccagent-cli-chat-'));
    fake = await startFakeOllama();
    // The followed reply waits 6 s: time for the follower (a separate process) to start and subscribe on a loaded
    // machine; what it prints is checked, not when.
    fake.script('qwen3:8b', [slow(REPLY, 6000), slow(REPLY), slow(SECOND)]);
    server = await startOrchestrator({ db: path.join(dir, 'ccagent.db'), ollamaUrl: fake.url });
  });
  afterAll(async () => {
    await server?.stop();
    await fake?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('prints the reply as it streams, before the step records and the end (guards: a chat reply only printed whole, at the end)', async () => {
    // Created over HTTP (no CLI start-up before the follower's).
    const res = await fetch(`${server.url}/api/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ task_kind: 'chat', prompt: 'What is a turtle?' }),
    });
    expect(res.status).toBe(201);
    const id = ((await res.json()) as { task: { id: string } }).task.id;
    const r = await runCli(['--url', server.url, '--json', 'tasks', 'follow', id], {}, 30_000);
    expect(r.code, r.stderr).toBe(0);
    const events = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { event: string; delta?: string; step?: unknown });
    const deltas = events.filter((e) => e.event === 'delta');
    expect(deltas.map((e) => e.delta).join('')).toBe(REPLY);
    expect(deltas.length).toBeGreaterThanOrEqual(3);
    const lastDelta = events.lastIndexOf(deltas.at(-1) as (typeof events)[number]);
    const modelRecord = events.findIndex(
      (e) => e.event === 'step' && (e.step as { kind?: string } | undefined)?.kind === 'native',
    );
    expect(modelRecord).toBeGreaterThan(lastDelta);
    expect(events.at(-1)?.event).toBe('end');
  });

  it('ccagent chat prints the reply as it streams and exits 0; --task continues the same conversation (guards: a chat from the CLI being a task to create and then follow by hand)', async () => {
    const started = Date.now();
    const child = startCli(['--url', server.url, 'chat', 'What', 'is', 'a', 'turtle?']);
    let stdout = '';
    let stderr = '';
    let firstAt: number | undefined;
    child.stdout?.setEncoding('utf8').on('data', (d: string) => {
      firstAt ??= Date.now();
      stdout += d;
    });
    child.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const exitCode = await new Promise<number | null>((resolve) => child.on('close', resolve));
    const endedAt = Date.now();
    expect(exitCode, stderr).toBe(0);
    expect(stdout).toBe(`${REPLY}\n`);
    // Text came out while the reply streamed (~0.6 s of pieces), not all at the end.
    expect(endedAt - (firstAt ?? endedAt)).toBeGreaterThan(200);
    expect(endedAt - started).toBeGreaterThan(2000);
    const id = /ccagent chat --task (\S+)/.exec(stderr)?.[1] as string;
    expect(id).toBeTruthy();
    const more = await runCli(
      ['--url', server.url, 'chat', '--task', id, 'How do I make it mine?'],
      {},
      30_000,
    );
    expect(more.code, more.stderr).toBe(0);
    expect(more.stdout).toBe(`${SECOND}\n`);
    const last = fake.chatRequests('qwen3:8b').at(-1)?.body as {
      messages: Array<{ role: string; content: string }>;
    };
    expect(last.messages.map((m) => `${m.role}: ${m.content}`)).toContain(`assistant: ${REPLY}`);
  });
});
