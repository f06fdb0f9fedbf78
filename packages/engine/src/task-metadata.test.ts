import { describe, expect, it } from 'vitest';
import { TASK_METADATA_KEYS, resolveAgent, taskName } from './task-metadata.js';
import type { Task } from './types.js';

const task = (id: string, name?: string): Task => ({
  id,
  kind: 'resident_agent',
  status: 'running',
  clientId: 'farm-host',
  prompt: 'p',
  allowedCommands: [],
  memory: null,
  metadata: name !== undefined ? { [TASK_METADATA_KEYS.name]: name } : {},
  budgets: {},
  counters: { steps: 0, toolCalls: 0, questions: 0 },
  createdAt: 0,
  updatedAt: 0,
});

describe('resolveAgent: a trigger naming its agent', () => {
  it('finds the one running task of that name', () => {
    const live = [task('a', 'farm-watcher'), task('b', 'mine-watcher'), task('c')];
    const r = resolveAgent(live, 'farm-watcher');
    expect(r.ok && r.task.id).toBe('a');
    expect(taskName(live[0]!)).toBe('farm-watcher');
    expect(taskName(live[2]!)).toBeUndefined();
  });

  it('still takes a task id (a triggers file written before names), a name winning over an id', () => {
    const r = resolveAgent([task('3f1c'), task('b')], '3f1c');
    expect(r.ok && r.task.id).toBe('3f1c');
    const named = resolveAgent([task('3f1c'), task('b', '3f1c')], '3f1c');
    expect(named.ok && named.task.id).toBe('b');
  });

  it('refuses an unknown name and an ambiguous one, naming the candidates', () => {
    expect(resolveAgent([task('a', 'farm')], 'farn')).toMatchObject({
      ok: false,
      code: 'not_found',
      message: expect.stringContaining('no running task named "farn"'),
    });
    const r = resolveAgent([task('b', 'farm'), task('a', 'farm'), task('c', 'other')], 'farm');
    expect(r).toMatchObject({ ok: false, code: 'ambiguous', candidates: ['a', 'b'] });
    expect(!r.ok && r.message).toMatch(/2 running tasks are named "farm" \(a, b\)/);
  });
});
