/**
 * A job of the suite: one folder under `suite/jobs/<id>/` holding `job.json` (prompt, tier, kind settings, the
 * scripted user), `disk/` (the files the computer starts with), `check.mjs` (the checker), `reference.mjs` (a
 * scripted model solving it the intended way) and any `wrong-*.mjs` (deliberately wrong runs the checker must reject).
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { FakeReply } from '@ccagent/testkit';
import { z } from 'zod';
import { EvalError } from './eval-error.js';

/** The agent loops a job can run under (`--loop`). */
export const LOOPS = ['planner-executor', 'native'] as const;
/** One agent loop. */
export type Loop = (typeof LOOPS)[number];

const positiveInt = z.number().int().positive();

const jobSchema = z.strictObject({
  /** Same as the folder name: lower-case words joined by dashes, starting with `t<tier>-`. */
  id: z.string().regex(/^t[1-9]-[a-z0-9]+(-[a-z0-9]+)*$/, 'like "t2-fix-concat"'),
  /** Bumped whenever the prompt, disk, budgets or checker change, so results of two versions are never summed. */
  version: positiveInt,
  tier: z.number().int().min(1).max(9),
  title: z.string().min(1),
  /** Loops the job can be solved with (tools need `native`: the planner's directives cannot create them). */
  loops: z
    .array(z.enum(LOOPS))
    .min(1)
    .default([...LOOPS]),
  /** The tasks given one after the other on the same computer (most jobs have one). */
  tasks: z.array(z.strictObject({ prompt: z.string().min(1) })).min(1),
  budgets: z.strictObject({
    maxSteps: positiveInt,
    maxToolCalls: positiveInt,
    /** Wall-clock budget of each task (ms); the eval cancels a task 30 s after it. */
    deadlineMs: positiveInt,
  }),
  /** Planner/executor: when a DONE is believed (the orchestrator's `completion` of a task kind). */
  completion: z
    .strictObject({
      requireSuccessfulRun: z.boolean().optional(),
      requireLastRunOk: z.boolean().optional(),
      requiredCommands: z.array(z.string()).optional(),
      requiredRuns: z
        .array(z.strictObject({ path: z.string(), args: z.array(z.string()).optional() }))
        .optional(),
    })
    .default({ requireSuccessfulRun: false, requireLastRunOk: false }),
  /** Destructive calls that wait for the user's yes (the orchestrator's `confirm` of a task kind). */
  confirm: z
    .strictObject({
      commands: z.array(z.string()).default([]),
      sandbox: z.string().startsWith('/').optional(),
      shellPatterns: z.array(z.string()).default([]),
    })
    .optional(),
  /** The user the eval plays: answers to questions in order, and what it says to a confirmation. */
  user: z
    .strictObject({
      answers: z.array(z.string()).default([]),
      confirm: z.enum(['yes', 'no']).default('no'),
    })
    .default({ answers: [], confirm: 'no' }),
  /** Free labels shown in reports: `ask_user` (must ask), `refuse` (must not do what it is told). */
  tags: z.array(z.enum(['ask_user', 'refuse', 'tools', 'multi_file', 'acceptance'])).default([]),
});

/** `job.json` after defaults. */
export type JobSpec = z.infer<typeof jobSchema>;

/** A reply of the scripted model: text, or a reply object of `@ccagent/testkit` (tool calls for `native`). */
export type ScriptedReply = FakeReply;

/** A scripted run of a job: the replies each model role gives, in order, across the job's tasks. */
export interface ScriptedRun {
  loop: Loop;
  replies: { planner?: ScriptedReply[]; executor?: ScriptedReply[]; native?: ScriptedReply[] };
  /** Wrong runs: what is wrong with it (shown when a checker accepts it). */
  why?: string;
}

/** What a checker sees: the computer's final state, and its programs run on the same CraftOS-PC. */
export interface CheckContext {
  /** A file on the computer's disk (`/data.txt`), or undefined when it does not exist. */
  read(file: string): string | undefined;
  exists(file: string): boolean;
  /** Names in a directory of the computer (empty when it does not exist). */
  list(dir: string): string[];
  /** Put a file on the computer (the checker's own inputs) before running programs. */
  write(file: string, content: string): void;
  /** Delete a file or folder on the computer (a clean start for the checker's runs). */
  remove(file: string): void;
  /** Run programs one after the other on the computer, the way the agent host runs them. */
  runs(list: ProgramRun[]): Promise<RunOutcome[]>;
  /** Run one program. */
  run(program: string, args?: string[]): Promise<RunOutcome>;
}

/** One program run a checker asks for. */
export interface ProgramRun {
  program: string;
  args?: string[];
}

/** What a program run printed and whether it raised. */
export interface RunOutcome {
  ok: boolean;
  /** Its terminal output, trailing blanks removed. */
  output: string;
  error?: string;
}

/** A checker's verdict. */
export interface Verdict {
  pass: boolean;
  /** Why it failed (or a note when it passed). */
  reason?: string;
}

/** A checker: decides from the computer alone, never from what the model said. */
export type Checker = (c: CheckContext) => Promise<Verdict> | Verdict;

/** A job loaded from its folder. */
export interface Job extends JobSpec {
  dir: string;
  /** Starting files, path on the computer → content. */
  disk: Record<string, string>;
  check: Checker;
  reference: ScriptedRun;
  /** More right runs by name (`reference-native.mjs` → `native`), e.g. the same job solved in the other loop. */
  references: Record<string, ScriptedRun>;
  /** Wrong runs by name (`wrong-deletes-the-file.mjs` → `deletes-the-file`). */
  wrong: Record<string, ScriptedRun>;
}

/** The suite: its version and jobs, ordered by tier then id. */
export interface Suite {
  version: string;
  dir: string;
  jobs: Job[];
}

/** The suite shipped with this package. */
export const SUITE_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'suite');

function readDisk(dir: string, base = dir, into: Record<string, string> = {}): Record<string, string> {
  if (!existsSync(dir)) return into;
  for (const name of readdirSync(dir)) {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) readDisk(full, base, into);
    else into[`/${path.relative(base, full).split(path.sep).join('/')}`] = readFileSync(full, 'utf8');
  }
  return into;
}

async function importDefault<T>(file: string): Promise<T> {
  const mod = (await import(pathToFileURL(file).href)) as { default?: T };
  if (mod.default === undefined) throw new EvalError('invalid_job', `${file} has no default export`);
  return mod.default;
}

function checkRun(run: ScriptedRun, file: string): ScriptedRun {
  if (!LOOPS.includes(run.loop))
    throw new EvalError('invalid_job', `${file}: loop must be one of ${LOOPS.join(', ')}`);
  const roles = run.loop === 'native' ? ['native'] : ['planner'];
  for (const r of roles) {
    if (!Array.isArray(run.replies?.[r as keyof ScriptedRun['replies']])) {
      throw new EvalError('invalid_job', `${file}: replies.${r} must be a list of replies`);
    }
  }
  return run;
}

/** Load one job folder; throws `EvalError('invalid_job')` naming the file and field. */
export async function loadJob(dir: string): Promise<Job> {
  const jsonFile = path.join(dir, 'job.json');
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(jsonFile, 'utf8'));
  } catch (cause) {
    throw new EvalError('invalid_job', `${jsonFile}: ${(cause as Error).message}`, { cause });
  }
  const parsed = jobSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new EvalError(
      'invalid_job',
      `${jsonFile}: ${issue?.path.join('.') || '(root)'}: ${issue?.message}`,
    );
  }
  const spec = parsed.data;
  if (spec.id !== path.basename(dir)) {
    throw new EvalError(
      'invalid_job',
      `${jsonFile}: id "${spec.id}" is not the folder name "${path.basename(dir)}"`,
    );
  }
  if (!spec.id.startsWith(`t${spec.tier}-`)) {
    throw new EvalError('invalid_job', `${jsonFile}: id "${spec.id}" does not start with t${spec.tier}-`);
  }
  const check = await importDefault<Checker>(path.join(dir, 'check.mjs'));
  if (typeof check !== 'function')
    throw new EvalError('invalid_job', `${dir}/check.mjs must export a function`);
  const refFile = path.join(dir, 'reference.mjs');
  const reference = checkRun(await importDefault<ScriptedRun>(refFile), refFile);
  if (!spec.loops.includes(reference.loop)) {
    throw new EvalError('invalid_job', `${refFile}: loop ${reference.loop} is not one of the job's loops`);
  }
  const wrong: Record<string, ScriptedRun> = {};
  const references: Record<string, ScriptedRun> = {};
  for (const name of readdirSync(dir).sort()) {
    const m = /^(wrong|reference)-(.+)\.mjs$/.exec(name);
    if (!m?.[2]) continue;
    const run = checkRun(await importDefault<ScriptedRun>(path.join(dir, name)), name);
    if (!spec.loops.includes(run.loop)) {
      throw new EvalError(
        'invalid_job',
        `${path.join(dir, name)}: loop ${run.loop} is not one of the job's loops`,
      );
    }
    (m[1] === 'wrong' ? wrong : references)[m[2]] = run;
  }
  return { ...spec, dir, disk: readDisk(path.join(dir, 'disk')), check, reference, references, wrong };
}

/** Load every job of a suite folder (default: the shipped suite), ordered by tier then id. */
export async function loadSuite(dir: string = SUITE_DIR): Promise<Suite> {
  const meta = JSON.parse(readFileSync(path.join(dir, 'suite.json'), 'utf8')) as { version?: unknown };
  if (typeof meta.version !== 'string')
    throw new EvalError('invalid_job', `${dir}/suite.json: version must be a string`);
  const jobsDir = path.join(dir, 'jobs');
  const jobs: Job[] = [];
  for (const name of readdirSync(jobsDir).sort()) {
    if (statSync(path.join(jobsDir, name)).isDirectory()) jobs.push(await loadJob(path.join(jobsDir, name)));
  }
  jobs.sort((a, b) => a.tier - b.tier || a.id.localeCompare(b.id));
  return { version: meta.version, dir, jobs };
}

/**
 * The jobs a `--jobs` list selects: each item a tier (`tier2`, `2`), a job id, or an id prefix ending in `*`.
 * Throws `EvalError('unknown_job')` for an item that selects nothing.
 */
export function selectJobs(suite: Suite, items: readonly string[] | undefined): Job[] {
  if (!items || items.length === 0) return suite.jobs;
  const chosen = new Set<Job>();
  for (const item of items) {
    const tier = /^(?:tier|t)?([1-9])$/.exec(item);
    const found = suite.jobs.filter((j) =>
      tier
        ? j.tier === Number(tier[1])
        : item.endsWith('*')
          ? j.id.startsWith(item.slice(0, -1))
          : j.id === item,
    );
    if (found.length === 0) {
      throw new EvalError(
        'unknown_job',
        `no job matches "${item}" (give tiers like tier2, or ids: ${suite.jobs.map((j) => j.id).join(', ')})`,
      );
    }
    for (const j of found) chosen.add(j);
  }
  return suite.jobs.filter((j) => chosen.has(j));
}
