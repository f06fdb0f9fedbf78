// `ccagent tasks export <id> [--format md|json]` with the built binary: the Markdown conversation of a real run
// (planner/executor, a program that failed, then the fix), the JSON of everything the store holds, and hostile text
// that stays inert in the Markdown.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { StoredStep } from '@ccagent/engine';
import { openSqliteStore } from '@ccagent/store';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { FIXTURE_IDS } from './support/fixture-db.js';
import { HOSTILE_TASKS, writeHostileDb } from './support/hostile-db.js';
import { runCli } from './support/run-cli.js';

const db = inject('fixtureDb');
const ID = FIXTURE_IDS.countdown;
const RAW = /(?!\n)[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;

let stored: StoredStep[];
let dir: string;
let hostileDb: string;
beforeAll(async () => {
  const store = openSqliteStore({ path: db, readonly: true });
  stored = await store.getSteps(ID);
  await store.close();
  dir = mkdtempSync(path.join(tmpdir(), 'ccagent-export-'));
  hostileDb = path.join(dir, 'hostile.db');
  await writeHostileDb(hostileDb);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('tasks export', () => {
  it('writes the conversation as Markdown: prompt, each reply, the file and its rewrite as a diff, the failed run, the result', async () => {
    const r = await runCli(['--db', db, 'tasks', 'export', ID]);
    expect(r).toMatchObject({ code: 0, stderr: '' });
    const md = r.stdout;
    expect(md).toMatch(new RegExp(`^# Task \`${ID}\`\n`));
    expect(md).toContain('## Prompt');
    expect(md).toContain('Write countdown.lua that counts down');
    // One heading per model reply in the log, in order.
    const replies = stored.filter((s) => s.output !== undefined && s.kind !== 'model_request');
    expect(replies.length).toBeGreaterThanOrEqual(5);
    expect(md.match(/^### Step \d+ · (planner|executor\w*) /gm)?.length).toBe(replies.length);
    // The rewrite of countdown.lua as a diff against the first version.
    expect(md).toContain('Writes `countdown.lua`');
    expect(md).toContain('Changes `countdown.lua`');
    expect(md).toContain('-local n = tonumber(arg[1])\n');
    expect(md).toContain('+local args = { ... }\n');
    // The failed run and its error, then the fix.
    expect(md).toContain("countdown.lua:1: attempt to index global 'arg' (a nil value)");
    expect(md).toMatch(/\*\*Ran\*\* `[\w]+` → \*\*failed\*\*/);
    expect(md).toContain('## Result (completed)');
    // Same as the default: --format md.
    const again = await runCli(['--db', db, 'tasks', 'export', ID, '--format', 'md']);
    expect(again.stdout).toBe(md);
  });

  it('writes everything as JSON: the task and every record whole, as stored', async () => {
    const r = await runCli(['--db', db, 'tasks', 'export', ID, '--format', 'json']);
    expect(r).toMatchObject({ code: 0, stderr: '' });
    const d = JSON.parse(r.stdout) as { task: { id: string }; steps: { seq: number; input?: unknown }[] };
    expect(d.task.id).toBe(ID);
    expect(d.steps.map((s) => s.seq)).toEqual(stored.map((s) => s.seq));
    expect(d.steps.filter((s) => s.input !== undefined).length).toBe(
      stored.filter((s) => s.input !== undefined).length,
    );
  });

  it('refuses an unknown format and an unknown task with a clear error', async () => {
    const bad = await runCli(['--db', db, 'tasks', 'export', ID, '--format', 'html']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/html/);
    const missing = await runCli(['--db', db, 'tasks', 'export', 'no-such-task']);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toMatch(/no-such-task/);
  });

  it('keeps hostile text inert: control characters shown as symbols, never written raw', async () => {
    for (const id of Object.values(HOSTILE_TASKS)) {
      const r = await runCli(['--db', hostileDb, 'tasks', 'export', id]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).not.toMatch(RAW);
      expect(r.stdout).toContain('␛[31mRED');
    }
  });

  it('keeps the follow-up messages in the conversation, in order with the replies, inert (guards against an export that drops what the player said)', async () => {
    const r = await runCli(['--db', hostileDb, 'tasks', 'export', HOSTILE_TASKS.failed]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).not.toMatch(RAW);
    const at = r.stdout.indexOf('follow-up x␛[31mRED');
    expect(at).toBeGreaterThan(r.stdout.indexOf('## Prompt'));
    expect(at).toBeLessThan(r.stdout.indexOf('## Result'));
    const json = await runCli([
      '--db',
      hostileDb,
      'tasks',
      'export',
      HOSTILE_TASKS.failed,
      '--format',
      'json',
    ]);
    const d = JSON.parse(json.stdout) as { messages: Array<{ text: string; from?: string }> };
    expect(d.messages).toHaveLength(1);
    expect(d.messages[0]?.text).toMatch(/^follow-up x/);
  });
});
