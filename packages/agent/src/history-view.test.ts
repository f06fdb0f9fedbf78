import { describe, expect, it } from 'vitest';
import { resultForModel, viewOutcome } from './history-view.js';

describe('what the model is shown of a command result', () => {
  const full =
    'x.lua:1: boom\nstack traceback:\n\tx.lua:1: in main chunk\n\t/ccagent/ccagent/host.lua:210: in function';
  const result = {
    ok: false,
    output: '',
    error: 'x.lua:1: boom\nstack traceback:\n\tx.lua:1: in main chunk',
    host_traceback: full,
  };

  it('leaves out host_traceback, the untrimmed trace kept for the step log (guards against host frames reaching the model)', () => {
    expect(resultForModel(result)).toEqual({ ok: false, output: '', error: result.error });
    expect(JSON.stringify(resultForModel(result))).not.toContain('host.lua');
  });

  it('the planner view of a failed run has the trimmed traceback only', () => {
    const v = viewOutcome({ ok: true, result });
    expect(v.ok).toBe(false);
    expect(v.traceback).toContain('x.lua:1: in main chunk');
    expect(JSON.stringify(v)).not.toContain('host.lua');
  });

  it('results without it are returned as they are', () => {
    const plain = { ok: true, output: 'hi' };
    expect(resultForModel(plain)).toBe(plain);
    expect(resultForModel('text')).toBe('text');
  });
});
