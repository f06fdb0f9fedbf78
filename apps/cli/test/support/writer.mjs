// A second process that owns the database read-write, as the orchestrator does: a real Engine on a real SqliteStore
// steps one task (one logged step and one committed decision every few ms) while a side loop commits client
// updates, and every commit's latency is measured. Usage: node writer.mjs <db> <taskId> <steps>
// Prints `ready` once the task exists, then one JSON line {commits, maxCommitMs, errors} when the task is done.
import { Engine } from '@ccagent/engine';
import { openSqliteStore } from '@ccagent/store';

const [dbPath, taskId, stepsArg] = process.argv.slice(2);
const steps = Number(stepsArg);
const store = openSqliteStore({ path: dbPath });
let commits = 0;
let maxCommitMs = 0;
const errors = [];
const timed = async (fn) => {
  const t0 = performance.now();
  try {
    await fn();
    commits++;
  } catch (err) {
    errors.push(String(err));
  }
  maxCommitMs = Math.max(maxCommitMs, performance.now() - t0);
};

const filler = 'The turtle digs one block forward and checks its fuel. '.repeat(60);
const strategy = {
  async decide(task, _history, ctx) {
    await timed(() =>
      ctx.logStep({
        kind: 'planner',
        model: 'qwen2.5-coder:7b',
        input: {
          messages: [
            { role: 'system', content: filler },
            { role: 'user', content: `step ${ctx.step}` },
          ],
        },
        output: { content: `RUN\nPATH: dig.lua\nARGS: ${ctx.step}` },
        startedAt: Date.now(),
        durationMs: 3,
        usage: { promptTokens: 900 + ctx.step, completionTokens: 12 },
      }),
    );
    if (ctx.step >= steps) return { type: 'complete', result: { dug: steps } };
    return { type: 'continue', note: `dug ${ctx.step}`, wakeAfterMs: 20 };
  },
};

const engine = new Engine({ store, strategies: { dig: strategy }, tickIntervalMs: 0 });
let finished = false;
engine.on('taskUpdated', ({ task }) => {
  if (task.id === taskId && task.status === 'completed') finished = true;
});
await engine.start();
await store.upsertClient({ clientId: 'turtle-1', commands: [], connected: true, seenAt: Date.now() });
await timed(() =>
  engine.createTask({ id: taskId, kind: 'dig', prompt: 'Dig a long tunnel.', clientId: 'turtle-1' }),
);
process.stdout.write('ready\n');
while (!finished) {
  await timed(() => store.setClientConnected('turtle-1', true, Date.now()));
  await new Promise((r) => setTimeout(r, 5));
}
await engine.stop();
await store.close();
process.stdout.write(`${JSON.stringify({ commits, maxCommitMs, errors })}\n`);
