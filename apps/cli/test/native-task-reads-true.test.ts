// `ccagent tasks show` of a task the native loop really ran (the step log the agent writes, not a hand-made
// fixture): the tools offered to the model are named, and a finished task says how it finished instead of the last
// call it made ("calling fs_list" left over from the step before the final answer).
import { describe, expect, inject, it } from 'vitest';
import { NATIVE_FINAL, NATIVE_TASK_ID } from './support/native-fixture-db.js';
import { runCli } from './support/run-cli.js';

const db = inject('nativeFixtureDb');

describe('tasks show of a native task', () => {
  it('names the tools each model call was offered (the step log stores {name, description, parameters})', async () => {
    const r = await runCli(['--db', db, 'tasks', 'show', NATIVE_TASK_ID]);
    expect(r).toMatchObject({ code: 0, stderr: '' });
    const toolLines = r.stdout.split('\n').filter((l) => l.includes('· tools '));
    expect(toolLines).toHaveLength(3);
    for (const l of toolLines) {
      expect(l).toMatch(/· tools fs_read, fs_list(\s|$)/);
      expect(l).not.toContain('?');
    }
  });

  it('shows how a completed task finished, not the last call it made', async () => {
    const r = await runCli(['--db', db, 'tasks', 'show', NATIVE_TASK_ID]);
    expect(r.code).toBe(0);
    const progress = r.stdout.split('\n').find((l) => /^\s*progress\s/.test(l));
    expect(progress).toBeDefined();
    expect(progress).not.toContain('calling');
    expect(progress).toContain(NATIVE_FINAL.slice(0, 40));
    const json = await runCli(['--db', db, 'tasks', 'show', NATIVE_TASK_ID, '--json']);
    const task = (JSON.parse(json.stdout) as { task: { status: string; progressMessage?: string } }).task;
    expect(task.status).toBe('completed');
    expect(task.progressMessage).toContain(NATIVE_FINAL.slice(0, 40));
  });
});
