// The real-model tier: a real CC computer (CraftOS-PC running lua-client/src) ↔ the BUILT orchestrator ↔ a REAL
// Ollama serving real small weights (SmolLM2-135M-Instruct, from tools/ollama-test-server.sh; CI starts it). A 135M
// model fails most tasks: these tests assert what the system promises whatever the model writes — the task ends
// (completed, or failed with a message that says why) within its budgets, every model call is in the step log with
// the real prompt, reply and the server's own counts, every executor reply was decoded under its JSON Schema and
// validated, nothing ran on the computer that a directive (or a native tool call) did not ask for, `ccagent tasks
// show` renders the run, and a kill -9 during a model call resumes.
// Each run's step log is written to $CCAGENT_REAL_RUNS_DIR when set (the corpus fixtures of issue 30 come from there).
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootDriver, driverResult } from '../e2e/driver.js';
import { Stack, craftos, type TaskDetail } from '../e2e/stack.js';

const url = process.env['CCAGENT_TEST_OLLAMA_URL'];
const model = process.env['CCAGENT_TEST_OLLAMA_MODEL'];
const CLI = fileURLToPath(new URL('../../../apps/cli/dist/main.js', import.meta.url));

if (!craftos) {
  console.log('[lua-client.real-model] SKIPPED: no CraftOS-PC (see docs/lua-client.md)');
} else if (!url || !model) {
  if (process.env['CI']) {
    throw new Error('CI without CCAGENT_TEST_OLLAMA_URL: tools/ollama-test-server.sh did not run or failed');
  }
  console.log(
    '[lua-client.real-model] SKIPPED: no real model server (eval "$(tools/ollama-test-server.sh --export)"; ' +
      'docs/models.md)',
  );
} else {
  console.log(
    `[lua-client.real-model] real Ollama ${process.env['CCAGENT_TEST_OLLAMA_VERSION'] ?? '?'} at ${url}, ` +
      `model ${model}; weights ${process.env['CCAGENT_TEST_OLLAMA_WEIGHTS'] ?? '(not stated)'}`,
  );
}

const COMMANDS = ['fs_read', 'fs_list', 'fs_write', 'run_program'];
const BUDGETS = { maxSteps: 5, maxToolCalls: 5, deadlineMs: 240_000 };
const HELLO = 'print("Hello from CC")\n';
const MODEL_KINDS = new Set(['planner', 'executor', 'executor_repair', 'native']);

type Step = TaskDetail['steps'][number];
const json = (v: unknown): Record<string, unknown> =>
  (typeof v === 'string' ? JSON.parse(v) : v) as Record<string, unknown>;

/** Keeps the run for the corpus (and for a person reading a CI failure). */
function keep(name: string, detail: TaskDetail): void {
  const dir = process.env['CCAGENT_REAL_RUNS_DIR'];
  if (!dir) return;
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, `${name}.json`), JSON.stringify(detail, null, 2));
}

/** The promises every run keeps, whatever the model wrote. */
function expectKeptPromises(detail: TaskDetail): void {
  const { task, steps, command_calls: calls } = detail;
  // Ends: completed, or failed with a message a person can act on.
  expect(['completed', 'failed']).toContain(task.status);
  if (task.status === 'failed') {
    const error = task.error as { code?: string; message?: string };
    expect(error.code, JSON.stringify(error)).toMatch(/^[a-z_]+$/);
    expect(error.message?.length ?? 0, JSON.stringify(error)).toBeGreaterThan(30);
    expect(error.message).not.toMatch(/^undefined|\[object Object\]/);
  }
  // Within its budgets.
  const counters = task['counters'] as { steps: number; tool_calls: number };
  expect(counters.steps).toBeLessThanOrEqual(BUDGETS.maxSteps);
  expect(calls.length).toBeLessThanOrEqual(BUDGETS.maxToolCalls);
  expect(Number(task['updated_at']) - Number(task['created_at'])).toBeLessThan(BUDGETS.deadlineMs + 30_000);

  // Every model request is in the log before it leaves, and its answer with the real text and the server's counts.
  const requests = steps.filter((s) => s.kind === 'model_request');
  const replies = steps.filter((s) => MODEL_KINDS.has(s.kind));
  expect(requests.length).toBeGreaterThan(0);
  for (const reply of replies) {
    expect(requests.some((r) => r['started_at'] === reply['started_at'])).toBe(true);
    const input = json(reply['input']);
    const messages = input['messages'] as { role: string; content: string }[];
    expect(messages.length).toBeGreaterThan(0);
    expect(messages.some((m) => m.role === 'system' && m.content.length > 100)).toBe(true);
    const output = json(reply['output']);
    expect(typeof output['content']).toBe('string');
    const usage = reply['usage'] as {
      prompt_tokens: number;
      completion_tokens: number;
      total_duration_ms: number;
    };
    expect(usage.prompt_tokens).toBeGreaterThan(100);
    expect(usage.completion_tokens).toBeGreaterThan(0);
    expect(usage.total_duration_ms).toBeGreaterThan(0);
    expect(reply['model']).toBe(model);
  }
  // Every request has its answer (no restart in this run), but the one a deadline cut short: the task failed
  // while the model was still writing, and nothing of that reply was used …
  const unanswered = requests.filter((r) => !replies.some((x) => x['started_at'] === r['started_at']));
  const deadline =
    (task.error as { details?: { budget?: string } } | undefined)?.details?.budget === 'deadlineAt';
  expect(unanswered.length).toBeLessThanOrEqual(deadline ? 1 : 0);
  if (unanswered[0]) expect(unanswered[0]).toBe(requests.at(-1));
  // … and executor replies were decoded under their JSON Schema and then validated (a directive or the rejection).
  for (const e of replies.filter((s) => s.kind.startsWith('executor'))) {
    const format = json(e['input'])['format'] as Record<string, unknown> | undefined;
    expect(format?.['type'], 'executor format').toBe('object');
    expect(e['directive'] !== undefined || e['validation_errors'] !== undefined).toBe(true);
  }
}

/** Each command that ran was asked for by the step's own directive (or the native reply's tool call). */
function expectOnlyAskedFor(detail: TaskDetail): void {
  for (const call of detail.command_calls) {
    const step = detail.steps.find(
      (s) => s.kind === 'decision' && json(s['directive'])['type'] === 'tool_call' && hasCall(s, call),
    );
    expect(step, `decision for ${call.command}`).toBeDefined();
    const sources = detail.steps.filter((s) => s['step'] === step!['step']);
    const asked = sources.some((s) => {
      if (s.kind === 'executor' || s.kind === 'executor_repair' || s.kind === 'translate') {
        const d = s['directive'] ?? s['tool_call'];
        return d !== undefined && JSON.stringify(json(d)).includes(String(call.args['path'] ?? ''));
      }
      if (s.kind === 'native') {
        const calls = (json(s['output'])['toolCalls'] ?? []) as { name: string; arguments: unknown }[];
        return calls.some((c) => c.name === call.command);
      }
      return s.kind === 'gather' || s.kind === 'queued_run';
    });
    expect(asked, `${call.command} ${JSON.stringify(call.args)} was asked for by its step`).toBe(true);
  }
}

function hasCall(decision: Step, call: TaskDetail['command_calls'][number]): boolean {
  const d = json(decision['directive']);
  return d['command'] === call.command && JSON.stringify(d['args']) === JSON.stringify(call.args);
}

/** `ccagent tasks show` renders the run from the same SQLite file. */
function expectShown(stack: Stack, detail: TaskDetail): void {
  const r = spawnSync(process.execPath, [CLI, 'tasks', 'show', detail.task.id, '--db', stack.db], {
    encoding: 'utf8',
    timeout: 30_000,
  });
  expect(r.status, r.stderr).toBe(0);
  expect(r.stdout).toContain(detail.task.id);
  expect(r.stdout).toContain(model!);
  const kinds = new Set(detail.steps.map((s) => s.kind).filter((k) => MODEL_KINDS.has(k)));
  for (const k of kinds) expect(r.stdout).toContain(k);
}

describe.skipIf(!craftos || !url || !model)('real model on a real CC computer', () => {
  let stack: Stack;
  beforeAll(async () => {
    // Deterministic sampling; replies capped so a 135M model that rambles stays within the tier's minutes.
    const role = (numPredict: number) => ({
      name: model,
      options: { temperature: 0, seed: 1, numCtx: 8192, numPredict },
    });
    stack = await Stack.start({
      modelServer: { url: url!, models: { planner: role(160), executor: role(160), native: role(160) } },
      config: {
        taskKinds: {
          real_pe: {
            description: 'planner/executor with the executor model on every directive',
            strategy: 'planner_executor',
            executorMode: 'model',
            allowedCommands: COMMANDS,
            budgets: BUDGETS,
          },
          real_native: {
            description: 'native tool calling',
            strategy: 'native',
            allowedCommands: COMMANDS,
            budgets: BUDGETS,
          },
        },
      },
    });
  });
  afterAll(async () => {
    await stack?.close();
  });

  const run = async (kind: string, id: string, prompt: string, files: Record<string, string>) => {
    const c = bootDriver(
      { url: stack.wsUrl, client_id: id, task_timeout: 300, tasks: [{ kind, prompt }] },
      { files, timeoutMs: 330_000 },
    );
    const out = await driverResult(c);
    expect(out.errors).toEqual([]);
    const seen = out.tasks[0]!;
    const detail = await stack.task(seen.id!);
    keep(`${kind}-${id}`, detail);
    // What the computer was told agrees with the record.
    expect(seen.status).toBe(detail.task.status);
    return detail;
  };

  it('planner/executor: "run /hello.lua and tell me what it printed" ends within budget, logged and validated', async () => {
    const detail = await run(
      'real_pe',
      'real-pe-hello',
      'Run the program /hello.lua and tell me what it printed.',
      {
        'hello.lua': HELLO,
      },
    );
    expectKeptPromises(detail);
    expectOnlyAskedFor(detail);
    expectShown(stack, detail);
    expect(detail.steps.some((s) => s.kind === 'planner')).toBe(true);
  });

  it('native: "write /greet.lua that prints hi, then run it" ends within budget, logged, only offered tools ran', async () => {
    const detail = await run(
      'real_native',
      'real-native-greet',
      'Write a Lua program /greet.lua that prints hi, then run it and tell me what it printed.',
      {},
    );
    expectKeptPromises(detail);
    expectOnlyAskedFor(detail);
    expectShown(stack, detail);
    for (const s of detail.steps.filter((x) => x.kind === 'native')) {
      const tools = (json(s['input'])['tools'] ?? []) as { name?: string; function?: { name: string } }[];
      expect(tools.length).toBeGreaterThan(0);
    }
  });

  it('kill -9 while the real model is answering: the orchestrator restarts, the task resumes and ends, the lost request is marked', async () => {
    const port = new URL(stack.url).port;
    const c = bootDriver(
      {
        url: stack.wsUrl,
        client_id: 'real-pe-kill',
        reconnect_min: 0.2,
        reconnect_max: 1,
        task_timeout: 300,
        tasks: [{ kind: 'real_pe', prompt: 'Run the program /hello.lua and tell me what it printed.' }],
      },
      { files: { 'hello.lua': HELLO }, timeoutMs: 330_000 },
    );
    // Wait for a model request in flight: written ahead, not yet answered.
    const inFlight = await stack.until(
      'a model request in flight',
      async () => {
        const { tasks } = await stack.get<{ tasks: { id: string }[] }>('/api/tasks?client=real-pe-kill');
        return tasks[0] ? stack.task(tasks[0].id) : undefined;
      },
      (d) => {
        if (!d) return false;
        const req = d.steps.filter((s) => s.kind === 'model_request');
        return req.some(
          (r) => !d.steps.some((s) => MODEL_KINDS.has(s.kind) && s['started_at'] === r['started_at']),
        );
      },
      120_000,
    );
    await stack.kill9();
    expect(await stack.restart(port)).toMatch(/1 unfinished tasks resumed/);
    const out = await driverResult(c);
    const detail = await stack.task(inFlight!.task.id);
    keep('real_pe-kill', detail);
    expect(['completed', 'failed']).toContain(detail.task.status);
    expect(out.tasks[0]?.status).toBe(detail.task.status);
    // The cut-off request stays in the log, unanswered, followed by a `resumed` record; later requests are answered.
    const resumedAt = detail.steps.findIndex((s) => s.kind === 'resumed');
    expect(resumedAt).toBeGreaterThan(0);
    const lost = detail.steps
      .slice(0, resumedAt)
      .filter(
        (r) =>
          r.kind === 'model_request' &&
          !detail.steps.some((s) => MODEL_KINDS.has(s.kind) && s['started_at'] === r['started_at']),
      );
    expect(lost.length).toBe(1);
    expectShown(stack, detail);
  });
});
