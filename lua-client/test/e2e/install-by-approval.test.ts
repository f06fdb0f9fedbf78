// End to end: a computer paired by request and approval. An empty CC computer runs
// `wget run …/lua/install.lua --pair --id e2e-asker`; it shows up as pending (what `ccagent clients pending` lists)
// with the match code the computer printed, and gets no key and no connection until the operator approves it
// (as `ccagent clients approve` does); then the installer collects its own key, and the installed host connects
// with it.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { screenText, startComputer, type Computer } from '../craftos/craftos.js';
import { Stack, craftos } from './stack.js';

const TOKEN = 'e2e-operator-token';

const INSTALL_THEN_BOOT = `
local base = ...
shell.run("wget", "run", base .. "/lua/install.lua", "--pair", "--id", "e2e-asker")
shell.run("/startup/ccagent.lua")
`;

interface ClientRow {
  client_id: string;
  connected: boolean;
}
interface Pairing {
  id: string;
  client_id: string;
  match: string;
  state: string;
}

describe.skipIf(!craftos)('end to end: a computer paired by request and operator approval', () => {
  let stack: Stack;
  let c: Computer | undefined;
  beforeAll(async () => {
    stack = await Stack.start({ token: TOKEN });
  });
  afterAll(async () => {
    await c?.stop();
    await stack?.close();
  });

  it('asks with --pair, waits unapproved with no key, and connects with its own key once the operator approves', async () => {
    c = startComputer(craftos!, INSTALL_THEN_BOOT, {
      args: [stack.url],
      mountLibrary: false,
      timeoutMs: 60_000,
    });
    const computer = c;
    const listed = await stack.until(
      'the request to be pending',
      () => stack.get<{ pairings: Pairing[] }>('/api/credentials/pairings'),
      (r) => r.pairings.some((p) => p.client_id === 'e2e-asker' && p.state === 'pending'),
    );
    const request = listed.pairings.find((p) => p.client_id === 'e2e-asker') as Pairing;
    // Waiting: no key on the computer, no connection, no credential.
    await new Promise((r) => setTimeout(r, 1500));
    expect((await stack.get<{ clients: ClientRow[] }>('/api/clients')).clients).toEqual([]);
    expect((await stack.get<{ credentials: unknown[] }>('/api/credentials')).credentials).toEqual([]);

    const approved = await stack.post('/api/credentials/pairings/approve', { id: request.id });
    expect(approved.status).toBe(200);
    await stack.until(
      'the approved host to connect',
      () => stack.get<{ clients: ClientRow[] }>('/api/clients'),
      (r) => r.clients.some((x) => x.client_id === 'e2e-asker' && x.connected),
    );
    const config = JSON.parse(readFileSync(path.join(computer.disk, '.ccagent', 'config.json'), 'utf8')) as {
      token: string;
      client_id: string;
    };
    expect(config.client_id).toBe('e2e-asker');
    expect(config.token).toMatch(/^cck_/);
    expect(config.token).not.toBe(TOKEN);
    // The computer printed the match code the operator saw.
    expect(screenText(computer)).toContain(`match code ${request.match}`);
  });
});
