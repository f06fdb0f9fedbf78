/** The Minecraft stack for the orchestrator's tests: a free port for the mod endpoint and the built bridge bot. */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { createRequire } from 'node:module';
import path from 'node:path';

const require = createRequire(import.meta.url);
/** The built `ccagent-mc-bridge`. */
export const BRIDGE = path.join(
  path.dirname(require.resolve('@ccagent/minecraft/package.json')),
  'dist',
  'bridge-bin.js',
);

/** A TCP port free on 127.0.0.1 right now (for `--mc-port`, which must be known before the server starts). */
export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => resolve(typeof a === 'object' && a ? a.port : 0));
    });
  });
}

/** Start the bridge bot as player `Bot` on `server`, registering with the mod endpoint on `mcPort`; stderr piped. */
export function spawnBridge(
  server: { host: string; port: number; version: string },
  mcPort: number,
): ChildProcess {
  return spawn(
    process.execPath,
    [
      BRIDGE,
      '--server',
      `${server.host}:${server.port}`,
      '--username',
      'Bot',
      '--orchestrator',
      `ws://127.0.0.1:${mcPort}`,
      '--mc-version',
      server.version,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
}

/** A block position (each coordinate rounded down). */
export interface BlockPos {
  x: number;
  y: number;
  z: number;
}

/**
 * Until the bridge bot `instanceId` has registered with the orchestrator at `url` and sent its first state: the block
 * it stands on then. Fails when `bridge` exits first or after `timeoutMs`, with the bridge's `log()` in the message.
 */
export async function waitForInstance(
  url: string,
  bridge: ChildProcess,
  log: () => string,
  instanceId = 'Bot',
  timeoutMs = 60_000,
): Promise<BlockPos> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (Date.now() > deadline || bridge.exitCode !== null)
      throw new Error(`the bridge did not register:\n${log()}`);
    const res = await fetch(`${url}/api/minecraft/instances`);
    const body = (await res.json()) as {
      instances?: Array<{ instance_id: string; last_state: { position?: BlockPos } | null }>;
    };
    const p = body.instances?.find((i) => i.instance_id === instanceId)?.last_state?.position;
    if (p) return { x: Math.floor(p.x), y: Math.floor(p.y), z: Math.floor(p.z) };
    await new Promise((r) => setTimeout(r, 200));
  }
}
