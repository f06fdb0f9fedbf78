import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadJob, loadSuite, selectJobs, SUITE_DIR } from './job.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A copy of a shipped job in a temporary suite, to break on purpose. */
function copyOf(id: string): string {
  const root = mkdtempSync(path.join(tmpdir(), 'eval-job-'));
  dirs.push(root);
  cpSync(SUITE_DIR, root, { recursive: true });
  return path.join(root, 'jobs', id);
}

describe('loadJob', () => {
  it('reads the job, its disk, checker, reference run and wrong runs', async () => {
    const job = await loadJob(path.join(SUITE_DIR, 'jobs', 't4-refuse-wipe'));
    expect(job).toMatchObject({ id: 't4-refuse-wipe', tier: 4, loops: ['planner-executor', 'native'] });
    expect(Object.keys(job.disk).sort()).toEqual([
      '/farm.lua',
      '/notes/todo.txt',
      '/startup.lua',
      '/work/scratch.txt',
    ]);
    expect(job.user).toEqual({ answers: [], confirm: 'no' });
    expect(typeof job.check).toBe('function');
    expect(job.reference.loop).toBe('planner-executor');
    expect(Object.keys(job.wrong)).toEqual(['native-works-around', 'works-around']);
    expect(job.wrong['works-around']?.why).toMatch(/works around/);
    expect(job.wrong['native-works-around']?.loop).toBe('native');
    expect(Object.keys(job.references)).toEqual(['native']);
    expect(job.references.native?.loop).toBe('native');
  });

  it('refuses a bad job.json naming the file and the field', async () => {
    const dir = copyOf('t1-read-code');
    writeFileSync(
      path.join(dir, 'job.json'),
      JSON.stringify({ id: 't1-read-code', version: 1, tier: 1, title: 'x', tasks: [], budgets: {} }),
    );
    await expect(loadJob(dir)).rejects.toMatchObject({
      code: 'invalid_job',
      message: expect.stringMatching(/t1-read-code\/job\.json: tasks: Too small/) as string,
    });
  });

  it('refuses an id that is not the folder name or not its tier, and a reference of a loop the job does not allow', async () => {
    const dir = copyOf('t1-read-code');
    const spec = { id: 't1-other', version: 1, tier: 1, title: 'x', tasks: [{ prompt: 'p' }] };
    const budgets = { maxSteps: 1, maxToolCalls: 1, deadlineMs: 1000 };
    writeFileSync(path.join(dir, 'job.json'), JSON.stringify({ ...spec, budgets }));
    await expect(loadJob(dir)).rejects.toThrow(/id "t1-other" is not the folder name "t1-read-code"/);
    writeFileSync(
      path.join(dir, 'job.json'),
      JSON.stringify({ ...spec, id: 't1-read-code', tier: 2, budgets }),
    );
    await expect(loadJob(dir)).rejects.toThrow(/does not start with t2-/);
    writeFileSync(
      path.join(dir, 'job.json'),
      JSON.stringify({ ...spec, id: 't1-read-code', budgets, loops: ['native'] }),
    );
    await expect(loadJob(dir)).rejects.toThrow(/loop planner-executor is not one of the job's loops/);
  });

  it('refuses a scripted run without replies for its loop', async () => {
    const dir = copyOf('t1-read-code');
    writeFileSync(
      path.join(dir, 'wrong-empty.mjs'),
      "export default { loop: 'native', replies: { planner: [] } };\n",
    );
    await expect(loadJob(dir)).rejects.toThrow(/wrong-empty\.mjs: replies\.native must be a list of replies/);
  });
});

describe('selectJobs', () => {
  it('selects tiers, ids and prefixes in suite order, and names the ids when nothing matches', async () => {
    const suite = await loadSuite();
    expect(selectJobs(suite, undefined)).toHaveLength(suite.jobs.length);
    expect(selectJobs(suite, ['tier5']).map((j) => j.id)).toEqual(['t5-todo-acceptance']);
    expect(selectJobs(suite, ['t5-todo-acceptance', '1']).map((j) => j.tier)).toEqual([1, 1, 1, 1, 5]);
    expect(selectJobs(suite, ['t4-refuse*']).map((j) => j.id)).toEqual([
      't4-refuse-startup',
      't4-refuse-wipe',
    ]);
    expect(() => selectJobs(suite, ['t9-nothing'])).toThrow(
      /no job matches "t9-nothing" \(give tiers like tier2, or ids: t1-/,
    );
  });
});
