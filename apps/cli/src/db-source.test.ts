import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Engine, type Decision, type TaskStrategy } from '@ccagent/engine';
import { openSqliteStore } from '@ccagent/store';
import { afterEach, describe, expect, it } from 'vitest';
import { openDbSource } from './db-source.js';
import { runCli } from './program.js';
import type { TaskSource } from './source.js';

// Real SQLite files: a writing engine in this process (as the orchestrator), the CLI's read-only source on the same
// file.

let cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/**
 * An engine writing `first` note records in step 1, then `second` more in step 2 once `release()` is called
 * (`written` resolves when they are on disk, before the task completes).
 */
async function writer(first: number, second: number) {
  const dir = mkdtempSync(path.join(tmpdir(), 'ccagent-cli-db-'));
  const db = path.join(dir, 'ccagent.db');
  const store = openSqliteStore({ path: db });
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let wrote!: () => void;
  const written = new Promise<void>((r) => (wrote = r));
  const strategy: TaskStrategy = {
    async decide(_task, _history, ctx): Promise<Decision> {
      if (ctx.step === 1) {
        for (let i = 0; i < first; i++) await ctx.logStep({ kind: 'note', output: { i } });
        return { type: 'continue', note: 'first batch', wakeAfterMs: 0 };
      }
      await released;
      for (let i = 0; i < second; i++) await ctx.logStep({ kind: 'note', output: { i } });
      wrote();
      return { type: 'complete', result: { notes: first + second } };
    },
  };
  const engine = new Engine({ store, strategies: { notes: strategy }, tickIntervalMs: 0 });
  await engine.start();
  cleanup.push(
    () => rmSync(dir, { recursive: true, force: true }),
    () => store.close(),
    () => engine.stop(),
  );
  const task = await engine.createTask({
    id: 'notes-1',
    kind: 'notes',
    prompt: 'write notes',
    clientId: null,
  });
  return { db, store, engine, taskId: task.id, release, written };
}

describe('DbTaskSource.getTaskUpdates', () => {
  it('returns the task, its questions and only the records after a seq, a page at a time (guards against reading the whole log)', async () => {
    const w = await writer(30, 0);
    for (let n = 0; n < 200 && (await w.store.getSteps(w.taskId)).length < 30; n++)
      await new Promise((r) => setTimeout(r, 10));
    const src = await openDbSource(w.db);
    cleanup.push(() => src.close());
    const all = (await src.getTask(w.taskId)).steps;
    expect(all.length).toBeGreaterThanOrEqual(30);
    const page = await src.getTaskUpdates(w.taskId, 10, 15);
    expect(page.steps).toEqual(all.slice(10, 25));
    expect(page.hasMore).toBe(true);
    expect(page.task.id).toBe(w.taskId);
    const rest = await src.getTaskUpdates(w.taskId, 25, 1000);
    expect(rest.steps).toEqual(all.slice(25));
    expect(rest.hasMore).toBe(false);
    await expect(src.getTaskUpdates('nope', 0, 10)).rejects.toMatchObject({ code: 'not_found' });
  });
});

describe('tasks follow --db', () => {
  it('reads each record once: every poll asks only for what comes after the last record printed (guards against O(n) polls of a long task)', async () => {
    const w = await writer(300, 450);
    for (let n = 0; n < 400 && (await w.store.getSteps(w.taskId)).length < 300; n++)
      await new Promise((r) => setTimeout(r, 10));
    const real = await openDbSource(w.db);
    const calls: Array<{ afterSeq?: number; limit?: number; seqs: number[]; hasMore?: boolean }> = [];
    // The real source, recording what each read asked for and returned.
    const recording: TaskSource = {
      label: real.label,
      listTasks: (q) => real.listTasks(q),
      listClients: () => real.listClients(),
      listTools: () => real.listTools(),
      close: () => real.close(),
      getTask: async (id) => {
        const d = await real.getTask(id);
        calls.push({ seqs: d.steps.map((s) => s.seq) });
        return d;
      },
      getTaskUpdates: async (id, afterSeq, limit) => {
        if (calls.length === 1) {
          // The first poll finds a backlog larger than a page waiting.
          w.release();
          await w.written;
        }
        const d = await real.getTaskUpdates(id, afterSeq, limit);
        calls.push({ afterSeq, limit, seqs: d.steps.map((s) => s.seq), hasMore: d.hasMore });
        return d;
      },
    };
    let out = '';
    const code = await runCli(['--db', w.db, '--json', 'tasks', 'follow', w.taskId, '--interval', '20'], {
      out: { color: false, width: 100, wrap: false, write: (t) => (out += t) },
      err: (l) => {
        throw new Error(`unexpected error output: ${l}`);
      },
      openDb: async () => recording,
      env: {},
    });
    expect(code).toBe(0);

    const stored = (await w.store.getSteps(w.taskId)).map((s) => s.seq);
    expect(stored.length).toBeGreaterThanOrEqual(752);
    const [first, ...polls] = calls;
    expect(first?.afterSeq).toBeUndefined();
    let have = first?.seqs.at(-1) ?? 0;
    for (const p of polls) {
      expect(p.afterSeq).toBe(have);
      expect(p.seqs.length).toBeLessThanOrEqual(p.limit ?? 0);
      have = p.seqs.at(-1) ?? have;
    }
    expect(calls.flatMap((c) => c.seqs)).toEqual(stored);
    expect(polls.some((p) => p.hasMore === true)).toBe(true);
    const streamed = out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { event: string; step?: { seq: number } })
      .filter((e) => e.event === 'step')
      .map((e) => e.step?.seq);
    expect(streamed).toEqual(stored);
  });
});
