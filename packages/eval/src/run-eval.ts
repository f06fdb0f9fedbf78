/**
 * `runEval`: the suite's jobs against a model server, each attempt on a fresh CraftOS-PC computer connected to one
 * orchestrator, a few attempts at a time. An attempt: make the computer with the job's disk, boot the agent host,
 * give the job's tasks one after the other (playing the user: scripted answers, and the job's word on
 * confirmations), stop the computer, run the checker on it. The run's tasks stay in its SQLite file.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import {
  createComputer,
  findCraftos,
  hostPath,
  runPrograms,
  startHost,
  writeOnDisk,
  type ComputerDisk,
  type Craftos,
} from './craftos.js';
import { EvalError } from './eval-error.js';
import type { CheckContext, Job, Loop, ProgramRun, ScriptedRun, Suite, Verdict } from './job.js';
import { failureReason, metricsOf, NO_METRICS, type AttemptMetrics, type TaskDetail } from './metrics.js';
import {
  DEFAULT_EVAL_NUM_PREDICT,
  checkModelServer,
  evalConfig,
  kindName,
  startOrchestrator,
  type ModelServer,
  type RunningOrchestrator,
} from './orchestrator.js';

/** What an eval runs the jobs with: a model server, or the suite's own scripted runs (CI and job authors). */
export type EvalModel =
  | ({ kind: 'server' } & ModelServer)
  /** Each job's reference run (must pass), or each of its wrong runs (must fail). */
  | { kind: 'reference' | 'wrong' };

/** Options of {@link runEval}. */
export interface EvalOptions {
  suite: Suite;
  jobs: readonly Job[];
  model: EvalModel;
  /** The loop of a model server run (scripted runs use their own). Default `planner-executor`. */
  loop?: Loop;
  /** Attempts per job (model server runs). Default 1. */
  repeat?: number;
  /** Attempts at once, each on its own computer. Default 1. */
  parallel?: number;
  /** The built orchestrator's `dist/main.js`, and the Lua client folder the computers mount at /ccagent. */
  orchestrator: { main: string; luaDir: string };
  /** Run folder: the SQLite file, the configuration, results.json, the computers while they run. */
  outDir: string;
  craftos?: Craftos;
  /** Keep each attempt's computer folder (under outDir/computers) instead of deleting it. */
  keepComputers?: boolean;
  /** Stop starting attempts, cancel the running ones; what finished is kept. */
  signal?: AbortSignal;
  /** Called as attempts start and end (progress display). */
  onProgress?: (event: ProgressEvent) => void;
  env?: NodeJS.ProcessEnv;
}

/** Progress of a run. */
export type ProgressEvent =
  | { type: 'start'; total: number; url: string; dbPath: string }
  | { type: 'attempt_start'; job: string; attempt: number; label: string }
  | { type: 'attempt_end'; result: AttemptResult; done: number; total: number };

/** One attempt of one job. */
export interface AttemptResult {
  job: string;
  jobVersion: number;
  tier: number;
  loop: Loop;
  /** 1-based attempt number (model server runs); for scripted runs the same 1. */
  attempt: number;
  /** `model`, `reference` or `wrong:<name>`. */
  label: string;
  /** The checker's verdict: the only thing success is decided by. */
  pass: boolean;
  /** Why it failed, as a table counts it; absent when it passed. */
  failure?: string;
  /** The checker's words (or the eval's, for a computer or timeout failure). */
  detail?: string;
  taskIds: string[];
  /** How each task ended (status, error code). */
  outcomes: Array<{ status: string; error?: string }>;
  metrics: AttemptMetrics;
  wallSeconds: number;
}

/** A whole run. */
export interface EvalRun {
  suiteVersion: string;
  model: string;
  provider: string;
  loop: Loop | 'scripted';
  /** The output bound of every model call of the run (Ollama `num_predict`, OpenAI `max_tokens`). */
  numPredict: number;
  startedAt: string;
  finishedAt?: string;
  /** True when it was interrupted: `results` then holds only the attempts that finished. */
  interrupted: boolean;
  dbPath: string;
  jobs: Array<{ id: string; version: number; tier: number; title: string; skipped?: string }>;
  results: AttemptResult[];
}

interface Plan {
  job: Job;
  loop: Loop;
  attempt: number;
  label: string;
  script?: ScriptedRun;
}

const POLL_MS = 200;
const ENDED = new Set(['completed', 'failed', 'cancelled']);

/** The attempts a run makes, in order, and the jobs it skips (with why). */
function planOf(opts: EvalOptions): { plans: Plan[]; skipped: Map<string, string> } {
  const plans: Plan[] = [];
  const skipped = new Map<string, string>();
  for (const job of opts.jobs) {
    if (opts.model.kind === 'reference') {
      plans.push({ job, loop: job.reference.loop, attempt: 1, label: 'reference', script: job.reference });
      for (const [name, script] of Object.entries(job.references)) {
        plans.push({ job, loop: script.loop, attempt: 1, label: `reference:${name}`, script });
      }
    } else if (opts.model.kind === 'wrong') {
      for (const [name, script] of Object.entries(job.wrong)) {
        plans.push({ job, loop: script.loop, attempt: 1, label: `wrong:${name}`, script });
      }
    } else {
      const loop = opts.loop ?? 'planner-executor';
      if (!job.loops.includes(loop)) {
        skipped.set(job.id, `needs the ${job.loops.join(' or ')} loop`);
        continue;
      }
      for (let i = 1; i <= (opts.repeat ?? 1); i++) plans.push({ job, loop, attempt: i, label: 'model' });
    }
  }
  return { plans, skipped };
}

function delay(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const wake = () => {
      clearTimeout(t);
      resolve();
    };
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', wake);
      resolve();
    }, ms);
    signal?.addEventListener('abort', wake, { once: true });
  });
}

/** Run the jobs; resolves with every finished attempt (also when interrupted through `signal`). */
export async function runEval(opts: EvalOptions): Promise<EvalRun> {
  if (opts.model.kind === 'server') await checkModelServer(opts.model);
  const craftos = opts.craftos ?? findCraftos(undefined, opts.env);
  mkdirSync(opts.outDir, { recursive: true });
  const dbPath = path.join(opts.outDir, 'ccagent.db');
  const { plans, skipped } = planOf(opts);
  const scripted = opts.model.kind !== 'server';
  let fake: FakeOllama | undefined;
  const modelNames = (_p: Plan, i: number) => ({
    planner: `eval-ref-${i}-planner`,
    executor: `eval-ref-${i}-executor`,
    native: `eval-ref-${i}-native`,
  });
  let server: ModelServer;
  if (opts.model.kind === 'server') {
    server = opts.model;
  } else {
    const names = plans.flatMap((p, i) => Object.values(modelNames(p, i)));
    fake = await startFakeOllama({ installed: ['eval-reference', ...names] });
    server = { provider: 'ollama', host: fake.url, model: 'eval-reference' };
    plans.forEach((p, i) => {
      const n = modelNames(p, i);
      const replies = p.script?.replies ?? {};
      for (const role of ['planner', 'executor', 'native'] as const)
        fake?.script(n[role], [...(replies[role] ?? [])]);
    });
  }
  const run: EvalRun = {
    suiteVersion: opts.suite.version,
    model: scripted ? `${opts.model.kind} runs (scripted)` : server.model,
    provider: scripted ? 'testkit fake' : server.provider,
    loop: scripted ? 'scripted' : (opts.loop ?? 'planner-executor'),
    numPredict: server.numPredict ?? DEFAULT_EVAL_NUM_PREDICT,
    startedAt: new Date().toISOString(),
    interrupted: false,
    dbPath,
    jobs: opts.jobs.map((j) => ({
      id: j.id,
      version: j.version,
      tier: j.tier,
      title: j.title,
      ...(skipped.has(j.id) ? { skipped: skipped.get(j.id) } : {}),
    })),
    results: [],
  };
  const save = () =>
    writeFileSync(path.join(opts.outDir, 'results.json'), `${JSON.stringify(run, null, 2)}\n`);
  let orch: RunningOrchestrator | undefined;
  try {
    orch = await startOrchestrator({
      main: opts.orchestrator.main,
      dbPath,
      config: evalConfig(
        opts.jobs,
        server,
        scripted ? plans.flatMap((p, i) => Object.values(modelNames(p, i))) : [],
        opts.parallel ?? 1,
      ),
      ...(server.provider === 'ollama' ? { ollamaUrl: server.host } : {}),
      ...(opts.env ? { env: opts.env } : {}),
    });
    const o = orch;
    opts.onProgress?.({ type: 'start', total: plans.length, url: o.url, dbPath });
    save();
    let next = 0;
    let done = 0;
    const lane = async () => {
      while (!opts.signal?.aborted) {
        const i = next++;
        const plan = plans[i];
        if (!plan) return;
        opts.onProgress?.({
          type: 'attempt_start',
          job: plan.job.id,
          attempt: plan.attempt,
          label: plan.label,
        });
        const started = Date.now();
        // An attempt the eval itself could not carry out (the orchestrator refused or went away) is a result too,
        // so one broken attempt does not lose the run.
        const result = await runAttempt(plan, {
          orch: o,
          craftos,
          opts,
          runId: path.basename(opts.outDir),
          ...(scripted ? { models: modelNames(plan, i) } : {}),
          index: i,
        }).catch((e: unknown) => evalFailure(plan, e, started));
        if (!result) return; // interrupted: not a result
        run.results.push(result);
        save();
        opts.onProgress?.({ type: 'attempt_end', result, done: ++done, total: plans.length });
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, opts.parallel ?? 1) }, () => lane()));
  } finally {
    run.interrupted = opts.signal?.aborted ?? false;
    run.finishedAt = new Date().toISOString();
    save();
    await orch?.stop();
    await fake?.close();
  }
  return run;
}

function evalFailure(plan: Plan, e: unknown, started: number): AttemptResult {
  return {
    job: plan.job.id,
    jobVersion: plan.job.version,
    tier: plan.job.tier,
    loop: plan.loop,
    attempt: plan.attempt,
    label: plan.label,
    pass: false,
    failure: 'eval error',
    detail: e instanceof Error ? e.message : String(e),
    taskIds: [],
    outcomes: [],
    metrics: { ...NO_METRICS },
    wallSeconds: (Date.now() - started) / 1000,
  };
}

interface AttemptContext {
  orch: RunningOrchestrator;
  craftos: Craftos;
  opts: EvalOptions;
  runId: string;
  index: number;
  models?: { planner: string; executor: string; native: string };
}

/** One attempt; undefined when the run was interrupted before it finished. */
async function runAttempt(plan: Plan, ctx: AttemptContext): Promise<AttemptResult | undefined> {
  const computer = createComputer(ctx.craftos, path.join(ctx.opts.outDir, 'computers'), plan.job.disk);
  try {
    return await attemptOn(computer, plan, ctx);
  } finally {
    if (!ctx.opts.keepComputers) rmSync(computer.dataDir, { recursive: true, force: true });
  }
}

async function attemptOn(
  computer: ComputerDisk,
  plan: Plan,
  ctx: AttemptContext,
): Promise<AttemptResult | undefined> {
  const { job, loop } = plan;
  const { orch, craftos, opts } = ctx;
  const started = Date.now();
  const clientId = `eval-${ctx.index + 1}-${job.id}`.slice(0, 64);
  const host = startHost(craftos, computer, {
    luaDir: opts.orchestrator.luaDir,
    wsUrl: `${orch.url.replace(/^http/, 'ws')}/ws`,
    clientId,
  });
  const base = {
    job: job.id,
    jobVersion: job.version,
    tier: job.tier,
    loop,
    attempt: plan.attempt,
    label: plan.label,
  };
  const taskIds: string[] = [];
  const details: TaskDetail[] = [];
  const finish = (
    r: Omit<AttemptResult, keyof typeof base | 'wallSeconds' | 'taskIds' | 'outcomes' | 'metrics'>,
  ) => ({
    ...base,
    ...r,
    taskIds,
    outcomes: details.map((d) => ({
      status: d.task.status,
      ...(d.task.error?.code ? { error: d.task.error.code } : {}),
    })),
    metrics: details.length ? metricsOf(details) : { ...NO_METRICS },
    wallSeconds: (Date.now() - started) / 1000,
  });
  try {
    if (!(await waitConnected(orch, clientId, opts.signal))) {
      if (opts.signal?.aborted) return undefined;
      return finish({
        pass: false,
        failure: 'computer',
        detail: `the computer did not connect within 30 s: ${host.output().slice(-500)}`,
      });
    }
    let answers = 0;
    for (const [t, task] of job.tasks.entries()) {
      const created = await orch.post<{ task?: { id: string }; error?: { message: string } }>('/api/tasks', {
        task_kind: kindName(job, loop),
        prompt: task.prompt,
        client_id: clientId,
        request_id: `${ctx.runId}:${ctx.index}:${t}`,
        ...(ctx.models
          ? {
              settings: {
                models:
                  loop === 'native'
                    ? { native: ctx.models.native }
                    : { planner: ctx.models.planner, executor: ctx.models.executor },
              },
            }
          : {}),
      });
      const id = created.body.task?.id;
      if (!id) {
        throw new EvalError(
          'orchestrator_failed',
          `creating the task failed: ${JSON.stringify(created.body)}`,
        );
      }
      taskIds.push(id);
      const deadline = Date.now() + job.budgets.deadlineMs + 30_000;
      let status = '';
      while (!ENDED.has(status)) {
        if (opts.signal?.aborted || Date.now() > deadline) {
          await orch.post(`/api/tasks/${id}/cancel`, {
            reason: opts.signal?.aborted ? 'eval interrupted' : 'eval timeout',
          });
          if (opts.signal?.aborted) return undefined;
          break;
        }
        const d = await orch.get<{
          task: { status: string };
          questions: Array<{ question_id: string; answer?: string }>;
          command_calls: Array<{ status: string }>;
        }>(`/api/tasks/${id}?steps=0`);
        status = d.task.status;
        if (status === 'waiting_for_user') {
          const open = d.questions.find((q) => q.answer === undefined);
          if (open) {
            const confirming = d.command_calls.some((c) => c.status === 'awaiting_confirmation');
            const text = confirming
              ? job.user.confirm
              : (job.user.answers[answers++] ?? 'I have nothing to add: decide yourself.');
            await orch.post(`/api/tasks/${id}/answer`, { question_id: open.question_id, text });
          }
        }
        if (!ENDED.has(status)) await delay(POLL_MS, opts.signal);
      }
      details.push(await orch.get<TaskDetail>(`/api/tasks/${id}`));
    }
  } finally {
    await host.stop();
  }
  const verdict = await runChecker(job, computer, craftos, opts.orchestrator.luaDir);
  return finish(
    verdict.pass
      ? { pass: true, ...(verdict.reason ? { detail: verdict.reason } : {}) }
      : { pass: false, failure: failureReason(details), detail: verdict.reason ?? 'rejected' },
  );
}

async function waitConnected(
  orch: RunningOrchestrator,
  clientId: string,
  signal?: AbortSignal,
): Promise<boolean> {
  const end = Date.now() + 30_000;
  while (Date.now() < end && !signal?.aborted) {
    const { clients } = await orch.get<{ clients: Array<{ client_id: string; connected: boolean }> }>(
      '/api/clients',
    );
    if (clients.some((c) => c.client_id === clientId && c.connected)) return true;
    await delay(100, signal);
  }
  return false;
}

/** The checker's view of a stopped computer. */
export function checkContext(computer: ComputerDisk, craftos: Craftos, luaDir: string): CheckContext {
  const runs = (list: ProgramRun[]) => runPrograms(craftos, computer, list, { luaDir });
  return {
    read: (file) => {
      const p = hostPath(computer.disk, file);
      return existsSync(p) ? readFileSync(p, 'utf8') : undefined;
    },
    exists: (file) => existsSync(hostPath(computer.disk, file)),
    list: (dir) => {
      const p = hostPath(computer.disk, dir);
      return existsSync(p) ? readdirSync(p).sort() : [];
    },
    write: (file, content) => writeOnDisk(computer.disk, file, content),
    remove: (file) => rmSync(hostPath(computer.disk, file), { recursive: true, force: true }),
    runs,
    run: async (program, args = []) => (await runs([{ program, args }]))[0]!,
  };
}

/** Run a job's checker on a stopped computer; a checker that throws rejects the attempt with its error. */
export async function runChecker(
  job: Job,
  computer: ComputerDisk,
  craftos: Craftos,
  luaDir: string,
): Promise<Verdict> {
  try {
    const v = await job.check(checkContext(computer, craftos, luaDir));
    return { pass: v.pass === true, ...(v.reason ? { reason: v.reason } : {}) };
  } catch (e) {
    return { pass: false, reason: `the checker failed: ${(e as Error).message}` };
  }
}
