// End to end: a computer paired with an enrollment code. The operator issues a code (the orchestrator's HTTP API,
// as `ccagent clients enroll` does); an empty CC computer runs `wget run …/lua/install.lua --code CODE`, which
// trades the code for the computer's own key and stores it; the installed host connects with that key and runs a
// task's commands; a connection that claims the same id without the key is refused and the host stays connected;
// revoking the key closes the host's socket within a second.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startComputer, type Computer } from '../craftos/craftos.js';
import { MODELS, Stack, craftos } from './stack.js';

const TOKEN = 'e2e-operator-token';

const INSTALL_THEN_BOOT = `
local base, code = ...
shell.run("wget", "run", base .. "/lua/install.lua", "--code", code)
shell.run("/startup/ccagent.lua")
`;

interface ClientRow {
  client_id: string;
  connected: boolean;
}

describe.skipIf(!craftos)('end to end: a computer paired with an enrollment code', () => {
  let stack: Stack;
  let c: Computer | undefined;
  beforeAll(async () => {
    stack = await Stack.start({ token: TOKEN });
  });
  afterAll(async () => {
    await c?.stop();
    await stack?.close();
  });

  it('installs with --code, connects with its own key, keeps its id against an impostor, and is cut off by revocation', async () => {
    stack.fake.script(MODELS.native, [
      { toolCalls: [{ name: 'fs_write', arguments: { path: '/paired.txt', content: 'mine' } }] },
      'written',
    ]);
    const issued = await stack.post<{ code: string }>('/api/credentials/enroll', { client_id: 'e2e-paired' });
    expect(issued.status).toBe(201);
    c = startComputer(craftos!, INSTALL_THEN_BOOT, {
      args: [stack.url, issued.body.code],
      mountLibrary: false,
      timeoutMs: 60_000,
    });
    const computer = c;
    await stack.until(
      'the paired host to connect',
      () => stack.get<{ clients: ClientRow[] }>('/api/clients'),
      (r) => r.clients.some((x) => x.client_id === 'e2e-paired' && x.connected),
    );
    const config = JSON.parse(readFileSync(path.join(computer.disk, '.ccagent', 'config.json'), 'utf8')) as {
      token: string;
      client_id: string;
    };
    expect(config.client_id).toBe('e2e-paired');
    expect(config.token).toMatch(/^cck_/);
    expect(config.token).not.toBe(TOKEN);
    // The code was single-use.
    const replay = await fetch(`${stack.url}/api/pair`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ code: issued.body.code, client_id: 'e2e-paired' }),
    });
    expect(replay.status).toBe(403);

    // An impostor with the shared token (another player's computer that learned it) cannot take the id.
    const refused = await new Promise<{ code: number; error: unknown }>((resolve) => {
      const ws = new WebSocket(`${stack.wsUrl}`);
      let error: unknown;
      ws.on('open', () =>
        ws.send(
          JSON.stringify({
            type: 'hello',
            client_id: 'e2e-paired',
            token: TOKEN,
            protocol_version: 1,
            commands: [],
          }),
        ),
      );
      ws.on('message', (d: Buffer) => (error = JSON.parse(d.toString('utf8'))));
      ws.on('close', (code: number) => resolve({ code, error }));
    });
    expect(refused.code).toBe(4001);
    expect(refused.error).toMatchObject({ type: 'error', code: 'unauthorized' });

    const created = await stack.post<{ task: { id: string } }>('/api/tasks', {
      task_kind: 'general_agent',
      prompt: 'write paired.txt',
      client_id: 'e2e-paired',
    });
    expect(created.status).toBe(201);
    const detail = await stack.until(
      'the task to end',
      () => stack.task(created.body.task.id),
      (d) => ['completed', 'failed'].includes(d.task.status),
    );
    expect(detail.task.status, JSON.stringify(detail.task)).toBe('completed');
    expect(readFileSync(path.join(computer.disk, 'paired.txt'), 'utf8')).toBe('mine');

    const t0 = Date.now();
    const revoked = await stack.post<{ revoked: unknown[] }>('/api/credentials/revoke', {
      client_id: 'e2e-paired',
    });
    expect(revoked.status).toBe(200);
    await stack.until(
      'the revoked host to be disconnected',
      () => stack.get<{ clients: ClientRow[] }>('/api/clients'),
      (r) => r.clients.some((x) => x.client_id === 'e2e-paired' && !x.connected),
      5_000,
    );
    const ms = Date.now() - t0;
    expect(ms).toBeLessThan(1000);
    // It keeps retrying with the revoked key and is refused every time.
    await new Promise((r) => setTimeout(r, 1500));
    const after = await stack.get<{ clients: ClientRow[] }>('/api/clients');
    expect(after.clients.find((x) => x.client_id === 'e2e-paired')?.connected).toBe(false);
  });
});
