/**
 * Process-level crash test (not mocked): an engine host process (test/fixtures/engine-host.mjs, on the BUILT
 * packages) runs eight scripted tasks against a real SQLite file. Each trial `kill -9`s it at a chosen point — right
 * after its Nth durable write, right after its Nth real command execution (before the result is reported), or after a
 * random delay — then restarts it on the same file until it finishes. Every trial must end in exactly the state of an
 * uninterrupted reference run: same task results, same history, same step log (minus the records of attempts a kill
 * interrupted, which the engine marks with a `resumed` record), same command calls — and no command executed twice.
 *
 * CCAGENT_LONG=1 tries every write and execution point and more random kills.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../src/index.js';

const HOST = fileURLToPath(new URL('./fixtures/engine-host.mjs', import.meta.url));
const LONG = process.env.CCAGENT_LONG === '1';
const SEED = Number(process.env.CCAGENT_CRASH_SEED ?? 20240611);
const PARALLEL = 2;

const root = mkdtempSync(path.join(tmpdir(), 'ccagent-crash-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

interface HostRun {
  stdout: string;
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** Start the host; kill -9 it when it reports BLOCKED, or after `killAfterMs`. */
function runHost(
  dir: string,
  opts: { killAfter?: number; killInExec?: number; killAfterMs?: number },
): Promise<HostRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [HOST], {
      env: {
        ...process.env,
        HOST_DB: path.join(dir, 'ccagent.db'),
        HOST_EFFECTS: path.join(dir, 'effects.jsonl'),
        HOST_KILL_AFTER: String(opts.killAfter ?? 0),
        HOST_KILL_IN_EXEC: String(opts.killInExec ?? 0),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    const guard = setTimeout(() => child.kill('SIGKILL'), 15_000);
    const timer =
      opts.killAfterMs === undefined ? undefined : setTimeout(() => child.kill('SIGKILL'), opts.killAfterMs);
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      if (stdout.includes('BLOCKED')) child.kill('SIGKILL');
    });
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      clearTimeout(guard);
      if (timer) clearTimeout(timer);
      if (stderr.trim()) stdout += `\n[stderr] ${stderr}`;
      resolve({ stdout, code, signal });
    });
  });
}

const VOLATILE = new Set([
  'at',
  'createdAt',
  'updatedAt',
  'completedAt',
  'askedAt',
  'answeredAt',
  'startedAt',
  'durationMs',
  'wakeAt',
  'dispatchCount',
]);

/** Drop wall-clock fields (and the re-dispatch counter) recursively: they legitimately differ between runs. */
function stable(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(stable);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value)
        .filter(([k]) => !VOLATILE.has(k))
        .map(([k, v]) => [k, stable(v)]),
    );
  }
  return value;
}

interface Snapshot {
  tasks: Record<string, unknown>;
  effects: Record<string, number>;
  resumedMarkers: number;
  redispatched: number;
}

/** Everything a user could observe about the finished run, normalised. */
async function snapshot(dir: string): Promise<Snapshot> {
  const store = openSqliteStore({ path: path.join(dir, 'ccagent.db'), readonly: true });
  const tasks: Record<string, unknown> = {};
  let resumedMarkers = 0;
  let redispatched = 0;
  for (const task of await store.listTasks()) {
    const steps = await store.getSteps(task.id);
    // A `resumed` record marks a step a kill interrupted: the records of that step before it belong to the lost
    // attempt. Everything else must match the reference exactly.
    const kept = steps.filter((s, i) => {
      if (s.kind === 'resumed') return false;
      return !steps.slice(i + 1).some((later) => later.kind === 'resumed' && later.step === s.step);
    });
    resumedMarkers += steps.length - kept.length > 0 ? 1 : 0;
    const calls = await store.listCommandCalls({ taskId: task.id });
    redispatched += calls.filter((c) => c.dispatchCount > 1).length;
    const history = await store.getHistory(task.id);
    expect(
      history.map((h) => h.seq),
      `history seq of ${task.id}`,
    ).toEqual(history.map((_, i) => i + 1));
    expect(
      steps.map((s) => s.seq),
      `step seq of ${task.id}`,
    ).toEqual(steps.map((_, i) => i + 1));
    tasks[task.id] = stable({
      task,
      history,
      steps: kept.map(({ seq: _seq, ...s }) => s),
      calls,
      questions: await store.listQuestions(task.id),
    });
  }
  await store.close();
  const effects: Record<string, number> = {};
  for (const line of readFileSync(path.join(dir, 'effects.jsonl'), 'utf8').split('\n')) {
    if (!line) continue;
    const { callId } = JSON.parse(line) as { callId: string };
    effects[callId] = (effects[callId] ?? 0) + 1;
  }
  return { tasks, effects, resumedMarkers, redispatched };
}

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface Trial {
  name: string;
  kills: Array<{ killAfter?: number; killInExec?: number; killAfterMs?: number }>;
}

let reference: Snapshot;
let totalWrites = 0;
let totalExecutions = 0;
let referenceMs = 0;
let dirCount = 0;

/** Run the kills of a trial in successive processes on one DB, then a final run to the end. */
async function runTrial(trial: Trial): Promise<{ snap: Snapshot; log: string[]; landed: number }> {
  const dir = path.join(root, `trial-${++dirCount}`);
  mkdirSync(dir);
  const log: string[] = [];
  let landed = 0;
  for (const [i, kill] of trial.kills.entries()) {
    const r = await runHost(dir, kill);
    log.push(`${JSON.stringify(kill)} → ${r.signal ?? r.code}: ${r.stdout.trim().split('\n').at(-1) ?? ''}`);
    if (r.signal === 'SIGKILL') landed += 1;
    if (kill.killAfterMs !== undefined) continue;
    if (i === 0) {
      // The first deterministic kill point of a trial must really be reached (the host blocked there).
      expect(r.stdout, log.join('\n')).toContain('BLOCKED');
      expect(r.signal, log.join('\n')).toBe('SIGKILL');
    } else if (r.signal !== 'SIGKILL') {
      // A later point may lie beyond the work left after the previous kill: then the host simply finished.
      expect(r.stdout, log.join('\n')).toContain('DONE');
    }
  }
  const final = await runHost(dir, {});
  log.push(`final → ${final.signal ?? final.code}: ${final.stdout.trim()}`);
  expect(final.code, log.join('\n')).toBe(0);
  expect(final.stdout, log.join('\n')).toContain('DONE');
  return { snap: await snapshot(dir), log, landed };
}

beforeAll(async () => {
  const dir = path.join(root, 'reference');
  mkdirSync(dir);
  const started = Date.now();
  const r = await runHost(dir, {});
  referenceMs = Date.now() - started;
  expect(r.code, r.stdout).toBe(0);
  const m = /DONE writes=(\d+) executions=(\d+)/.exec(r.stdout);
  expect(m, r.stdout).not.toBeNull();
  totalWrites = Number(m?.[1]);
  totalExecutions = Number(m?.[2]);
  reference = await snapshot(dir);
});

describe('engine host killed with SIGKILL and restarted on the same SQLite file', () => {
  it('the uninterrupted reference run does what the script says (guards against comparing against a broken baseline)', () => {
    const t = reference.tasks as Record<
      string,
      { task: { status: string; result?: unknown; error?: { code: string } } }
    >;
    expect(Object.keys(t).sort()).toEqual([
      'ask',
      'budget',
      'cancel',
      'count-a',
      'count-b',
      'flaky',
      'hang',
      'sleepy',
    ]);
    expect(t['count-a']?.task).toMatchObject({ status: 'completed', result: { sum: 20 } });
    expect(t['count-b']?.task).toMatchObject({ status: 'completed', result: { sum: 42 } });
    expect(t.ask?.task).toMatchObject({
      status: 'completed',
      result: { ok: true, result: { echoed: { colour: 'blue (ask:q:1)' } } },
    });
    expect(t.flaky?.task).toMatchObject({ status: 'completed', result: [false, true] });
    expect(t.hang?.task).toMatchObject({ status: 'completed', result: { timedOut: true } });
    expect(t.budget?.task).toMatchObject({ status: 'failed', error: { code: 'budget_exhausted' } });
    expect(t.cancel?.task).toMatchObject({ status: 'cancelled' });
    expect(t.sleepy?.task).toMatchObject({ status: 'completed', result: 'rested' });
    expect(Object.values(reference.effects).every((n) => n === 1)).toBe(true);
    expect(Object.keys(reference.effects)).toHaveLength(totalExecutions);
    expect(totalWrites).toBeGreaterThan(50);
  });

  it(
    `reaches the reference state after kill -9 at ≥ 20 distinct points${LONG ? ' (long run)' : ''}`,
    { timeout: LONG ? 900_000 : 60_000 },
    async () => {
      const random = mulberry32(SEED);
      const W = totalWrites;
      const trials: Trial[] = [];
      if (LONG) {
        for (let n = 1; n <= W; n++) trials.push({ name: `after write ${n}`, kills: [{ killAfter: n }] });
        for (let n = 1; n <= totalExecutions; n++) {
          trials.push({ name: `inside execution ${n}`, kills: [{ killInExec: n }] });
        }
      } else {
        // 16 points spread over the whole run, two per trial: the second lands in the restarted process, in the middle
        // of what was left, so recovery itself is interrupted too.
        const firsts = Array.from({ length: 8 }, (_, i) => 1 + Math.round((i * (W - 3)) / 7));
        for (const a of firsts) {
          const b = Math.max(1, Math.floor((W - a) / 2));
          trials.push({
            name: `after write ${a}, then after write ${b}`,
            kills: [{ killAfter: a }, { killAfter: b }],
          });
        }
        const midExec = Math.ceil(totalExecutions / 2);
        trials.push({ name: 'inside execution 1, then 3', kills: [{ killInExec: 1 }, { killInExec: 3 }] });
        trials.push({
          name: `inside execution ${midExec}`,
          kills: [{ killInExec: midExec }, { killAfter: 5 }],
        });
      }
      // Several kills in a row, each in the restarted process.
      trials.push({
        name: 'chain',
        kills: [{ killAfter: 7 }, { killAfter: 15 }, { killInExec: 2 }, { killAfter: 30 }],
      });
      // Random timing (seeded; set CCAGENT_CRASH_SEED to replay).
      const randomKills = Array.from({ length: LONG ? 20 : 3 }, () => ({
        killAfterMs: Math.round(60 + random() * Math.max(100, referenceMs)),
      }));
      trials.push({ name: `random ${JSON.stringify(randomKills)}`, kills: randomKills });

      const queue = [...trials];
      let landed = 0;
      let resumed = 0;
      let redispatched = 0;
      const worker = async () => {
        for (let trial = queue.shift(); trial; trial = queue.shift()) {
          const run = await runTrial(trial);
          const { snap, log } = run;
          landed += run.landed;
          const where = `${trial.name} (seed ${SEED})\n${log.join('\n')}`;
          expect(snap.tasks, where).toEqual(reference.tasks);
          // No command executed twice for one call_id, and none lost.
          expect(
            Object.entries(snap.effects).filter(([, n]) => n !== 1),
            where,
          ).toEqual([]);
          expect(Object.keys(snap.effects).sort(), where).toEqual(Object.keys(reference.effects).sort());
          resumed += snap.resumedMarkers;
          redispatched += snap.redispatched;
        }
      };
      await Promise.all(Array.from({ length: PARALLEL }, worker));
      // The kills really hit the interesting windows: mid-step (a repeated step) and mid-call (a re-sent call_id).
      expect(resumed).toBeGreaterThan(0);
      expect(landed).toBeGreaterThanOrEqual(20);
      expect(redispatched).toBeGreaterThan(0);
    },
  );
});
