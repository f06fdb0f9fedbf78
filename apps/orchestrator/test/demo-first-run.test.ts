/**
 * Acceptance of the first run (issue 21): `npm start -- --demo` runs tools/demo.mjs, which starts the scripted model
 * server, the built orchestrator and a simulated CC computer (the real CraftOS-PC when ../shared/craftos or
 * CRAFTOS_PC_DIR has one, else the Lua client's commands under Lua 5.2), creates the broken-TODO.lua task and says
 * where to watch it. A newcomer with no GPU must see that task complete, with the file on the computer fixed and the
 * dashboard answering at the printed address. The test runs the demo module itself (the build has run before the
 * tests), on ephemeral ports, and stops it like Ctrl-C does.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
let demo: ChildProcess | undefined;

afterAll(async () => {
  if (demo && demo.exitCode === null) {
    const exited = new Promise((r) => demo?.once('exit', r));
    demo.kill('SIGINT');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
    if (demo.exitCode === null) demo.kill('SIGKILL');
  }
});

describe('npm start -- --demo', () => {
  it('runs the broken-TODO.lua task to completion on a simulated computer and serves it in the dashboard (guards against a first run that shows nothing)', async () => {
    const script = `import(${JSON.stringify(pathToFileURL(path.join(root, 'tools', 'demo.mjs')).href)}).then((m) => m.runDemo(['--port', '0', '--mc-port', 'off']))`;
    demo = spawn(process.execPath, ['--input-type=module', '-e', script], {
      cwd: root,
      env: { ...process.env, FORCE_COLOR: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    demo.stdout?.on('data', (b: Buffer) => (out += b.toString('utf8')));
    demo.stderr?.on('data', (b: Buffer) => (out += b.toString('utf8')));
    const end = Date.now() + 100_000;
    while (!/\[demo\] the dashboard stays up/.test(out)) {
      if (demo.exitCode !== null || Date.now() > end) {
        throw new Error(`the demo did not finish its task (exit ${demo.exitCode}):\n${out}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(out).toMatch(/\[demo\] task is completed/);
    expect(out).toMatch(/\[demo\] TODO\.lua on the computer is the fixed version/);

    // The address it prints is the dashboard's, and the task is there as it says.
    const link = /Watch it in the dashboard: (http:\/\/127\.0\.0\.1:\d+)\/#\/tasks\/(\S+)/.exec(out);
    expect(link, out).not.toBeNull();
    const [, url, id] = link as RegExpExecArray;
    const page = await fetch(`${url}/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toMatch(/<!doctype html>/i);
    const task = (await (await fetch(`${url}/api/tasks/${id}?steps=0`)).json()) as {
      task: { status: string; kind: string };
    };
    expect(task.task).toMatchObject({ status: 'completed', kind: 'code_job' });

    // The fixed file is really on the computer's disk (not only reported so).
    const fixedAt = /The fixed file is (\S+TODO\.lua)/.exec(out)?.[1];
    expect(fixedAt && existsSync(fixedAt)).toBe(true);
    const { todo } = (await import('@ccagent/agent/testing')) as { todo: { FIXED: string } };
    expect(readFileSync(fixedAt as string, 'utf8')).toBe(todo.FIXED);
  }, 120_000);
});
