// The write path of the Minecraft activity kept in the database, on a real SQLite file: a flood of log lines costs a
// bounded number of batches (one per flush window, each at most the kept number of lines an instance), task writes
// are not held behind it, and what is kept reads back trimmed, hostile text intact.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { McLogRecord, MinecraftActivityStore } from '@ccagent/engine';
import { openSqliteStore, type SqliteStore } from '@ccagent/store';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { McActivityRecorder } from './minecraft-activity-recorder.js';

const quiet = { warn() {} };
let dir: string;
let store: SqliteStore;

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'mc-activity-'));
  store = openSqliteStore({ path: path.join(dir, 'ccagent.db') });
});
afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The real store's activity tables, with each line batch's size noted (the writes still go to the file). */
function counted(real: MinecraftActivityStore): { store: MinecraftActivityStore; batches: number[] } {
  const batches: number[] = [];
  return {
    batches,
    store: {
      appendMinecraftLogs: (lines: McLogRecord[], keep: number) => {
        batches.push(lines.length);
        return real.appendMinecraftLogs(lines, keep);
      },
      saveMinecraftAction: (a, keep) => real.saveMinecraftAction(a, keep),
      readMinecraftActivity: (id, limits) => real.readMinecraftActivity(id, limits),
      lastMinecraftLogSeqs: () => real.lastMinecraftLogSeqs(),
    },
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('McActivityRecorder', () => {
  it('writes a flood of 10,000 lines in a bounded number of batches, each at most the kept lines, and keeps the last 200 (guards against a write per line)', async () => {
    const c = counted(store.minecraftActivity);
    const rec = new McActivityRecorder(c.store, quiet, { flushMs: 100, logLines: 200 });
    await rec.load();
    const started = Date.now();
    let taskWriteMs = 0;
    for (let seq = 1; seq <= 10_000; seq++) {
      rec.note({ kind: 'log', instanceId: 'Bot', line: { seq, at: seq, message: `line ${seq} <b>x</b>` } });
      if (seq % 1_000 === 0) {
        // A task write in the middle of the flood: it does not wait behind the lines.
        const t0 = Date.now();
        await store.commit({
          task: {
            id: `t${seq}`,
            kind: 'chat',
            status: 'queued',
            clientId: null,
            prompt: 'p',
            allowedCommands: [],
            memory: null,
            metadata: {},
            budgets: {},
            counters: { steps: 0, toolCalls: 0, questions: 0 },
            createdAt: seq,
            updatedAt: seq,
          },
          create: true,
        });
        taskWriteMs = Math.max(taskWriteMs, Date.now() - t0);
        await sleep(30);
      }
    }
    await rec.flush();
    const elapsed = Date.now() - started;
    // One batch per window of 100 ms (plus the final flush), never one per line.
    expect(c.batches.length).toBeLessThanOrEqual(Math.ceil(elapsed / 100) + 2);
    expect(c.batches.length).toBe(rec.batches);
    expect(Math.max(...c.batches)).toBeLessThanOrEqual(200);
    expect(c.batches.reduce((a, b) => a + b, 0)).toBeLessThan(10_000);
    expect(taskWriteMs).toBeLessThan(1_000);
    const kept = await store.minecraftActivity.readMinecraftActivity('Bot', { logs: 1_000, actions: 10 });
    expect(kept.logs).toHaveLength(200);
    expect(kept.logs[0]).toEqual({ instanceId: 'Bot', seq: 9_801, at: 9_801, message: 'line 9801 <b>x</b>' });
    expect(kept.logs.at(-1)?.seq).toBe(10_000);
  });

  it('writes an action when it ends (not when it starts), keeps NUL as U+FFFD, and resumes numbering after what it stored', async () => {
    const rec = new McActivityRecorder(store.minecraftActivity, quiet, { flushMs: 50, actions: 2 });
    await rec.load();
    const start = { actionId: 'a1', type: 'chat', taskId: 't1', startedAt: 10, endedAt: null, outcome: null };
    rec.note({ kind: 'action', instanceId: 'Bot', action: start });
    await rec.flush();
    expect((await rec.read('Bot')).actions).toEqual([]);
    for (const [i, id] of ['a1', 'a2', 'a3'].entries()) {
      rec.note({
        kind: 'action',
        instanceId: 'Bot',
        action: {
          ...start,
          actionId: id,
          startedAt: 10 + i,
          endedAt: 20 + i,
          outcome: { ok: false, code: 'action_failed', error: 'bad\u0000<script>' },
        },
      });
    }
    rec.note({ kind: 'log', instanceId: 'Bot', line: { seq: 7, at: 1, message: 'nul\u0000here' } });
    await rec.close();
    const got = await rec.read('Bot');
    expect(got.actions.map((a) => [a.actionId, a.ok, a.code, a.error, a.endedAt - a.startedAt])).toEqual([
      ['a2', false, 'action_failed', 'bad\uFFFD<script>', 10],
      ['a3', false, 'action_failed', 'bad\uFFFD<script>', 10],
    ]);
    expect(got.logs).toEqual([{ instanceId: 'Bot', seq: 7, at: 1, message: 'nul\uFFFDhere' }]);
    const again = new McActivityRecorder(store.minecraftActivity, quiet);
    await again.load();
    expect(again.lastLogSeq('Bot')).toBe(7);
    expect(again.lastLogSeq('Other')).toBe(0);
  });
});
