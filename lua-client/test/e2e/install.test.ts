// End to end: the one-command install from the real orchestrator (started with a token). An empty CC computer runs
// `wget run http://127.0.0.1:PORT/lua/install.lua --token …`, then boots the host the way the written startup file
// does; the installed host connects to that orchestrator with the token and runs the commands of a task created
// over HTTP.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SRC_DIR, startComputer, type Computer } from '../craftos/craftos.js';
import { buildManifest } from '../craftos/lua-files.js';
import { MODELS, Stack, craftos } from './stack.js';

const HELLO = 'print("installed host ran me")';

const INSTALL_THEN_BOOT = `
local base = ...
shell.run("wget", "run", base .. "/lua/install.lua", "--token", "e2e-s3cret-token", "--id", "e2e-installed")
-- what the next boot runs: the host beside a new shell
shell.run("/startup/ccagent.lua")
`;

interface ClientRow {
  client_id: string;
  connected: boolean;
  client_version?: string;
  commands: Array<{ name: string }>;
}

describe.skipIf(!craftos)('end to end: installer served by the orchestrator', () => {
  let stack: Stack;
  let c: Computer | undefined;
  beforeAll(async () => {
    stack = await Stack.start({ token: 'e2e-s3cret-token' });
  });
  afterAll(async () => {
    await c?.stop();
    await stack?.close();
  });

  it('wget run …/lua/install.lua installs the client; the installed host connects and runs a task’s commands', async () => {
    stack.fake.script(MODELS.native, [
      {
        toolCalls: [{ name: 'fs_write', arguments: { path: '/hello.lua', content: HELLO } }],
      },
      { toolCalls: [{ name: 'shell_exec', arguments: { command: 'hello' } }] },
      'hello.lua printed its line.',
    ]);
    c = startComputer(craftos!, INSTALL_THEN_BOOT, {
      args: [stack.url],
      mountLibrary: false,
      timeoutMs: 60_000,
    });
    const computer = c;
    const clients = await stack.until(
      'the installed host to connect',
      () => stack.get<{ clients: ClientRow[] }>('/api/clients'),
      (r) => r.clients.some((x) => x.client_id === 'e2e-installed' && x.connected),
    );
    const me = clients.clients.find((x) => x.client_id === 'e2e-installed');
    expect(me?.client_version).toBe('0.1.0');
    expect(me?.commands.map((x) => x.name)).toEqual(expect.arrayContaining(['shell_exec', 'fs_write']));

    // What was installed is the orchestrator's bundle, identical to lua-client/src (a stale orchestrator build
    // shows up here: rebuild it with nx).
    const files = buildManifest(SRC_DIR).files.filter((f) => f.path !== 'install.lua');
    for (const f of files) {
      const installed = path.join(computer.disk, 'ccagent', f.path);
      const same =
        existsSync(installed) && readFileSync(installed).equals(readFileSync(path.join(SRC_DIR, f.path)));
      expect(
        same,
        `${f.path} differs from lua-client/src: stale orchestrator build? (nx run orchestrator:build)`,
      ).toBe(true);
    }
    const config = JSON.parse(
      readFileSync(path.join(computer.disk, '.ccagent', 'config.json'), 'utf8'),
    ) as unknown;
    expect(config).toEqual({
      server_url: stack.url,
      ws_url: stack.wsUrl,
      token: 'e2e-s3cret-token',
      client_id: 'e2e-installed',
    });
    // The API really wants the token the installed host presented in its hello.
    expect((await fetch(`${stack.url}/api/clients`)).status).toBe(401);

    const created = await stack.post<{ task: { id: string } }>('/api/tasks', {
      task_kind: 'general_agent',
      prompt: 'Write hello.lua and run it from the shell.',
      client_id: 'e2e-installed',
    });
    expect(created.status).toBe(201);
    const detail = await stack.until(
      'the task to end',
      () => stack.task(created.body.task.id),
      (d) => ['completed', 'failed'].includes(d.task.status),
    );
    expect(detail.task.status, JSON.stringify(detail.task)).toBe('completed');
    expect(detail.command_calls.map((x) => [x.command, x.status, x.outcome?.result])).toEqual([
      ['fs_write', 'succeeded', { path: '/hello.lua', bytes: HELLO.length }],
      ['shell_exec', 'succeeded', { ok: true, output: 'installed host ran me' }],
    ]);
    expect(readFileSync(path.join(computer.disk, 'hello.lua'), 'utf8')).toBe(
      'print("installed host ran me")',
    );
  });
});
