import { describe, expect, it } from 'vitest';
import { loadConfig } from '../config.js';
import { confirmationRule } from './confirmation-rule.js';

function ruleOf(confirm: Record<string, unknown>) {
  const loaded = loadConfig({ overrides: { taskKinds: { careful: { strategy: 'native', confirm } } } });
  if (!loaded.ok) throw loaded.error;
  const rule = confirmationRule(loaded.value);
  if (!rule) throw new Error('no rule');
  return rule;
}

describe('confirmationRule', () => {
  it('flags writes, deletes and moves outside the sandbox, also through "..", and lets the inside through', () => {
    const r = ruleOf({ sandbox: '/work/' });
    expect(r('careful', 'fs_delete', { path: '/startup.lua' })).toContain('outside the task');
    expect(r('careful', 'fs_write', { path: '/work/../startup.lua', content: '' })).toContain('/startup.lua');
    expect(r('careful', 'fs_move', { from: '/work/a', to: 'rom/b' })).toContain('/rom/b');
    expect(r('careful', 'fs_write', { path: '/workshop/x', content: '' })).toBeDefined();
    expect(r('careful', 'fs_write', { path: 'work/sub/x', content: '' })).toBeUndefined();
    expect(r('careful', 'fs_delete', { path: '/work' })).toBeUndefined();
    expect(r('careful', 'fs_read', { path: '/startup.lua' })).toBeUndefined();
    // Other kinds have no rule.
    expect(r('general_agent', 'fs_delete', { path: '/startup.lua' })).toBeUndefined();
  });

  it('flags shell lines and program runs matching a pattern (case-insensitive) and every call of a listed command', () => {
    const r = ruleOf({ commands: ['turtle_dig'], shellPatterns: ['^\\s*(rm|delete)\\b', 'format'] });
    expect(r('careful', 'shell_exec', { command: '  RM /disk/x' })).toContain('matches');
    expect(r('careful', 'run_program', { path: '/bin/tool.lua', args: ['--format', 'all'] })).toBeDefined();
    expect(r('careful', 'shell_exec', { command: 'ls /' })).toBeUndefined();
    expect(r('careful', 'turtle_dig', {})).toMatch(/^Allow turtle_dig \{\}\?/);
  });

  it('refuses a bad pattern or a relative sandbox when the config is loaded', () => {
    for (const confirm of [{ shellPatterns: ['(unclosed'] }, { sandbox: 'work' }]) {
      const loaded = loadConfig({ overrides: { taskKinds: { careful: { strategy: 'native', confirm } } } });
      expect(loaded.ok).toBe(false);
    }
    expect(confirmationRule((loadConfig({}) as { ok: true; value: never }).value)).toBeUndefined();
  });
});
