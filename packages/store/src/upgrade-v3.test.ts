import type { CommandCallRecord, Task } from '@ccagent/engine';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SCHEMA_VERSION } from './migrate.js';
import { openSqliteStore } from './sqlite-store.js';
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
  newTask('a', { status: 'waiting_for_command', memory: { n: 1 }, createdAt: 1 }),
  newTask('b', { status: 'waiting_for_command', clientId: 'pc-1', memory: null, createdAt: 2 }),
];

function call(callId: string, taskId: string, status: CommandCallRecord['status'], createdAt: number) {
  return callAt(callId, taskId, status, createdAt, 'turtle.dig', { dug: createdAt });
}

const calls: CommandCallRecord[] = [
  call('a1', 'a', 'succeeded', 10),
  call('a2', 'a', 'pending', 11),
  call('b1', 'b', 'pending', 12),
];

describe('a version-3 file (command_calls without sent_to)', () => {
  it('is migrated on open to a nullable sent_to column: every call and task reads back identical and unbound, and its pending calls can be bound and closed keeping the binding (guards against a migration that loses calls or leaves a file the new bindCall cannot write)', async () => {
    // A file as a version-3 build left it: the first three checked-in migrations, the stamps, tasks and calls.
    const { file, store } = openOldFile(dir, 3, { tasks, calls });
    expect(SCHEMA_VERSION).toBe(11);
    await expectReadBack(store, tasks, calls);
    expect(await store.listCommandCalls({ status: 'pending' })).toStrictEqual([calls[1], calls[2]]);
    // A call pending from before the upgrade is bound like a new one, and a commit closing it keeps the binding.
    expect((await store.bindCall('a2', 'pc-7')).sentTo).toBe('pc-7');
    await store.commit({
      task: { ...(tasks[0] as Task), status: 'running', updatedAt: 20 },
      expectedStatus: 'waiting_for_command',
      commandCall: {
        ...(calls[1] as CommandCallRecord),
        status: 'succeeded',
        outcome: { ok: true, result: 1 },
        completedAt: 21,
      },
    });
    expect(await store.getCommandCall('a2')).toMatchObject({ status: 'succeeded', sentTo: 'pc-7' });
    await store.close();

    expectUpgradedFile(file, (db) => {
      const cols = db.prepare('PRAGMA table_info(command_calls)').all() as Array<{
        name: string;
        notnull: number;
      }>;
      expect(cols.find((c) => c.name === 'sent_to')).toMatchObject({ notnull: 0 });
      expect(db.prepare('SELECT call_id, sent_to FROM command_calls ORDER BY created_at').all()).toEqual([
        { call_id: 'a1', sent_to: null },
        { call_id: 'a2', sent_to: 'pc-7' },
        { call_id: 'b1', sent_to: null },
      ]);
    });
    const reader = openSqliteStore({ path: file, readonly: true });
    expect((await reader.getCommandCall('a2'))?.sentTo).toBe('pc-7');
    await reader.close();
  });
});
