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
