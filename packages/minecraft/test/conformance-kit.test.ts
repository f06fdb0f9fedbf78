// The conformance kit against the bridge bot on a real server (every check passes), and against a sloppy mod (the
// checks it breaks fail, so the kit can tell).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { runConformance, startBridge, type Bridge, type ConformanceReport } from '../src/index.js';
import { startTestServer, type TestMinecraftServer } from '../src/testing/index.js';

let server: TestMinecraftServer;
beforeAll(async () => {
  server = await startTestServer();
}, 90_000);
afterAll(async () => {
  await server?.close();
});

function verdicts(r: ConformanceReport): Record<string, boolean> {
  return Object.fromEntries(r.checks.map((c) => [c.name, c.ok]));
}

describe('ccagent-mc-conformance', () => {
  it('passes every check against the bridge bot, reconnect included', async () => {
    let bridge: Bridge | undefined;
    let started: Promise<Bridge> | undefined;
    const report = await runConformance({
      port: 0,
      actionTimeoutMs: 20_000,
      onListening: (url) => {
        started = startBridge({
          server: `${server.host}:${server.port}`,
          username: 'Checker',
          orchestrator: url,
          version: server.version,
        });
        void started.then((b) => (bridge = b));
      },
    });
    await started;
    bridge?.close();
    expect(report.checks.filter((c) => !c.ok)).toEqual([]);
    expect(Object.keys(verdicts(report))).toEqual([
      'register',
      'state_update',
      'action chat',
      'action goto',
      'action place',
      'action mine',
      'action craft',
      'action smelt',
      'action interact',
      'repeated id',
      'stop',
      'error frame',
      'frames valid',
      'reconnect',
    ]);
    expect(report.passed).toBe(true);
    expect(report.instanceId).toBe('Checker');
  }, 120_000);

  it('fails the checks a sloppy mod breaks: runs a repeated id again, ignores stop, sends a bad frame', async () => {
    let ws: WebSocket | undefined;
    const report = await runConformance({
      port: 0,
      actionTimeoutMs: 2_000,
      stopWaitMs: 1_000,
      skipReconnect: true,
      onListening: (url) => {
        ws = new WebSocket(url);
        let runs = 0;
        ws.on('open', () => {
          ws?.send(JSON.stringify({ type: 'register', instanceId: 'sloppy', version: '1.0' }));
          const state = {
            position: { x: 0, y: 64, z: 0 },
            health: 20,
            hunger: 20,
            saturation: 5,
            inventory: [],
            dimension: 'overworld',
            gameMode: 'survival',
          };
          ws?.send(JSON.stringify({ type: 'state_update', instanceId: 'sloppy', data: state }));
          ws?.send(
            JSON.stringify({
              type: 'state_update',
              instanceId: 'sloppy',
              data: { ...state, health: 'full' },
            }),
          );
        });
        ws.on('message', (d) => {
          const m = JSON.parse(String(d)) as {
            type: string;
            action?: { id: string; type: string; x?: number };
          };
          if (m.type !== 'execute_action' || !m.action) return;
          if (m.action.type === 'goto' && (m.action.x ?? 0) > 30) return; // a long walk it never stops
          ws?.send(
            JSON.stringify({
              type: 'action_complete',
              instanceId: 'sloppy',
              actionId: m.action.id,
              result: { run: ++runs },
            }),
          );
        });
      },
    });
    ws?.terminate();
    const v = verdicts(report);
    expect(v).toMatchObject({
      register: true,
      state_update: true,
      'action chat': true,
      'repeated id': false,
      stop: false,
      'frames valid': false,
    });
    expect(report.passed).toBe(false);
  }, 60_000);
});
