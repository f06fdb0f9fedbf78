// Seeds a SQLite file for the dashboard bench through @ccagent/store (the orchestrator's own store, not raw SQL):
// `tasks` finished tasks of a few kinds, statuses and computers, and one large task of `steps` step-log records shaped
// like a native tool loop's (a model call with its messages in and its reply out, the engine's decision, the tool
// call's result). The file is closed before the orchestrator opens it.
import { openSqliteStore } from '@ccagent/store';

const KINDS = ['code_job', 'general_agent', 'build_house', 'fix_script'];
const STATUSES = ['completed', 'completed', 'completed', 'failed', 'cancelled'];
const CLIENTS = ['pc-1', 'pc-2', 'turtle-7', null];

function task(id, i, createdAt, extra = {}) {
  return {
    id,
    kind: KINDS[i % KINDS.length],
    status: STATUSES[i % STATUSES.length],
    clientId: CLIENTS[i % CLIENTS.length],
    prompt: `Task ${i}: fix the script on the ${['door', 'farm', 'lamp', 'quarry'][i % 4]} computer and run it until it prints OK`,
    allowedCommands: ['fs_read', 'fs_write', 'run_program'],
    memory: null,
    metadata: {},
    budgets: {},
    counters: { steps: 3, toolCalls: 1, questions: 0 },
    createdAt,
    updatedAt: createdAt + 60_000,
    ...extra,
  };
}

/** The step-log records of one turn of a native loop (3 records). */
function turn(n, at) {
  const messages = [
    { role: 'system', content: 'You run tasks on a ComputerCraft computer. Call one tool at a time.' },
    { role: 'user', content: 'Fix the quarry script and run it.' },
    { role: 'tool', content: JSON.stringify({ ok: true, output: `block ${n - 1} done` }) },
  ];
  return [
    {
      kind: 'native',
      model: 'qwen3:8b',
      input: { messages },
      output: {
        content: n % 7 === 0 ? `Step ${n}: checking the next block.` : '',
        toolCalls: [{ name: 'run_program', arguments: { path: 'quarry.lua', args: [String(n)] } }],
      },
      usage: { promptTokens: 900 + n, completionTokens: 24 },
      startedAt: at - 400,
      durationMs: 400,
    },
    { kind: 'decision', directive: { type: 'tool_call', command: 'run_program' } },
    {
      kind: 'tool_result',
      toolCall: { command: 'run_program', args: { path: 'quarry.lua', args: [String(n)] } },
      toolResult: { ok: true, output: `mined block ${n}\nOK` },
      durationMs: 12,
    },
  ];
}

/**
 * Write the rows. Returns the large task's id and how long the seeding took. Tasks are created a minute apart, the
 * large task last (it is the newest, first in the list).
 */
export async function seedDashboardDb(file, { tasks, steps }) {
  const t0 = performance.now();
  const store = openSqliteStore({ path: file, synchronous: 'normal', checkpointer: false });
  const start = Date.now() - (tasks + 10) * 60_000;
  const pending = [];
  for (let i = 0; i < tasks; i++) {
    const id = `seed-${String(i).padStart(5, '0')}`;
    const at = start + i * 60_000;
    pending.push(
      store.commit({
        task: task(id, i, at),
        create: true,
        steps: turn(1, at + 1000).map((s) => ({ ...s, step: 1, at: at + 1000 })),
      }),
    );
    if (pending.length >= 500) await Promise.all(pending.splice(0));
  }
  await Promise.all(pending);
  const bigId = 'seed-large-task';
  const bigAt = Date.now() - 5 * 60_000;
  const turns = Math.ceil(steps / 3);
  await store.commit({
    task: task(bigId, 0, bigAt, {
      status: 'completed',
      clientId: 'pc-1',
      prompt: `The large task: ${turns} turns of a native tool loop (${steps} step-log records)`,
      counters: { steps: turns, toolCalls: turns, questions: 0 },
      result: { summary: 'every block mined' },
    }),
    create: true,
  });
  let written = 0;
  for (let n = 1; written < steps; n++) {
    const at = bigAt + n * 500;
    const recs = turn(n, at).slice(0, steps - written);
    await store.commit({
      task: task(bigId, 0, bigAt, {
        status: 'completed',
        clientId: 'pc-1',
        prompt: `The large task: ${turns} turns of a native tool loop (${steps} step-log records)`,
        counters: { steps: turns, toolCalls: turns, questions: 0 },
        result: { summary: 'every block mined' },
      }),
      steps: recs.map((s) => ({ ...s, step: n, at })),
    });
    written += recs.length;
  }
  await store.close();
  return { bigId, ms: performance.now() - t0 };
}
