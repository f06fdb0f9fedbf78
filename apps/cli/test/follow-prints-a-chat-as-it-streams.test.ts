// `ccagent tasks follow --url` on a chat task: the built CLI against the built orchestrator, the fake Ollama server
// streaming the reply in small pieces. The reply is printed as the model writes it (the event stream's `delta`
// records), before the step's records and the task's end.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { orchestratorBuilt, startOrchestrator, type RunningOrchestrator } from './support/orchestrator.js';
import { runCli } from './support/run-cli.js';

const REPLY = 'A turtle is a small robot: it digs, builds and carries items, and it runs Lua programs.';

describe.skipIf(!orchestratorBuilt)('tasks follow on a chat task', () => {
  let fake: FakeOllama;
  let server: RunningOrchestrator;
  let dir: string;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'ccagent-cli-chat-'));
    fake = await startFakeOllama();
    // The server answers after 2 s (the follower subscribes first), then streams 4 characters every 25 ms.
    fake.script('qwen3:8b', [
      { content: REPLY, chunkChars: 4, fault: { latencyMs: 2000, tokenDelayMs: 25 } },
    ]);
    server = await startOrchestrator({ db: path.join(dir, 'ccagent.db'), ollamaUrl: fake.url });
  });
  afterAll(async () => {
    await server?.stop();
    await fake?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('prints the reply as it streams, before the step records and the end (guards: a chat reply only printed whole, at the end)', async () => {
    const created = await runCli([
      '--url',
      server.url,
      'tasks',
      'create',
      '--kind',
      'chat',
      '--prompt',
      'What is a turtle?',
    ]);
    expect(created.code, created.stderr).toBe(0);
    const id = /^created (\S+) /.exec(created.stdout)?.[1] as string;
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
});
