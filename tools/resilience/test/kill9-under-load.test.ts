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

interface CallRow {
  call_id: string;
  command: string;
  args: { path?: string };
  status: string;
  outcome?: { ok: boolean; result?: unknown };
  dispatch_count: number;
}
interface Detail {
  task: { id: string; status: string; result?: { message?: string }; error?: unknown };
  command_calls: CallRow[];
  history: Array<{ type: string; call_id?: string; outcome?: { ok: boolean; result?: unknown } }>;
}

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

      const details = new Map<string, Detail>();
      for (const created of [...clients.map((c) => c.created), unbound]) {
        for (const [rid, taskId] of created) {
          const res = await server.http(`/api/tasks/${taskId}`);
          expect(res.status, `acknowledged task ${taskId} (${rid}) is missing`).toBe(200);
          details.set(taskId, (await res.json()) as Detail);
        }
      }
      // One task per request id, whatever was re-sent.
      expect(details.size).toBe(totalTasks);

      const dbCalls = new Map<string, CallRow & { taskId: string }>();
      for (const [taskId, d] of details) {
        const tag = /(?:pc-\d+|free)-t\d+/.exec(d.task.result?.message ?? '')?.[0];
        expect(d.task.status, JSON.stringify(d.task)).toBe('completed');
        expect(d.task.result?.message).toBe(`finished ${tag}`);
        // Exactly the scripted calls, in order, each once, each succeeded.
        expect(d.command_calls.map((c) => c.args.path)).toEqual(
          Array.from({ length: STEPS }, (_, n) => `/${tag}/${n}`),
        );
        for (const c of d.command_calls) {
          expect(c.status).toBe('succeeded');
          dbCalls.set(c.call_id, { ...c, taskId });
        }
        // The history saw every result once.
        const results = d.history.filter((h) => h.type === 'tool_result');
        expect(results.map((h) => h.call_id)).toEqual(d.command_calls.map((c) => c.call_id));
      }

      const executedBy = new Map<string, string>();
      const markers = new Map<string, Set<string>>();
      let executions = 0;
      let redeliveries = 0;
      for (const c of clients) {
        for (const e of c.executions) {
          executions++;
          // The same call_id never runs on two computers.
          expect(executedBy.get(e.callId) ?? c.clientId).toBe(c.clientId);
          executedBy.set(e.callId, c.clientId);
          const marker = (e.args as { path: string }).path;
          const set = markers.get(marker) ?? new Set<string>();
          set.add(e.callId);
          markers.set(marker, set);
          // Every call a client was sent exists on disk with the same result the client gave.
          const row = dbCalls.get(e.callId);
          expect(row, `call ${e.callId} was sent but is not in the database`).toBeDefined();
          expect(row?.outcome?.result).toEqual(e.result);
        }
        for (const [callId, n] of c.callsSeen) {
          expect(dbCalls.has(callId), `call ${callId} announced but lost`).toBe(true);
          redeliveries += n - 1;
        }
        for (const callId of c.acked) expect(dbCalls.get(callId)?.status).toBe('succeeded');
      }
      // No logical command (marker) was executed under two call_ids.
      const duplicated = [...markers].filter(([, ids]) => ids.size > 1);
      expect(duplicated).toEqual([]);
      expect(executions).toBe(totalTasks * STEPS);
      console.log(
        `[kill9] ${KILLS} kills (unfinished tasks at each: ${inFlightAtKill.join(' ')}), ${totalTasks} tasks (${unbound.size} bound to no client), ${executions} executions, ${redeliveries} call re-deliveries, ` +
          `${[...dbCalls.values()].filter((c) => c.dispatch_count > 1).length} calls dispatched more than once, 0 duplicates`,
      );
    },
    LONG ? 600_000 : 90_000,
  );
});
