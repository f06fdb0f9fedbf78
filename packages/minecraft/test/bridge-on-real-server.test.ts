// The bridge bot on a real Minecraft server (flying-squid, loopback, offline mode): each action the backend sends
// happens in the server's world, checked from the server side.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MinecraftEndpoint, startBridge, type Bridge } from '../src/index.js';
import { startTestServer, type TestMinecraftServer } from '../src/testing/index.js';

let server: TestMinecraftServer;
let endpoint: MinecraftEndpoint;
let bridge: Bridge;

beforeAll(async () => {
  server = await startTestServer();
  endpoint = new MinecraftEndpoint({ port: 0 });
  const { url } = await endpoint.start();
  bridge = await startBridge({
    server: `${server.host}:${server.port}`,
    username: 'Bot',
    orchestrator: url,
    version: server.version,
  });
}, 90_000);

afterAll(async () => {
  bridge?.close();
  await endpoint?.close();
  await server?.close();
});

async function spawnPos(): Promise<{ x: number; y: number; z: number }> {
  const p = await server.playerPosition('Bot');
  if (p === null) throw new Error('Bot is not online');
  return { x: Math.floor(p.x), y: Math.floor(p.y), z: Math.floor(p.z) };
}

describe('ccagent-mc-bridge on a real server', () => {
  it('registers as an instance and reports the player state the server has', async () => {
    await expect.poll(() => endpoint.getInstance('Bot')?.lastState).not.toBeNull();
    const info = endpoint.getInstance('Bot');
    expect(info?.status).toBe('connected');
    const server_ = await server.playerPosition('Bot');
    expect(info?.lastState?.position.x).toBeCloseTo(server_?.x ?? NaN, 0);
    expect(info?.lastState?.gameMode).toBe('creative');
    expect(bridge.client.refusals).toEqual([]);
  });

  it('goto walks the player to the block (server-side position) and chat reaches the server', async () => {
    const s = await spawnPos();
    const target = { x: s.x + 4, y: s.y, z: s.z + 3 };
    const out = await endpoint.executeAction(
      'Bot',
      { id: 'b-goto', type: 'goto', ...target },
      { timeoutMs: 30_000 },
    );
    expect(out.ok).toBe(true);
    await expect
      .poll(async () => {
        const p = await server.playerPosition('Bot');
        return p ? [Math.floor(p.x), Math.floor(p.z)] : null;
      })
      .toEqual([target.x, target.z]);
    const said = await endpoint.executeAction('Bot', {
      id: 'b-chat',
      type: 'chat',
      message: 'hello from the bridge',
    });
    expect(said.ok).toBe(true);
    await expect
      .poll(() => server.chat())
      .toContainEqual({ username: 'Bot', message: 'hello from the bridge' });
  });

  it('place puts the block into the server world and mine breaks it again', async () => {
    const s = await spawnPos();
    const at = { x: s.x + 2, y: s.y, z: s.z };
    expect(await server.blockAt(at.x, at.y, at.z)).toBe('air');
    const placed = await endpoint.executeAction(
      'Bot',
      { id: 'b-place', type: 'place', block: 'oak_planks', ...at },
      { timeoutMs: 30_000 },
    );
    expect(placed).toMatchObject({ ok: true });
    await expect.poll(() => server.blockAt(at.x, at.y, at.z)).toBe('oak_planks');
    const mined = await endpoint.executeAction(
      'Bot',
      { id: 'b-mine', type: 'mine', target: 'oak_planks', quantity: 1 },
      { timeoutMs: 30_000 },
    );
    expect(mined).toMatchObject({ ok: true, result: { mined: 1 } });
    await expect.poll(() => server.blockAt(at.x, at.y, at.z)).toBe('air');
  });

  it('fails an impossible action with the reason instead of reporting success', async () => {
    const s = await spawnPos();
    const failed = await endpoint.executeAction('Bot', {
      id: 'b-bad',
      type: 'place',
      block: 'stone',
      x: s.x,
      y: s.y + 5,
      z: s.z,
    });
    expect(failed).toMatchObject({ ok: false, code: 'action_failed' });
    expect(failed.ok ? '' : failed.error).toMatch(/no solid block next to/);
    expect(bridge.client.executed.filter((id) => id === 'b-goto')).toHaveLength(1);
  });
});
