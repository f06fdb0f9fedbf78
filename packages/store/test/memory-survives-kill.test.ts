/**
 * Process-level (not mocked): a process changing one task's memory as fast as it can through the built store is
 * killed with SIGKILL at three moments, restarted on the same file each time, and the file is checked after each
 * kill: the task's memory is the last one acknowledged (or the next, committed but not yet reported), and it is
 * consistent with the task row committed in the same transaction.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { openSqliteStore } from '../src/index.js';
import { tempDir } from './support/test-helpers.js';

const WRITER = fileURLToPath(new URL('./fixtures/memory-writer.mjs', import.meta.url));
const { dir, cleanup } = tempDir('ccagent-memory-kill-');
afterAll(() => cleanup());
const file = path.join(dir, 'ccagent.db');

/** Run the writer; SIGKILL it once it has acknowledged `killAt` rounds (or let it finish `rounds`). */
function runWriter(opts: {
  killAt?: number;
  rounds?: number;
}): Promise<{ acked: number; out: string; signal: string | null }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [WRITER], {
      env: { ...process.env, MW_DB: file, MW_ROUNDS: String(opts.rounds ?? 1_000_000) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const guard = setTimeout(() => child.kill('SIGKILL'), 15_000);
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (opts.killAt !== undefined && out.includes(`ACK ${opts.killAt}\n`)) child.kill('SIGKILL');
    });
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('exit', (_code, signal) => {
      clearTimeout(guard);
      const acks = [...out.matchAll(/^ACK (\d+)$/gm)].map((m) => Number(m[1]));
      resolve({ acked: acks.at(-1) ?? 0, out, signal });
    });
  });
}

async function stored(): Promise<{ n: number; steps: number; toolCalls: number }> {
  const store = openSqliteStore({ path: file, synchronous: 'normal' });
  const task = await store.getTask('mw');
  await store.close();
  const memory = task?.memory as { n: number; pad: string } | undefined;
  expect(memory?.pad).toHaveLength(3000);
  return { n: memory?.n ?? -1, steps: task?.counters.steps ?? -1, toolCalls: task?.counters.toolCalls ?? -1 };
}

describe('task memory across kill -9', () => {
  it(
    'reopening after each kill returns the last committed memory, consistent with its task row (guards against a memory write skipped or lost around a crash)',
    { timeout: 30_000 },
    async () => {
      let acked = 0;
      for (const more of [25, 40, 60]) {
        const run = await runWriter({ killAt: acked + more });
        expect(run.signal, run.out).toBe('SIGKILL');
        expect(run.acked).toBeGreaterThanOrEqual(acked + more);
        acked = run.acked;
        const s = await stored();
        // Acknowledged means on disk; the round in flight may have committed without being reported.
        expect([acked, acked + 1]).toContain(s.n);
        // The memory and the task row were written in one transaction: they agree.
        expect(s.steps).toBe(s.n);
        // The result commit of round n (memory unchanged) may stand alone only when n is even (two transactions).
        expect(
          s.toolCalls === s.steps || (s.toolCalls === s.steps + 1 && s.toolCalls % 2 === 0),
          JSON.stringify(s),
        ).toBe(true);
        acked = s.n;
      }
      const last = await runWriter({ rounds: 5 });
      expect(last.out).toContain(`DONE ${acked + 5}`);
      expect(await stored()).toEqual({ n: acked + 5, steps: acked + 5, toolCalls: acked + 5 });
    },
  );
});
