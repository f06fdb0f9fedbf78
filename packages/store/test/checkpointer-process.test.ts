/**
 * Process-level checks of the checkpointer (real process, real worker thread, real SQLite file): the worker never
 * keeps a process alive, and a `kill -9` while it checkpoints under a writer with `wal_autocheckpoint = 0` loses no
 * acknowledged commit and leaves a consistent database.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { tempDir } from './support/test-helpers.js';

const HOST = fileURLToPath(new URL('./checkpointer-host.ts', import.meta.url));

let dir: string;
let cleanup: () => void;
beforeEach(() => ({ dir, cleanup } = tempDir('ccagent-ckpt-proc-')));
afterEach(() => cleanup());

interface Run {
  stdout: string;
  code: number | null;
  signal: NodeJS.Signals | null;
  ms: number;
}

/** Run the host; `killWhen` sees its output so far and says when to kill -9 it. A 20 s guard kills it anyway. */
function runHost(env: Record<string, string>, killWhen?: (stdout: string) => boolean): Promise<Run> {
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    const child = spawn(process.execPath, ['--import', 'tsx', HOST], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    const guard = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      if (killWhen?.(stdout)) child.kill('SIGKILL');
    });
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      clearTimeout(guard);
      if (code !== 0 && signal === null) reject(new Error(`host failed (${code}): ${stderr}`));
      else resolve({ stdout, code, signal, ms: Date.now() - t0 });
    });
  });
}

function lastNumber(stdout: string, word: string): number {
  const all = [...stdout.matchAll(new RegExp(`^${word} (\\d+)$`, 'gm'))];
  return all.length === 0 ? 0 : Number(all[all.length - 1]?.[1]);
}

function rowsOnDisk(file: string): { n: number; integrity: unknown } {
  const db = new Database(file);
  try {
    return {
      n: (db.prepare('SELECT count(*) AS n FROM rows').get() as { n: number }).n,
      integrity: db.pragma('integrity_check', { simple: true }),
    };
  } finally {
    db.close();
  }
}

describe('checkpointer in a real process', () => {
  it('does not keep the process alive: a host that never calls stop() exits by itself, rows intact (guards against a server that cannot exit)', async () => {
    const file = path.join(dir, 'db.sqlite');
    const run = await runHost({ HOST_DB: file, HOST_ROWS: '1500' });
    expect(run.signal).toBeNull();
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('RETURNING');
    expect(lastNumber(run.stdout, 'CHECKPOINTS')).toBeGreaterThan(0);
    expect(rowsOnDisk(file)).toEqual({ n: 1500, integrity: 'ok' });
  });

  it('kill -9 while the worker checkpoints loses no acknowledged commit and leaves a consistent file (guards against checkpoints off the writer thread tearing the database)', async () => {
    const file = path.join(dir, 'db.sqlite');
    const run = await runHost(
      { HOST_DB: file, HOST_ROWS: '0' },
      (out) => lastNumber(out, 'CHECKPOINTS') >= 20,
    );
    expect(run.signal).toBe('SIGKILL');
    const acknowledged = lastNumber(run.stdout, 'COMMITTED');
    expect(acknowledged).toBeGreaterThan(0);
    const onDisk = rowsOnDisk(file);
    expect(onDisk.integrity).toBe('ok');
    // Rows may be one ahead of the last line read (committed, not yet printed), never behind.
    expect(onDisk.n).toBeGreaterThanOrEqual(acknowledged);
    expect(onDisk.n).toBeLessThanOrEqual(acknowledged + 1);
  });
});
