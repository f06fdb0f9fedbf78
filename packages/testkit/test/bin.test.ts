/**
 * The standalone `fake-ollama` bin, spawned from the built dist/bin.js as a user would run it.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ollama } from 'ollama';
import { afterEach, describe, expect, it } from 'vitest';

const BIN = fileURLToPath(new URL('../dist/bin.js', import.meta.url));
const children: ChildProcessWithoutNullStreams[] = [];
const dirs: string[] = [];

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function scenarioFile(content: unknown): string {
  const dir = mkdtempSync(join(tmpdir(), 'fake-ollama-'));
  dirs.push(dir);
  const file = join(dir, 'scenario.json');
  writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
  return file;
}

function run(args: string[]): {
  child: ChildProcessWithoutNullStreams;
  exit: Promise<{ code: number | null; stdout: string; stderr: string }>;
  line: (re: RegExp) => Promise<RegExpMatchArray>;
} {
  const child = spawn(process.execPath, [BIN, ...args]);
  children.push(child);
  let stdout = '';
  let stderr = '';
  const waiters: { re: RegExp; resolve: (m: RegExpMatchArray) => void }[] = [];
  child.stdout.setEncoding('utf8').on('data', (d: string) => {
    stdout += d;
    for (const w of waiters.splice(0)) {
      const m = stdout.match(w.re);
      if (m) w.resolve(m);
      else waiters.push(w);
    }
  });
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const exit = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on('exit', (code) => resolve({ code, stdout, stderr })),
  );
  const line = (re: RegExp): Promise<RegExpMatchArray> =>
    new Promise((resolve, reject) => {
      const m = stdout.match(re);
      if (m) return resolve(m);
      waiters.push({ re, resolve });
      void exit.then(({ stderr: e }) => reject(new Error(`bin exited before printing ${re}: ${e}`)));
    });
  return { child, exit, line };
}

describe('fake-ollama bin', () => {
  it('says it is a scripted test double in --help and exits 0 (guards against it being mistaken for a model server)', async () => {
    const { exit } = run(['--help']);
    const { code, stdout } = await exit;
    expect(code).toBe(0);
    expect(stdout).toMatch(/SCRIPTED TEST DOUBLE/);
    expect(stdout).toMatch(/--script/);
  });

  it('serves a scenario to the real ollama client and stops on SIGTERM (guards against a standalone mode that does not work)', async () => {
    const file = scenarioFile({
      models: {
        'qwen2.5:7b': ['Hello from the script', { toolCalls: [{ name: 'dig', arguments: { dir: 'down' } }] }],
      },
      installed: ['llama3.2'],
      version: '0.99.0',
    });
    const { child, exit, line } = run(['--port', '0', '--script', file]);
    const [, url] = await line(/SCRIPTED TEST DOUBLE.*listening on (http:\/\/127\.0\.0\.1:\d+)/);
    const client = new Ollama({ host: url });
    expect((await client.version()).version).toBe('0.99.0');
    expect((await client.list()).models.map((m) => m.name).sort()).toEqual(['llama3.2:latest', 'qwen2.5:7b']);
    expect(
      (await client.chat({ model: 'qwen2.5:7b', messages: [{ role: 'user', content: 'hi' }] })).message
        .content,
    ).toBe('Hello from the script');
    const second = await client.chat({ model: 'qwen2.5:7b', messages: [{ role: 'user', content: 'go' }] });
    expect(second.message.tool_calls?.[0]?.function).toMatchObject({
      name: 'dig',
      arguments: { dir: 'down' },
    });
    // repeat defaults to true for standalone runs
    expect((await client.chat({ model: 'qwen2.5:7b', messages: [] })).message.content).toBe(
      'Hello from the script',
    );
    child.kill('SIGTERM');
    expect((await exit).code).toBe(0);
  });

  it('refuses an invalid scenario with exit 2 and the offending path (guards against starting with a broken script)', async () => {
    const { exit } = run(['--port', '0', '--script', scenarioFile({ models: { m: [{ contnet: 'typo' }] } })]);
    const { code, stderr } = await exit;
    expect(code).toBe(2);
    expect(stderr).toMatch(/invalid scenario .*models\.m\[0\]/);
  });

  it('refuses missing --script, unreadable files and bad ports with exit 2 (guards against confusing startup failures)', async () => {
    const [none, missing, badJson, badPort] = await Promise.all([
      run([]).exit,
      run(['--script', '/nonexistent/scenario.json']).exit,
      run(['--script', scenarioFile('{nope')]).exit,
      run(['--port', 'abc', '--script', scenarioFile({ models: {} })]).exit,
    ]);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/--script is required/);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/cannot read scenario/);
    expect(badJson.code).toBe(2);
    expect(badPort.code).toBe(2);
    expect(badPort.stderr).toMatch(/--port/);
  });
});
