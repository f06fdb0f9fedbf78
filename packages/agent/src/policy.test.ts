import { describe, expect, it } from 'vitest';
import { checkCompletion, repeatCount } from './policy.js';
import { HistoryBuilder } from '../test/support/test-history.js';

const ok = (output: string) => ({ ok: true as const, result: { ok: true, output } });
const crashed = (error: string) => ({ ok: true as const, result: { ok: false, output: '', error } });

describe('checkCompletion', () => {
  it('accepts a successful run after the last write and quotes it as evidence', () => {
    const h = new HistoryBuilder()
      .call('fs_write', { path: 'a.lua', content: 'x' }, { ok: true, result: { path: 'a.lua', bytes: 1 } })
      .call('run_program', { path: 'a.lua', args: ['go'] }, ok('went'));
    expect(checkCompletion(h.entries, {})).toEqual({
      ok: true,
      evidence: [{ call: 'run_program a.lua go', output: 'went' }],
    });
  });

  it('does not count runs of an older version as proof (guards against "tested" claims on replaced code)', () => {
    const h = new HistoryBuilder()
      .call('run_program', { path: 'a.lua', args: [] }, ok('fine'))
      .call('fs_write', { path: 'a.lua', content: 'y' }, { ok: true, result: {} });
    const v = checkCompletion(h.entries, {});
    expect(v).toMatchObject({ ok: false });
    if (!v.ok) expect(v.reason).toContain('since the last file write');
  });

  it('rejects when the most recent run crashed, even after earlier successes', () => {
    const h = new HistoryBuilder()
      .call('run_program', { path: 'a.lua', args: ['1'] }, ok('fine'))
      .call('run_program', { path: 'a.lua', args: ['2'] }, crashed('/a.lua:3: boom'));
    const v = checkCompletion(h.entries, {});
    expect(v).toMatchObject({ ok: false });
    if (!v.ok) expect(v.reason).toBe('the last run (run_program a.lua 2) failed: /a.lua:3: boom');
    expect(checkCompletion(h.entries, { requireLastRunOk: false }).ok).toBe(true);
  });

  it('matches required runs by program (with or without .lua) and argument prefix, after that file changed', () => {
    const h = new HistoryBuilder()
      .call('fs_write', { path: '/todo.lua', content: 'x' }, { ok: true, result: {} })
      .call('run_program', { path: 'todo', args: ['add', 'milk'] }, ok('Added'));
    expect(checkCompletion(h.entries, { requiredRuns: [{ path: 'todo.lua', args: ['add'] }] }).ok).toBe(true);
    const v = checkCompletion(h.entries, { requiredRuns: [{ path: 'todo.lua', args: ['stats'] }] });
    expect(v).toMatchObject({ ok: false });
    if (!v.ok) expect(v.reason).toContain('"todo.lua stats"');
  });

  it('allows a task with no runs at all only when runs are not required', () => {
    const h = new HistoryBuilder().call(
      'fs_write',
      { path: 'n.txt', content: 'x' },
      { ok: true, result: {} },
    );
    expect(checkCompletion(h.entries, {}).ok).toBe(false);
    expect(checkCompletion(h.entries, { requireSuccessfulRun: false })).toEqual({ ok: true, evidence: [] });
  });
});

describe('repeatCount', () => {
  it('counts identical calls in a row from the latest, whatever the key order of the arguments', () => {
    const h = new HistoryBuilder()
      .call('run_program', { path: 'a', args: ['x'] }, ok(''))
      .call('run_program', { args: ['x'], path: 'a' }, ok(''))
      .call('run_program', { path: 'a', args: ['x'] }, ok(''));
    expect(repeatCount(h.entries, 'run_program', { path: 'a', args: ['x'] })).toBe(3);
    expect(repeatCount(h.entries, 'run_program', { path: 'a', args: ['y'] })).toBe(0);
    h.call('fs_write', { path: 'a', content: '' }, ok(''));
    expect(repeatCount(h.entries, 'run_program', { path: 'a', args: ['x'] })).toBe(0);
  });
});
