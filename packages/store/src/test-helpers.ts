// Test-only helpers (not exported from index.ts).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Task } from '@ccagent/engine';

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
