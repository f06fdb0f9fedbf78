// The built server says which computer sends results it refuses: a command_result for an unknown call, one from a
// client the call was not sent to, and a malformed one are each logged once per client and code (with the client id,
// the code and the call id) while the metric counts every refusal. Guards against a misbehaving computer that only
// shows up as a number in /metrics, and against a flooder filling the log.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { serve, type Served } from './support/spawn.js';
import { TestClient } from './support/ws-test-client.js';

let fake: FakeOllama;
let dir: string;
let server: Served | undefined;
const clients: TestClient[] = [];

beforeAll(async () => {
  fake = await startFakeOllama({ installed: ['qwen3:8b'] });
  dir = mkdtempSync(path.join(tmpdir(), 'orch-refusals-'));
});
afterEach(async () => {
  for (const c of clients.splice(0)) c.close();
  await server?.kill9();
  server = undefined;
});
afterAll(async () => {
  await fake.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The JSON log lines the server wrote (stdout or stderr) whose message starts with `prefix`. */
function logLines(s: Served, prefix: string): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  for (const line of `${s.stdout()}\n${s.stderr()}`.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      const o = JSON.parse(line) as Record<string, unknown>;
      if (typeof o.msg === 'string' && o.msg.startsWith(prefix)) out.push(o);
    } catch {
      // not a log line
    }
  }
  return out;
}

async function connect(url: string, id: string): Promise<TestClient> {
  const c = new TestClient(url.replace(/^http/, 'ws'));
  clients.push(c);
  await c.opened;
  c.send({ type: 'hello', client_id: id, protocol_version: 1, commands: [] });
  await c.waitFor('welcome');
  return c;
}

describe('refused command results in the log', () => {
  it('logs the client, code and call id once per client and code, and the metric counts all', async () => {
    server = await serve(['--port', '0', '--db', path.join(dir, 'a.db'), '--ollama-url', fake.url]);
    const bad = await connect(server.url, 'pc-forger');
    for (let i = 0; i < 5; i++) {
      bad.send({ type: 'command_result', task_id: 't-1', call_id: `forged-${i}`, ok: true, result: 'x' });
      expect(await bad.waitFor('error', { call_id: `forged-${i}` })).toMatchObject({ code: 'unknown_call' });
    }
    // Malformed: ok=false without an error.
    bad.send({ type: 'command_result', task_id: 't-1', call_id: 'broken-1', ok: false });
    const invalid = await bad.waitFor('error', { call_id: 'broken-1' });
    expect(invalid.code).not.toBe('unknown_call');
    const other = await connect(server.url, 'pc-other');
    other.send({ type: 'command_result', task_id: 't-2', call_id: 'forged-x', ok: true, result: 1 });
    await other.waitFor('error');

    const s = server;
    const deadline = Date.now() + 5000;
    while (logLines(s, 'command_result refused').length < 3 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
    }
    const lines = logLines(s, 'command_result refused');
    expect(lines.map((l) => [l.client_id, l.code, l.call_id])).toEqual([
      ['pc-forger', 'unknown_call', 'forged-0'],
      ['pc-forger', invalid.code, 'broken-1'],
      ['pc-other', 'unknown_call', 'forged-x'],
    ]);
    expect(String(lines[0]?.msg)).toContain('no open call forged-0');
    const metrics = await (await fetch(`${s.url}/metrics`)).text();
    const count = (code: string): number =>
      Number(
        new RegExp(`^ccagent_ws_errors_sent_total\\{code="${code}"\\} (\\d+)$`, 'm').exec(metrics)?.[1] ?? 0,
      );
    expect(count('unknown_call')).toBe(6);
    expect(count(String(invalid.code))).toBe(1);
  });
});
