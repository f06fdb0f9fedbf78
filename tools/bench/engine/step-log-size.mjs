#!/usr/bin/env node
// Size on disk of one long native tool-calling task (not part of `npm test`). Needs the built packages:
// `npx nx run-many -t build -p bench`.
//
//   node tools/bench/engine/step-log-size.mjs [--steps 60] [--calls-per-reply 50] [--engine <engine module>]
//
// Runs one task of `--steps` engine steps through the real stack minus the WebSocket: the built Engine, the SQLite
// store on a fresh file (`synchronous = FULL`), the agent's native tool-calling strategy talking through the real
// `ollama` client to the fake Ollama server of @ccagent/testkit, which answers every model call with
// `--calls-per-reply` tool calls (`noop {i, turn}`, as in the orchestrator round-trip bench), and an executor that
// answers each call at once with `{ ok: true }`. Then it checkpoints the WAL and prints the database file size, the
// bytes the step log holds (by record kind) and the task row's memory.
//
// `--engine` loads `Engine` from another build of @ccagent/engine (a path to its ESM entry), to compare two versions
// in the same conditions; the store, agent and model client are always the built ones. See docs/benchmarks.md for
// how the "before" figure of the lean decision records was made this way.
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { createNativeToolStrategy } from '@ccagent/agent';
import { OllamaChatModel } from '@ccagent/models';
import { openSqliteStore } from '@ccagent/store';
import { startFakeOllama } from '@ccagent/testkit';

const { values: flags } = parseArgs({
  options: {
    steps: { type: 'string', default: '60' },
    'calls-per-reply': { type: 'string', default: '50' },
    engine: { type: 'string' },
  },
});
const STEPS = Number(flags.steps);
const CALLS_PER_REPLY = Number(flags['calls-per-reply']);
if (!Number.isInteger(STEPS) || STEPS < 1 || !Number.isInteger(CALLS_PER_REPLY) || CALLS_PER_REPLY < 1) {
  console.error('--steps and --calls-per-reply must be integers >= 1');
  process.exit(2);
}
const engineModule = flags.engine
  ? await import(pathToFileURL(path.resolve(flags.engine)).href)
  : await import('@ccagent/engine');
const { Engine } = engineModule;

const MODEL = 'qwen3:8b';
const fake = await startFakeOllama({ installed: [MODEL] });
fake.script(MODEL, (req) => {
  const turn = (req.body.messages ?? []).filter((m) => m.role === 'assistant').length;
  return {
    toolCalls: Array.from({ length: CALLS_PER_REPLY }, (_, i) => ({ name: 'noop', arguments: { i, turn } })),
  };
});

const dir = mkdtempSync(path.join(os.tmpdir(), 'ccagent-step-log-size-'));
const file = path.join(dir, 'size.db');
try {
  const store = openSqliteStore({ path: file });
  const strategy = createNativeToolStrategy({
    model: { model: new OllamaChatModel({ host: fake.url }), name: MODEL, options: { temperature: 0 } },
    maxIterations: 1000,
  });
  const executor = {
    execute: async () => ({ ok: true, result: { ok: true } }),
    listCommands: () => [
      { name: 'noop', description: 'does nothing', argsSchema: { type: 'object', properties: {} } },
    ],
  };
  const engine = new Engine({ store, strategies: { bench_loop: strategy }, executor, tickIntervalMs: 0 });
  const done = new Promise((resolve) => {
    engine.on('taskUpdated', ({ task }) => {
      if (['completed', 'failed', 'cancelled'].includes(task.status)) resolve(task);
    });
    engine.on('taskFailed', ({ task }) => resolve(task));
  });
  await engine.start();
  // maxSteps: the task ends (budget_exhausted) when it would take step STEPS + 1.
  await engine.createTask({ id: 'size-1', kind: 'bench_loop', prompt: 'loop', budgets: { maxSteps: STEPS } });
  const finished = await done;
  await engine.stop();
  await store.close();

  const db = new Database(file);
  db.pragma('wal_checkpoint(TRUNCATE)');
  const kinds = db
    .prepare(
      `SELECT kind, count(*) AS n,
              sum(coalesce(length(input), 0) + coalesce(length(input_packed), 0) + coalesce(length(output), 0)
                  + coalesce(length(directive), 0)
                  + coalesce(length(tool_call), 0) + coalesce(length(tool_result), 0)
                  + coalesce(length(validation_errors), 0) + coalesce(length(error), 0)) AS bytes,
              sum(coalesce(length(directive), 0)) AS directive
       FROM steps WHERE task_id = 'size-1' GROUP BY kind ORDER BY kind`,
    )
    .all();
  const task = db
    .prepare(
      `SELECT steps_count, (SELECT length(memory) FROM task_memory WHERE task_id = id) AS memory
       FROM tasks WHERE id = 'size-1'`,
    )
    .get();
  // Model inputs stored once (schema v5): a packed step row holds chunk hashes, the messages live here (the task is
  // the only one in the file, so every row is its own).
  const shared = db
    .prepare('SELECT count(*) AS n, coalesce(sum(length(body)), 0) AS bytes FROM step_messages')
    .get();
  const { page_size: pageSize } = db.prepare('PRAGMA page_size').get();
  const { page_count: pageCount } = db.prepare('PRAGMA page_count').get();
  const { freelist_count: freePages } = db.prepare('PRAGMA freelist_count').get();
  db.close();
  const fileBytes = statSync(file).size;

  const fmt = (n) => Number(n).toLocaleString('en-US');
  console.log(
    `engine: ${flags.engine ?? '@ccagent/engine (built)'}; ${STEPS} steps, ${CALLS_PER_REPLY} tool calls per model reply`,
  );
  console.log(
    `task ended ${finished.status}${finished.error ? ` (${finished.error.code})` : ''} after ${task.steps_count} steps`,
  );
  console.log('\n| step records | rows | JSON bytes | of which directive |');
  console.log('| --- | --- | --- | --- |');
  let total = 0;
  for (const k of kinds) {
    total += k.bytes;
    console.log(`| ${k.kind} | ${fmt(k.n)} | ${fmt(k.bytes)} | ${fmt(k.directive)} |`);
  }
  console.log(`| step_messages (model inputs stored once) | ${fmt(shared.n)} | ${fmt(shared.bytes)} | |`);
  total += shared.bytes;
  console.log(`| all | ${fmt(kinds.reduce((a, k) => a + k.n, 0) + shared.n)} | ${fmt(total)} | |`);
  console.log(`\ntask row memory: ${fmt(task.memory)} bytes`);
  console.log(
    `database file after checkpoint: ${fmt(fileBytes)} bytes (${fmt(pageCount)} pages of ${fmt(pageSize)}, ${fmt(freePages)} free)`,
  );
} finally {
  await fake.close();
  rmSync(dir, { recursive: true, force: true });
}
