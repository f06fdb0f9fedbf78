import type { CommandCallRecord, Task } from '@ccagent/engine';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SCHEMA_VERSION } from './migrate.js';
import {
  callAt,
  expectReadBack,
  expectUpgradedFile,
  newTask,
  openOldFile,
  tempDir,
} from '../test/support/test-helpers.js';

let dir: string;
let cleanup: () => void;
beforeEach(() => ({ dir, cleanup } = tempDir()));
afterEach(() => cleanup());

const tasks: Task[] = [
  newTask('a', { status: 'waiting_for_command', clientId: 'pc-1', memory: { n: 1 }, createdAt: 1 }),
  newTask('b', { status: 'running', memory: null, createdAt: 2 }),
];

function call(callId: string, taskId: string, status: CommandCallRecord['status'], createdAt: number) {
  return callAt(callId, taskId, status, createdAt, 'turtle.forward', { moved: createdAt });
}

const calls: CommandCallRecord[] = [
  call('a1', 'a', 'succeeded', 10),
  call('b1', 'b', 'pending', 11),
  call('a2', 'a', 'pending', 12),
  call('a3', 'a', 'failed', 13),
];

describe('a version-2 file (command_calls indexed by task and by status apart)', () => {
  it('is migrated on open to one (task_id, status) index that the pending-calls query uses, with every call and task unchanged (guards against a migration that drops calls or leaves the engine query on a scan)', async () => {
    // A file as a version-2 build left it: the first two checked-in migrations, the stamps, tasks and calls.
    const { file, store } = openOldFile(dir, 2, { tasks, calls });
    expect(SCHEMA_VERSION).toBe(11);
    await expectReadBack(store, tasks, calls);
    expect(await store.listCommandCalls({ taskId: 'a', status: 'pending' })).toStrictEqual([calls[2]]);
    expect(await store.listCommandCalls({ taskId: 'a' })).toStrictEqual([calls[0], calls[2], calls[3]]);
    expect(await store.listCommandCalls({ status: 'pending' })).toStrictEqual([calls[1], calls[2]]);
    // It keeps working: a call closed by a commit is found by its new status.
    await store.commit({
      task: { ...(tasks[0] as Task), status: 'running', updatedAt: 20 },
      commandCall: {
        ...(calls[2] as CommandCallRecord),
        status: 'succeeded',
        outcome: { ok: true, result: 1 },
      },
    });
    expect(await store.listCommandCalls({ taskId: 'a', status: 'pending' })).toEqual([]);
    await store.close();

    expectUpgradedFile(file, (db) => {
      const indexes = (
        db
          .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'command_calls'")
          .all() as Array<{
          name: string;
        }>
      )
        .map((r) => r.name)
        .filter((n) => !n.startsWith('sqlite_autoindex'));
      expect(indexes).toEqual(['command_calls_task_status_idx']);
      const plan = (
        db
          .prepare(
            'EXPLAIN QUERY PLAN SELECT * FROM command_calls WHERE task_id = ? AND status IN (?) ORDER BY created_at, rowid',
          )
          .all('a', 'pending') as Array<{ detail: string }>
      ).map((r) => r.detail);
      expect(plan.join('\n')).toMatch(
        /USING INDEX command_calls_task_status_idx \(task_id=\? AND status=\?\)/,
      );
    });
  });
});
