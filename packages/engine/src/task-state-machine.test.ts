import { describe, expect, it } from 'vitest';
import { isEngineError } from './engine-error.js';
import { TASK_TRANSITIONS, assertTransition, canTransition, isTerminalStatus } from './task-state-machine.js';
import { TASK_STATUSES, type TaskStatus } from './types.js';

const LEGAL: Array<[TaskStatus, TaskStatus]> = [
  ['queued', 'running'],
  ['queued', 'failed'],
  ['queued', 'cancelled'],
  ['running', 'waiting_for_command'],
  ['running', 'waiting_for_user'],
  ['running', 'completed'],
  ['running', 'failed'],
  ['running', 'cancelled'],
  ['waiting_for_command', 'running'],
  ['waiting_for_command', 'failed'],
  ['waiting_for_command', 'cancelled'],
  ['waiting_for_user', 'running'],
  ['waiting_for_user', 'waiting_for_command'], // a confirmed destructive call
  ['waiting_for_user', 'failed'],
  ['waiting_for_user', 'cancelled'],
  ['completed', 'queued'],
  ['failed', 'queued'],
  ['cancelled', 'queued'],
];

describe('task state machine', () => {
  it('the table holds exactly the documented edges (guards against an edge added or dropped by accident)', () => {
    const table = TASK_STATUSES.flatMap((from) => TASK_TRANSITIONS[from].map((to) => [from, to]));
    expect(table.sort()).toEqual([...LEGAL].sort());
  });

  for (const from of TASK_STATUSES) {
    for (const to of TASK_STATUSES) {
      const legal = LEGAL.some(([f, t]) => f === from && t === to);
      it(`${from} → ${to} is ${legal ? 'legal' : 'rejected with illegal_transition'}`, () => {
        expect(canTransition(from, to)).toBe(legal);
        if (legal) {
          expect(assertTransition(from, to)).toBe(to);
        } else {
          let caught: unknown;
          try {
            assertTransition(from, to, 'task-1');
          } catch (err) {
            caught = err;
          }
          expect(isEngineError(caught, 'illegal_transition')).toBe(true);
          expect((caught as Error).message).toContain(`${from} → ${to}`);
        }
      });
    }
  }

  it('terminal states are exactly completed/failed/cancelled and their only way out is a reopen to queued (guards against reviving a finished task into a running state)', () => {
    expect(TASK_STATUSES.filter(isTerminalStatus)).toEqual(['completed', 'failed', 'cancelled']);
    for (const s of ['completed', 'failed', 'cancelled'] as const) {
      for (const to of TASK_STATUSES) expect(canTransition(s, to)).toBe(to === 'queued');
    }
  });
});
