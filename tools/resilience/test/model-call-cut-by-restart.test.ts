/**
 * A model call cut short by kill -9 of the orchestrator: the request the model server received is in the step log
 * (written before the request left), with no reply recorded for it, followed by the engine's `resumed` marker and
 * the repeated call. Guards against a step log that silently misses requests the model server saw — a person
 * comparing the log with the server's own log (or its GPU time) would find calls nobody recorded.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { jobPrompt, jobScript, MODEL } from './support/model.js';
import { eventually, faultConfig, startServer, taskDetail, type Server } from './support/server.js';
import { SimClient } from './support/sim-client.js';

/** The environment without FORCE_COLOR. */
function withoutColor(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { FORCE_COLOR: _force, ...rest } = env;
  void _force;
  return rest;
}

/** The built `ccagent` CLI (a dev dependency of this suite, so Nx builds it first). */
const CLI = path.resolve(import.meta.dirname, '../../../apps/cli/dist/main.js');

interface WireStep {
  seq: number;
  step: number;
  kind: string;
  model?: string;
  input?: { messages?: Array<{ role: string; content: string }> };
  output?: { role?: string };
  started_at?: number;
}

let dir: string;
let fake: FakeOllama;
let slow = true;
let server: Server | undefined;
let client: SimClient | undefined;

beforeAll(async () => {
  fake = await startFakeOllama({ installed: [MODEL] });
  const job = jobScript();
  // The first process's model call never answers in time: the kill lands while it is in flight.
  fake.script(MODEL, (req) => {
    const reply = job(req);
    return slow && typeof reply === 'object' ? { ...reply, fault: { latencyMs: 60_000 } } : reply;
  });
});
afterEach(async () => {
  client?.kill();
  await server?.kill9();
  server = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
});
afterAll(async () => {
  await fake.close();
});

const messagesOf = (body: unknown): Array<{ role: string; content: string }> =>
  ((body as { messages?: Array<{ role: string; content: string }> }).messages ?? []).map((m) => ({
    role: m.role,
    content: m.content,
  }));

describe('a model call cut short by a restart', () => {
  it('leaves the request the model server received in the step log, then the resumed marker and the repeat', async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'resilience-cut-call-'));
    const db = path.join(dir, 'ccagent.db');
    const opts = { db, config: faultConfig(), ollamaUrl: fake.url };
    server = await startServer(opts);
    client = new SimClient('pc-cut', { autoAnswer: true });
    await client.connect(server.url);
    const before = fake.chatRequests(MODEL).length;
    const res = await server.http('/api/tasks', {
      method: 'POST',
      json: { task_kind: 'general_agent', prompt: jobPrompt('cut', 1), client_id: 'pc-cut' },
    });
    expect(res.status).toBe(201);
    const taskId = ((await res.json()) as { task: { id: string } }).task.id;
    await eventually(() => fake.chatRequests(MODEL).length > before, 10_000, 'the first model request');
    await server.kill9();

    slow = false;
    server = await startServer(opts);
    client.kill();
    client = new SimClient('pc-cut', { autoAnswer: true });
    await client.connect(server.url);
    await eventually(
      async () => (await taskDetail(server as Server, taskId)).task.status === 'completed',
      20_000,
      'task completed after the restart',
    );

    const page = (await (await server.http(`/api/tasks/${taskId}/steps?limit=500`)).json()) as {
      steps: WireStep[];
    };
    const steps = page.steps;
    const requests = steps.filter((s) => s.kind === 'model_request');
    const received = fake.chatRequests(MODEL).slice(before);
    // Every request the model server received is in the step log, in order, with exactly what was sent.
    expect(requests).toHaveLength(received.length);
    requests.forEach((r, i) => {
      expect(r.model).toBe(MODEL);
      expect(r.output?.role).toBe('native');
      expect(r.input?.messages?.map((m) => ({ role: m.role, content: m.content }))).toEqual(
        messagesOf(received[i]?.body),
      );
    });
    // The first request never got a reply recorded: no native record has its start, and the resumed marker follows.
    const cut = requests[0] as WireStep;
    expect(steps.some((s) => s.kind === 'native' && s.started_at === cut.started_at)).toBe(false);
    const resumed = steps.find((s) => s.kind === 'resumed');
    expect(resumed?.seq).toBeGreaterThan(cut.seq);
    expect(resumed?.step).toBe(cut.step);
    // Every later request has its finished record (same start).
    for (const r of requests.slice(1)) {
      expect(steps.some((s) => s.kind === 'native' && s.started_at === r.started_at)).toBe(true);
    }

    // What a person reads: the cut request once, said to have no reply; answered requests are not repeated.
    await server.kill9();
    server = undefined;
    const shown = execFileSync(process.execPath, [CLI, '--db', db, 'tasks', 'show', taskId], {
      encoding: 'utf8',
      // Plain text: a test runner's FORCE_COLOR would make the CLI paint the record heads.
      env: { ...withoutColor(process.env), NO_COLOR: '1', TZ: 'UTC' },
    });
    expect(shown.match(/native request/g)).toHaveLength(1);
    expect(shown).toContain('no reply recorded: the call was cut short');
    expect(shown.match(/ native {2}qwen3:8b/g)?.length).toBe(requests.length - 1);
  });
});
