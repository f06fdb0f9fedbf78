/**
 * `@ccagent/minecraft/testing`: a real Minecraft Java server for tests (flying-squid in a child process, offline
 * mode, superflat, loopback only) that answers questions about its world from the server side. Needs the
 * `flying-squid` package installed (a dev dependency here).
 */
import { fork, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { MinecraftError } from '../minecraft-error.js';

/** The Minecraft version the tests use: supported by flying-squid 1.11 and mineflayer 4.25 (see docs/decisions). */
export const TEST_MC_VERSION = '1.18.2';

/** A running test server. */
export interface TestMinecraftServer {
  host: string;
  port: number;
  version: string;
  /** A player's position as the server sees it, or null when not online. */
  playerPosition(username: string): Promise<{ x: number; y: number; z: number } | null>;
  /** The block name at x y z in the server's world. */
  blockAt(x: number, y: number, z: number): Promise<string | null>;
  /** Set a block in the server's world (test setup). */
  setBlock(x: number, y: number, z: number, name: string): Promise<void>;
  /** Chat messages the server received, in order. */
  chat(): Promise<Array<{ username: string; message: string }>>;
  /** Usernames online. */
  players(): Promise<string[]>;
  /** Spawn a living entity (`villager`, `cow`…) at x y z in the server's world; resolves to its entity id. */
  spawnEntity(name: string, x: number, y: number, z: number): Promise<number>;
  /** An entity's name and position as the server sees it, or null when it is gone. */
  entity(id: number): Promise<{ name: string; x: number; y: number; z: number } | null>;
  /** The entity uses (`use_entity` packets) the server received, in order; `mouse` 0 is interact, 1 attack. */
  entityUses(): Promise<Array<{ username: string; target: number; mouse: number; name: string | null }>>;
  close(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const addr = s.address();
      const port = typeof addr === 'object' && addr !== null ? addr.port : 0;
      s.close(() => resolve(port));
    });
  });
}

/** Start flying-squid on 127.0.0.1 and resolve when it accepts players (bounded by `timeoutMs`, default 60 s). */
export async function startTestServer(
  opts: { version?: string; timeoutMs?: number } = {},
): Promise<TestMinecraftServer> {
  const version = opts.version ?? TEST_MC_VERSION;
  const port = await freePort();
  const script = fileURLToPath(new URL('../../testing/squid-server.cjs', import.meta.url));
  const child: ChildProcess = fork(script, [String(port), version], {
    stdio: process.env['CCAGENT_MC_DEBUG'] ? 'inherit' : ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000);
  });
  let seq = 0;
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  const ready = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new MinecraftError('bridge_failed', `test server not ready in time: ${stderr}`)),
      opts.timeoutMs ?? 60_000,
    );
    child.on(
      'message',
      (m: { event?: string; id?: number; result?: unknown; error?: string; message?: string }) => {
        if (m.event === 'ready') {
          clearTimeout(timer);
          resolve();
        } else if (m.id !== undefined) {
          const p = pending.get(m.id);
          pending.delete(m.id);
          if (m.error !== undefined) p?.reject(new MinecraftError('bridge_failed', m.error));
          else p?.resolve(m.result);
        }
      },
    );
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new MinecraftError('bridge_failed', `test server exited (${code}): ${stderr}`));
      for (const p of pending.values()) p.reject(new MinecraftError('closed', 'test server exited'));
    });
  });
  const ask = <T>(q: string, args: Record<string, unknown> = {}): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const id = ++seq;
      pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      child.send({ id, q, ...args });
    });
  try {
    await ready;
  } catch (e) {
    child.kill('SIGKILL');
    throw e;
  }
  return {
    host: '127.0.0.1',
    port,
    version,
    playerPosition: (username) => ask('player', { username }),
    blockAt: (x, y, z) => ask('block', { x, y, z }),
    setBlock: async (x, y, z, name) => {
      await ask('setBlock', { x, y, z, name });
    },
    chat: () => ask('chat'),
    players: () => ask('players'),
    spawnEntity: (name, x, y, z) => ask('spawnEntity', { name, x, y, z }),
    entity: (entityId) => ask('entity', { entityId }),
    entityUses: () => ask('entityUses'),
    close: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await exited;
    },
  };
}
