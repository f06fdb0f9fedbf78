/**
 * kill -9 of the built orchestrator at random moments while several clients run several tasks (real agent, native
 * tool calling against the fake Ollama server, real SQLite file). Guards against: an acknowledged task, command
 * call or result vanishing after a crash; a command executed twice (a step re-decided after the crash with a new
 * call_id instead of re-sending the committed one, or a call of a task bound to no client handed after the restart
 * to another computer than the one it was sent to); a duplicated task from a re-sent create_task; the server dying
 * on its own. Short form: 3 kills; `CCAGENT_LONG=1`: 25 kills with more clients and longer tasks.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRng, seedFromEnv } from '../src/rng.js';
import { jobPrompt, jobScript, MODEL } from './support/model.js';
import { eventually, faultConfig, LONG, sleep, startServer, type Server } from './support/server.js';
import { SimClient } from './support/sim-client.js';
import { verifyRun } from './support/verify-run.js';

const KILLS = LONG ? 25 : 6;
const CLIENTS = LONG ? 6 : 3;
const TASKS_PER_CLIENT = LONG ? 4 : 2;
/** Tasks bound to no client (created over HTTP) before each kill: their calls go to any client offering the command. */
const UNBOUND_PER_ROUND = 1;
const STEPS = LONG ? 8 : 6;

let dir: string;
let fake: FakeOllama;
const servers: Server[] = [];

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'resilience-kill9-'));
  fake = await startFakeOllama();
});
afterAll(async () => {
  for (const s of servers) await s.kill9();
  await fake.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('kill -9 under load', () => {
  it(
    `survives ${KILLS} kill -9 at random moments: nothing acknowledged lost, no command executed twice`,
    async () => {
      const rng = createRng(seedFromEnv());
      console.log(`[kill9] seed ${rng.seed} (replay with RESILIENCE_SEED=${rng.seed})`);
      // Model replies and client answers take a few ms, so kills land mid-call, mid-step and mid-result.
      fake.script(MODEL, jobScript({ latencyMs: () => rng.int(5, 80) }));
      const db = path.join(dir, 'ccagent.db');
      const config = faultConfig({ reconnectGraceMs: 15_000 });
      let server = await startServer({ db, config, ollamaUrl: fake.url });
      servers.push(server);
      const port = server.port;
      const clients = Array.from(
        { length: CLIENTS },
        (_, i) => new SimClient(`pc-${i}`, { answerDelayMs: () => rng.int(0, 15) }),
      );
      await Promise.all(clients.map((c) => c.connect(server.url)));
      let created = 0;
      const createSome = (perClient: number): void => {
        for (const c of clients) {
          for (let i = 0; i < perClient; i++) {
            const tag = `${c.clientId}-t${created + i}`;
            c.createTask(`req-${tag}`, jobPrompt(tag, STEPS));
          }
        }
        created += perClient;
      };
      createSome(TASKS_PER_CLIENT);
      /** request_id → task id of the acknowledged tasks bound to no client. */
      const unbound = new Map<string, string>();
      const createUnbound = async (): Promise<void> => {
        for (let i = 0; i < UNBOUND_PER_ROUND; i++) {
          const tag = `free-t${unbound.size}`;
          const res = await server.http('/api/tasks', {
            method: 'POST',
            json: { task_kind: 'general_agent', prompt: jobPrompt(tag, STEPS), request_id: `req-${tag}` },
          });
          expect(res.status).toBe(201);
          const { task } = (await res.json()) as { task: { id: string; client_id: string | null } };
          expect(task.client_id).toBeNull();
          unbound.set(`req-${tag}`, task.id);
        }
      };
      const inFlightAtKill: number[] = [];
      const exits: Array<{ code: number | null; signal: NodeJS.Signals | null }> = [];

      for (let k = 0; k < KILLS; k++) {
        // New work keeps arriving, sometimes right before the kill, so creations are hit too.
        createSome(1);
        await createUnbound();
        await sleep(rng.next() < 0.3 ? rng.int(0, 20) : rng.int(50, 350));
        const listed = (await (await server.http('/api/tasks?limit=1000')).json()) as {
          tasks: Array<{ status: string }>;
        };
        inFlightAtKill.push(listed.tasks.filter((t) => t.status !== 'completed').length);
        const before = server.alive();
        await server.kill9();
        expect(before, 'the server died on its own before the kill').toBe(true);
        exits.push(await server.exited);
        server = await startServer({ db, config, ollamaUrl: fake.url, port });
        servers.push(server);
        await Promise.all(
          clients.map(async (c) => {
            await c.whenClosed(5000).catch(() => undefined);
            await c.connect(server.url);
          }),
        );
      }

      // Let everything finish on the last server.
      const totalTasks = CLIENTS * created + unbound.size;
      await eventually(
        async () => {
          if (clients.some((c) => c.pendingCreates.size > 0)) return false;
          const res = await server.http(`/api/tasks?limit=1000`);
          const body = (await res.json()) as { tasks: Array<{ status: string }>; total: number };
          return body.total === totalTasks && body.tasks.every((t) => t.status === 'completed');
        },
        LONG ? 120_000 : 40_000,
        'every task completed',
      );

      // The kills hit work in flight (otherwise this test proves nothing).
      expect(inFlightAtKill.filter((n) => n > 0).length).toBeGreaterThanOrEqual(Math.ceil(KILLS / 2));
      // Only our SIGKILLs ended servers.
      expect(exits.every((e) => e.signal === 'SIGKILL')).toBe(true);
      expect(server.alive()).toBe(true);

      const counts = await verifyRun(server, clients, unbound, STEPS);
      expect(counts.tasks).toBe(totalTasks);
      console.log(
        `[kill9] ${KILLS} kills (unfinished tasks at each: ${inFlightAtKill.join(' ')}), ${totalTasks} tasks (${unbound.size} bound to no client), ${counts.executions} executions, ${counts.redeliveries} call re-deliveries, ` +
          `${counts.redispatched} calls dispatched more than once, ${counts.duplicates} duplicates`,
      );
    },
    LONG ? 600_000 : 90_000,
  );
});
