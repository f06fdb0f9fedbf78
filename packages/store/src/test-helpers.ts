// Test-only helpers (not exported from index.ts).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { CommandCallRecord, Task } from '@ccagent/engine';

/** A fresh temp dir and its cleanup. */
export function tempDir(prefix = 'ccagent-store-'): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A queued task with defaults. */
export function newTask(id: string, overrides: Partial<Task> = {}): Task {
  return {
    id,
    kind: 'demo',
    status: 'queued',
    clientId: null,
    prompt: `prompt ${id}`,
    allowedCommands: [],
    memory: null,
    metadata: {},
    budgets: {},
    counters: { steps: 0, toolCalls: 0, questions: 0 },
    createdAt: 1,
    updatedAt: 1,
    ...overrides,
  };
}

/**
 * A command call of another task ('other'): a commit carrying it for a task of a different id is refused by the store
 * after that write's task row, history and steps were written, so the write's own rollback is exercised for real.
 */
export const foreignCall: CommandCallRecord = {
  callId: 'x',
  taskId: 'other',
  command: 'noop',
  args: {},
  timeoutMs: 1000,
  status: 'pending',
  dispatchCount: 0,
  createdAt: 1,
};
