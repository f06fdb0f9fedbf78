import { describe, expect, it } from 'vitest';
import { answeredRequests, shownSteps } from './timeline.js';
import type { WireStep } from './wire.js';

const rec = (seq: number, kind: string, extra: Partial<WireStep> = {}): WireStep => ({
  seq,
  step: 1,
  kind,
  at: 1000 + seq,
  ...extra,
});

describe('timeline records', () => {
  it('hides a model request once its call’s record is there, like tasks show (guards against every call shown twice)', () => {
    const steps = [
      rec(1, 'model_request', { role: 'planner', started_at: 500 }),
      rec(2, 'planner', { started_at: 500 }),
      rec(3, 'decision'),
    ];
    expect([...answeredRequests(steps)]).toEqual([1]);
    expect(shownSteps(steps).map((s) => s.seq)).toEqual([2, 3]);
  });

  it('keeps a request with no reply (running, or cut short by a restart), and one answered by another role or start', () => {
    const steps = [
      rec(1, 'model_request', { role: 'planner', started_at: 500 }),
      rec(2, 'executor', { started_at: 500 }),
      rec(3, 'planner', { started_at: 501 }),
      rec(4, 'model_request', { output: { role: 'native' }, started_at: 900 }),
    ];
    expect(shownSteps(steps).map((s) => s.seq)).toEqual([1, 2, 3, 4]);
    // The full record's output.role counts as the summary's role.
    expect(shownSteps([...steps, rec(5, 'native', { started_at: 900 })]).map((s) => s.seq)).toEqual([
      1, 2, 3, 5,
    ]);
  });

  it('returns the same array when nothing is hidden (no copy of a 5,000-record timeline per update)', () => {
    const steps = [rec(1, 'native'), rec(2, 'tool_result')];
    expect(shownSteps(steps)).toBe(steps);
  });
});
