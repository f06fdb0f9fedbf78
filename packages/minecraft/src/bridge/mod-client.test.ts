import { afterEach, describe, expect, it } from 'vitest';
import { MinecraftEndpoint } from '../endpoint/mc-endpoint.js';
import type { Action } from '../protocol/messages.js';
import { ModClient, type RunOutcome } from './mod-client.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function endpointOn(port = 0): Promise<{ endpoint: MinecraftEndpoint; port: number; url: string }> {
  const endpoint = new MinecraftEndpoint({ port });
  const { port: bound, url } = await endpoint.start();
  return { endpoint, port: bound, url };
}

describe('ModClient', () => {
  it('does not run an action id twice across a backend restart: the new backend gets the earlier outcome', async () => {
    const first = await endpointOn();
    const ran: Action[] = [];
    const client = new ModClient({
      url: first.url,
      instanceId: 'steve',
      reconnectDelayMs: 50,
      runner: {
        run: (a): Promise<RunOutcome> => {
          ran.push(a);
          return Promise.resolve({ ok: true, result: { n: ran.length } });
        },
        state: () => null,
      },
    });
    cleanups.push(() => client.close());
    await client.start();
    expect(await first.endpoint.executeAction('steve', { id: 'once', type: 'chat', message: 'hi' })).toEqual({
      ok: true,
      result: { n: 1 },
    });
    await first.endpoint.close();
    // A new backend on the same port (the orchestrator restarted): it knows nothing and sends the same id again.
    const second = await endpointOn(first.port);
    cleanups.push(() => second.endpoint.close());
    const again = await second.endpoint.executeAction('steve', { id: 'once', type: 'chat', message: 'hi' });
    expect(again).toEqual({ ok: true, result: { n: 1 } });
    expect(ran).toHaveLength(1);
    expect(client.duplicatesDropped).toEqual(['once']);
    expect(client.connections).toBe(2);
  });

  it('reports a repeated id that is still running once, when it ends, without starting it again', async () => {
    const { endpoint, url } = await endpointOn();
    cleanups.push(() => endpoint.close());
    let finish: (o: RunOutcome) => void = () => undefined;
    let runs = 0;
    const client = new ModClient({
      url,
      instanceId: 'alex',
      reconnectDelayMs: 50,
      runner: {
        run: () => {
          runs++;
          return new Promise<RunOutcome>((r) => (finish = r));
        },
        state: () => null,
      },
    });
    cleanups.push(() => client.close());
    await client.start();
    const outcome = endpoint.executeAction('alex', { id: 'long', type: 'goto', x: 1, y: 2, z: 3 });
    await expect.poll(() => runs).toBe(1);
    // Drop the connection: the endpoint re-sends the open action on reconnect.
    (client as unknown as { ws: { terminate(): void } }).ws.terminate();
    await expect.poll(() => client.duplicatesDropped).toEqual(['long']);
    finish({ ok: true, result: 'arrived' });
    expect(await outcome).toEqual({ ok: true, result: 'arrived' });
    expect(runs).toBe(1);
  });
});
