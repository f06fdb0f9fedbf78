// `tasks show` of a task bound to no client says which client each call was sent to (the call's recorded `sent_to`),
// from the SQLite file and through a running orchestrator alike; a bound task's calls say nothing more. The database
// is written by a real Engine on the SQLite store, whose executor records the client of an unbound task's call with
// `TaskStore.bindCall` before answering, as the orchestrator's WebSocket executor does.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  Engine,
  type CommandDescriptor,
  type CommandOutcome,
  type Decision,
  type Task,
  type TaskStrategy,
  type ToolCallRequest,
  type ToolExecutor,
} from '@ccagent/engine';
import { openSqliteStore } from '@ccagent/store';
import { startFakeOllama } from '@ccagent/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpTaskSource, openDbSource } from '../src/index.js';
import { orchestratorBuilt, startOrchestrator } from './support/orchestrator.js';
import { copyDb, runCli } from './support/run-cli.js';

const UNBOUND = 'unbound-1';
const BOUND = 'bound-1';
/** Unbound, its call sent to pc-a and never answered. */
const WAITING = 'waiting-1';
/** Unbound, its call not sent to anyone yet. */
const UNSENT = 'unsent-1';

interface ShownStep {
  kind: string;
  toolCall?: { callId?: string };
  sentTo?: string;
}

let dir: string;
let db: string;

/** One `fs_write`, then complete. */
const oneWrite: TaskStrategy = {
  decide: (_task, history): Promise<Decision> =>
    Promise.resolve(
      history.some((h) => h.type === 'tool_result')
        ? { type: 'complete', result: 'written' }
        : { type: 'tool_call', command: 'fs_write', args: { path: '/a', content: 'x' } },
    ),
};

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'ccagent-cli-sent-to-'));
  db = path.join(dir, 'ccagent.db');
  const store = openSqliteStore({ path: db });
  const commands: CommandDescriptor[] = [{ name: 'fs_write' }];
  const computer: ToolExecutor = {
    listCommands: () => commands,
    async execute(call: ToolCallRequest): Promise<CommandOutcome> {
      if (call.clientId === null && call.taskId !== UNSENT) await store.bindCall(call.callId, 'pc-a');
      if (call.taskId === WAITING || call.taskId === UNSENT) {
        held.add(call.taskId);
        if (held.size === 2) heldBoth();
        // Never answered: the engine stops with the call pending.
        return new Promise((_resolve, reject) =>
          call.signal.addEventListener('abort', () => reject(call.signal.reason as Error)),
        );
      }
      return { ok: true, result: { path: '/a' } };
    },
  };
  const held = new Set<string>();
  let heldBoth!: () => void;
  const bothHeld = new Promise<void>((r) => (heldBoth = r));
  const engine = new Engine({
    store,
    strategies: { code_job: oneWrite },
    executor: computer,
    tickIntervalMs: 0,
  });
  const ended = new Set<string>();
  const allEnded = new Promise<void>((resolve) =>
    engine.on('taskUpdated', ({ task }: { task: Task }) => {
      if (task.status === 'completed') ended.add(task.id);
      if (ended.size === 2) resolve();
    }),
  );
  await engine.start();
  await engine.createTask({ id: UNBOUND, kind: 'code_job', prompt: 'write /a', clientId: null });
  await engine.createTask({ id: BOUND, kind: 'code_job', prompt: 'write /a', clientId: 'pc-b' });
  await engine.createTask({ id: WAITING, kind: 'code_job', prompt: 'write /a', clientId: null });
  await engine.createTask({ id: UNSENT, kind: 'code_job', prompt: 'write /a', clientId: null });
  await allEnded;
  await bothHeld;
  await engine.stop();
  await store.close();
});

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function showJson(source: string[], id: string): Promise<ShownStep[]> {
  const r = await runCli([...source, '--json', 'tasks', 'show', id]);
  expect(r.code, r.stderr).toBe(0);
  return (JSON.parse(r.stdout) as { steps: ShownStep[] }).steps;
}

describe('where a call went (sent_to)', () => {
  it("tasks show --db prints the client an unbound task's call was sent to on its call line and in the JSON, and nothing for a bound task (guards against a routing choice the user cannot see)", async () => {
    const human = await runCli(['--db', db, 'tasks', 'show', UNBOUND]);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toContain(`tool call: fs_write  (call ${UNBOUND}:call:1 · sent to pc-a)`);
    const steps = await showJson(['--db', db], UNBOUND);
    const results = steps.filter((s) => s.kind === 'tool_result');
    expect(results).toHaveLength(1);
    expect(results[0]).toMatchObject({ toolCall: { callId: `${UNBOUND}:call:1` }, sentTo: 'pc-a' });
    // Only the record of the call carries it.
    expect(steps.filter((s) => s.sentTo !== undefined)).toHaveLength(1);

    const bound = await runCli(['--db', db, 'tasks', 'show', BOUND]);
    expect(bound.code, bound.stderr).toBe(0);
    expect(bound.stdout).toContain(`tool call: fs_write  (call ${BOUND}:call:1)\n`);
    expect(bound.stdout).not.toContain('sent to');
    const boundSteps = await showJson(['--db', db], BOUND);
    expect(boundSteps.some((s) => s.kind === 'tool_result')).toBe(true);
    expect(boundSteps.some((s) => 'sentTo' in s)).toBe(false);
    for (const id of [UNBOUND, BOUND]) {
      const r = await runCli(['--db', db, '--json', 'tasks', 'show', id]);
      expect(JSON.parse(r.stdout), id).not.toHaveProperty('openCall');
    }
  });

  it('tasks show --db of an unbound task waiting for a call says where the call went, or that it was not sent yet (guards against a stuck task that hides which computer it waits for)', async () => {
    const waiting = await runCli(['--db', db, 'tasks', 'show', WAITING]);
    expect(waiting.code, waiting.stderr).toBe(0);
    expect(waiting.stdout).toContain(
      `  client    - (any client)\n  call      fs_write  (call ${WAITING}:call:1)  sent to pc-a, waiting for its result (it goes to no other client)\n`,
    );
    const json = await runCli(['--db', db, '--json', 'tasks', 'show', WAITING]);
    expect(JSON.parse(json.stdout)).toMatchObject({
      task: { status: 'waiting_for_command' },
      openCall: { callId: `${WAITING}:call:1`, command: 'fs_write', sentTo: 'pc-a' },
    });
    const unsent = await runCli(['--db', db, '--json', 'tasks', 'show', UNSENT]);
    const unsentDetail = JSON.parse(unsent.stdout) as { openCall: Record<string, unknown> };
    expect(unsentDetail.openCall).toEqual({ callId: `${UNSENT}:call:1`, command: 'fs_write' });
    const unsentHuman = await runCli(['--db', db, 'tasks', 'show', UNSENT]);
    expect(unsentHuman.stdout).toContain(
      `  call      fs_write  (call ${UNSENT}:call:1)  not sent yet: waiting for a client offering the command\n`,
    );
  });

  it.skipIf(!orchestratorBuilt)(
    "tasks show --url prints exactly what --db prints, sent to included, and a follower's page has it from both sources (guards against the HTTP source or tasks follow dropping sent_to)",
    async () => {
      const fake = await startFakeOllama();
      const copy = copyDb(db);
      const server = await startOrchestrator({ db: copy, ollamaUrl: fake.url });
      try {
        for (const id of [UNBOUND, BOUND]) {
          for (const json of [[], ['--json']]) {
            const viaUrl = await runCli(['--url', server.url, ...json, 'tasks', 'show', id]);
            const viaDb = await runCli(['--db', copy, ...json, 'tasks', 'show', id]);
            expect(viaUrl.code, viaUrl.stderr).toBe(0);
            expect(viaUrl.stdout, `${id} ${json.join('')}`).toBe(viaDb.stdout);
          }
        }
        const viaUrl = await runCli(['--url', server.url, 'tasks', 'show', UNBOUND]);
        expect(viaUrl.stdout).toContain('· sent to pc-a)');
        // The restarted server holds the waiting calls for their client; it says the same about them.
        for (const id of [WAITING, UNSENT]) {
          const a = JSON.parse(
            (await runCli(['--url', server.url, '--json', 'tasks', 'show', id])).stdout,
          ) as {
            openCall?: unknown;
          };
          const b = JSON.parse((await runCli(['--db', copy, '--json', 'tasks', 'show', id])).stdout) as {
            openCall?: unknown;
          };
          expect(a.openCall, id).toBeDefined();
          expect(a.openCall, id).toEqual(b.openCall);
        }

        // What `tasks follow` reads each poll: the page's records carry it too, from either source.
        const http = new HttpTaskSource({ url: server.url });
        const file = await openDbSource(copy);
        try {
          const all = (await file.getTaskUpdates(UNBOUND, 0, 100)).steps;
          const record = all.find((x) => x.kind === 'tool_result');
          expect(record?.sentTo).toBe('pc-a');
          const seq = (record?.seq ?? 0) - 1;
          for (const source of [file, http]) {
            const page = await source.getTaskUpdates(UNBOUND, seq, 1);
            expect(
              page.steps.map((x) => [x.kind, x.sentTo]),
              source.label,
            ).toEqual([['tool_result', 'pc-a']]);
            const bound = await source.getTaskUpdates(BOUND, 0, 100);
            expect(bound.steps.some((x) => x.kind === 'tool_result')).toBe(true);
            expect(bound.steps.some((x) => 'sentTo' in x)).toBe(false);
          }
        } finally {
          await file.close();
        }
      } finally {
        await server.stop();
        await fake.close();
        rmSync(path.dirname(copy), { recursive: true, force: true });
      }
    },
  );
});
