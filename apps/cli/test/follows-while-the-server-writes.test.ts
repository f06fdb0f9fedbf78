// `--db` is read-only and never blocks the server: while another process (a real Engine on a read-write SqliteStore,
// as in the orchestrator) keeps committing, the built CLI lists, shows and follows the task, every read succeeds,
// `tasks follow` sees every step exactly once and ends when the task does, and no commit of the writer stalls.
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { openSqliteStore } from '@ccagent/store';
import { describe, expect, inject, it } from 'vitest';
import { FIXTURE_IDS } from './support/fixture-db.js';
import { normalize, runCli, startCli, type CliRun } from './support/run-cli.js';

const WRITER = fileURLToPath(new URL('./support/writer.mjs', import.meta.url));
const STEPS = 100;

interface FollowEvent {
  event: 'task' | 'step' | 'status' | 'end';
  status?: string;
  from?: string;
  step?: { seq: number; step: number; kind: string };
  task?: { status: string };
}

describe('tasks follow and reads while the server writes', () => {
  it('reads through the WAL without blocking the writer, and follow streams every step until the task ends', async () => {
    const db = path.join(mkdtempSync(path.join(tmpdir(), 'ccagent-cli-writer-')), 'ccagent.db');
    const id = 'dig-tunnel-1';
    const writer = spawn(process.execPath, [WRITER, db, id, String(STEPS)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let writerOut = '';
    let writerErr = '';
    writer.stderr.setEncoding('utf8').on('data', (d: string) => (writerErr += d));
    const writerDone = new Promise<number | null>((resolve) => writer.on('close', resolve));
    await new Promise<void>((resolve, reject) => {
      writer.stdout.setEncoding('utf8').on('data', (d: string) => {
        writerOut += d;
        if (writerOut.includes('ready\n')) resolve();
      });
      writer.on('close', () => reject(new Error(`writer exited early: ${writerErr}`)));
    });

    const follow = startCli(['--db', db, '--json', 'tasks', 'follow', id, '--interval', '25']);
    let followOut = '';
    let followErr = '';
    follow.stdout?.setEncoding('utf8').on('data', (d: string) => (followOut += d));
    follow.stderr?.setEncoding('utf8').on('data', (d: string) => (followErr += d));
    const followDone = new Promise<number | null>((resolve) => follow.on('close', resolve));

    // Meanwhile, one-shot reads one after another for as long as the writer runs.
    let writerRunning = true;
    void writerDone.then(() => (writerRunning = false));
    const reads: CliRun[] = [];
    const seenSteps = new Set<number>();
    while (writerRunning) {
      const show = await runCli(['--db', db, '--json', 'tasks', 'show', id]);
      reads.push(show);
      if (show.code === 0) seenSteps.add((JSON.parse(show.stdout) as { steps: unknown[] }).steps.length);
      reads.push(await runCli(['--db', db, 'tasks', 'list']));
    }
    expect(await writerDone).toBe(0);
    expect(await followDone).toBe(0);

    // No read failed, and the reads really happened while the task was moving.
    expect(reads.filter((r) => r.code !== 0)).toEqual([]);
    expect(reads.length).toBeGreaterThanOrEqual(4);
    expect(seenSteps.size).toBeGreaterThanOrEqual(2);

    // The writer never waited on a lock held by a reader (a blocked commit waits up to the 5 s busy timeout or
    // fails with SQLITE_BUSY).
    const stats = JSON.parse(writerOut.trim().split('\n').at(-1) ?? '{}') as {
      commits: number;
      maxCommitMs: number;
      errors: string[];
    };
    expect(stats.errors).toEqual([]);
    expect(stats.commits).toBeGreaterThan(STEPS);
    expect(stats.maxCommitMs).toBeLessThan(2000);

    // follow: the task, every step record exactly once in order, the status changes, the end.
    expect(followErr).toBe('');
    const events = followOut
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as FollowEvent);
    expect(events[0]?.event).toBe('task');
    expect(events.at(-1)).toMatchObject({ event: 'end', status: 'completed', task: { status: 'completed' } });
    const store = openSqliteStore({ path: db, readonly: true });
    const stored = await store.getSteps(id);
    await store.close();
    const streamed = events.filter((e) => e.event === 'step').map((e) => e.step?.seq);
    expect(streamed).toEqual(stored.map((s) => s.seq));
    expect(stored.filter((s) => s.kind === 'planner')).toHaveLength(STEPS);
    const statuses = events.filter((e) => e.event === 'status').map((e) => e.status);
    expect(statuses.at(-1)).toBe('completed');
  });

  it('follow of a finished task prints it and exits at once: 0 when completed, 1 when failed or cancelled', async () => {
    const db = inject('fixtureDb');
    const done = await runCli(['--db', db, 'tasks', 'follow', FIXTURE_IDS.countdown]);
    expect(done.code).toBe(0);
    const show = await runCli(['--db', db, 'tasks', 'show', FIXTURE_IDS.countdown]);
    // The same header and records as `tasks show`.
    expect(normalize(done.stdout)).toBe(normalize(show.stdout));
    expect((await runCli(['--db', db, 'tasks', 'follow', FIXTURE_IDS.unknownKind])).code).toBe(1);
    const cancelled = await runCli(['--db', db, '--json', 'tasks', 'follow', FIXTURE_IDS.cancelled]);
    expect(cancelled.code).toBe(1);
    // Cancelled before its first model call got a reply: at most the request record written before that call left
    // (the step log shows every request the model server may have received), and no other step.
    const events = cancelled.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as FollowEvent);
    expect(events.map((e) => e.event).filter((e) => e !== 'step')).toEqual(['task', 'end']);
    for (const e of events) if (e.event === 'step') expect(e.step?.kind).toBe('model_request');
  });
});
