import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { CLOSE_CODES } from '../src/ws/close-codes.js';
import { useHarness } from './support/session.js';

const t = useHarness();

describe('WebSocket handshake', () => {
  it('welcomes a valid hello with the server limits (guards a client that cannot learn heartbeat/frame size)', async () => {
    const h = await t.start({ token: 'secret-token-1', config: { server: { heartbeatMs: 5000 } } });
    const c = t.open();
    await c.opened;
    c.send({ type: 'hello', client_id: 'pc-1', token: 'secret-token-1', protocol_version: 1, commands: [] });
    const w = await c.waitFor('welcome');
    expect(w).toEqual({
      type: 'welcome',
      client_id: 'pc-1',
      server_version: '0.1.0',
      protocol_version: 1,
      heartbeat_ms: 5000,
      max_message_bytes: 131072,
      // the largest command_result taken: a client cuts a bigger one down before sending it
      max_tool_output_bytes: 16 * 1024 * 1024,
      // what the computer's menus may offer (issue 35)
      task_kinds: expect.arrayContaining(['general_agent', 'code_job', 'chat']),
      models: ['qwen3:8b'],
      model_roles: expect.objectContaining({ general_agent: ['native'], code_job: ['planner', 'executor'] }),
      // the built-in server-side tools (seed 004), which a client adds to the tasks it creates
      server_tools: ['echo', 'get_time', 'get_system_info'],
    });
    const res = await h.http('/api/clients');
    const body = (await res.json()) as { clients: Array<{ client_id: string; connected: boolean }> };
    expect(body.clients).toEqual([expect.objectContaining({ client_id: 'pc-1', connected: true })]);
  });

  it('refuses a wrong or missing token with an error and close 4001 (guards unauthenticated command access)', async () => {
    const h = await t.start({ token: 'secret-token-1' });
    for (const token of ['wrong-token', undefined]) {
      const c = t.open();
      await c.opened;
      c.send({
        type: 'hello',
        client_id: 'intruder',
        protocol_version: 1,
        commands: [],
        ...(token ? { token } : {}),
      });
      const err = await c.waitFor('error');
      expect(err).toMatchObject({ code: 'unauthorized', path: '$.token' });
      const closed = await c.whenClosed();
      expect(closed.code).toBe(CLOSE_CODES.unauthorized);
      expect(closed.reason).toMatch(/token/);
    }
    const body = (await (await h.http('/api/clients')).json()) as { clients: unknown[] };
    expect(body.clients).toEqual([]);
  });

  it('refuses another protocol version with close 4002 and names both versions', async () => {
    await t.start();
    const c = t.open();
    await c.opened;
    c.send({ type: 'hello', client_id: 'pc-1', protocol_version: 2, commands: [] });
    const err = await c.waitFor('error');
    expect(err).toMatchObject({ code: 'protocol_version' });
    expect(String(err.message)).toMatch(/2.*1/);
    expect((await c.whenClosed()).code).toBe(CLOSE_CODES.protocolVersion);
  });

  it('closes a connection whose first message is not hello (guards acting before authentication)', async () => {
    await t.start();
    const c = t.open();
    await c.opened;
    c.send({ type: 'cancel_task', task_id: 't-1' });
    expect(await c.waitFor('error')).toMatchObject({ code: 'unauthorized' });
    expect((await c.whenClosed()).code).toBe(CLOSE_CODES.unauthorized);
  });

  it('answers garbage before hello with invalid_json and close 4005', async () => {
    await t.start();
    const c = t.open();
    await c.opened;
    c.send('{not json');
    expect(await c.waitFor('error')).toMatchObject({ code: 'invalid_json' });
    expect((await c.whenClosed()).code).toBe(CLOSE_CODES.invalidHello);
  });

  it('refuses a hello whose args_schema cannot be compiled, naming the field', async () => {
    await t.start();
    const c = t.open();
    await c.opened;
    c.send({
      type: 'hello',
      client_id: 'pc-1',
      protocol_version: 1,
      commands: [{ name: 'ok' }, { name: 'bad', args_schema: { type: 'no-such-type' } }],
    });
    expect(await c.waitFor('error')).toMatchObject({
      code: 'invalid_field',
      path: '$.commands[1].args_schema',
    });
    expect((await c.whenClosed()).code).toBe(CLOSE_CODES.invalidHello);
  });

  it('closes a socket that never says hello (close 4004)', async () => {
    await t.start({ config: { server: { helloTimeoutMs: 200 } } });
    const c = t.open();
    await c.opened;
    const closed = await c.whenClosed(3000);
    expect(closed.code).toBe(CLOSE_CODES.helloTimeout);
  });

  it('a second connection with the same client_id replaces the first, which is told why (close 4003)', async () => {
    const h = await t.start();
    const first = await t.connect('turtle-1');
    const second = await t.connect('turtle-1');
    expect(await first.waitFor('error')).toMatchObject({ code: 'duplicate' });
    const closed = await first.whenClosed();
    expect(closed.code).toBe(CLOSE_CODES.replaced);
    expect(closed.reason).toMatch(/replaced/);
    // The new connection is the live one and stays connected.
    second.send({ type: 'ping', id: 'p1' });
    expect(await second.waitFor('pong', { id: 'p1' })).toBeTruthy();
    const body = (await (await h.http('/api/clients')).json()) as { clients: Array<{ connected: boolean }> };
    expect(body.clients).toEqual([expect.objectContaining({ client_id: 'turtle-1', connected: true })]);
  });

  it('terminates a socket that stops answering pings (dead peer detection)', async () => {
    const h = await t.start({ config: { server: { heartbeatMs: 150 } } });
    const raw = new WebSocket(`${h.url.replace('http', 'ws')}/ws`);
    await new Promise((r) => raw.once('open', r));
    raw.send(JSON.stringify({ type: 'hello', client_id: 'mute', protocol_version: 1, commands: [] }));
    const started = Date.now();
    // This client never answers the server's `ping` messages.
    const code = await new Promise<number>((resolve) => raw.once('close', (c: number) => resolve(c)));
    expect(code).toBe(1006);
    expect(Date.now() - started).toBeLessThan(2000);
    const body = (await (await h.http('/api/clients')).json()) as { clients: Array<{ connected: boolean }> };
    expect(body.clients[0]).toMatchObject({ client_id: 'mute', connected: false, in_grace: true });
  });

  it('rejects upgrades on other paths', async () => {
    const h = await t.start();
    const raw = new WebSocket(`${h.url.replace('http', 'ws')}/nope`);
    const err = await new Promise<Error>((resolve) => raw.once('error', resolve));
    expect(err.message).toMatch(/404/);
  });
});
