// The built `ccagent` binary against the SQLite file of a real run (planner/executor agent, real Engine and store,
// real ollama client talking to the fake Ollama server): the human output is snapshotted, the JSON is checked
// against what the store holds, and every failure is one line with the documented exit code.
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { StoredStep } from '@ccagent/engine';
import { openSqliteStore } from '@ccagent/store';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { CLIENT_ID, EXECUTOR_MODEL, FIXTURE_IDS, PLANNER_MODEL } from './support/fixture-db.js';
import { normalize, runCli } from './support/run-cli.js';

const db = inject('fixtureDb');
const ID = FIXTURE_IDS.countdown;
const cli = (...args: string[]) => runCli(['--db', db, ...args]);

let stored: StoredStep[];
beforeAll(async () => {
  const store = openSqliteStore({ path: db, readonly: true });
  stored = await store.getSteps(ID);
  await store.close();
});

describe('human output (snapshots)', () => {
  it('tasks list: aligned table, newest first, one row per task', async () => {
    const r = await cli('tasks', 'list');
    expect(r).toMatchObject({ code: 0, stderr: '' });
    expect(r.stdout).toMatchSnapshot();
    const ids = r.stdout
      .trim()
      .split('\n')
      .slice(1)
      .map((l) => l.split(/\s+/)[0]);
    expect(ids).toEqual([
      FIXTURE_IDS.cancelled,
      FIXTURE_IDS.unknownKind,
      FIXTURE_IDS.ask,
      FIXTURE_IDS.countdown,
    ]);
  });

  it('tasks show: header, then every step with model input/output, validation errors, tool calls and results', async () => {
    const r = await cli('tasks', 'show', ID);
    expect(r).toMatchObject({ code: 0, stderr: '' });
    expect(normalize(r.stdout)).toMatchSnapshot();
    // What a person debugging needs is all there (guards against a renderer that silently drops a field).
    expect(r.stdout).toContain(`${PLANNER_MODEL}  08:00:`);
    expect(r.stdout).toMatch(
      /executor {2}qwen2\.5:3b {2}\d\d:\d\d:\d\d {2}took \S+ {2}tokens \d+ in \/ \d+ out/,
    );
    expect(r.stdout).toContain(
      'validation errors\n      - parameters: parameters of cc_write_and_run: content:',
    );
    expect(r.stdout).toContain(
      'tool result: ok, but the program failed\n      ok: false\n      output: ""\n      error:\n        countdown.lua:1: attempt to index global \'arg\' (a nil value)',
    );
    expect(r.stdout).toContain('tool result: failed\n      not_found: countdown.lua: no such file');
    // Decision records fingerprint the memory instead of copying it: the last one matches the task row's memory.
    const decisions = stored.filter((s) => s.kind === 'decision');
    for (const s of decisions) expect(s.directive).not.toHaveProperty('memory');
    const last = decisions.filter((s) => (s.directive as { memorySha256?: string }).memorySha256).at(-1);
    const store = openSqliteStore({ path: db, readonly: true });
    const memoryText = JSON.stringify((await store.getTask(ID))?.memory);
    await store.close();
    expect(last?.directive).toMatchObject({
      memoryBytes: Buffer.byteLength(memoryText, 'utf8'),
      memorySha256: createHash('sha256').update(memoryText).digest('hex'),
    });
    expect(r.stdout).toMatch(/^ {6}memory changed: [\d,]+ bytes · sha256 [0-9a-f]{12}$/m);
  });

  it('tasks show of a task waiting for a person shows the open question and how to answer it', async () => {
    const r = await cli('tasks', 'show', FIXTURE_IDS.ask);
    expect(r.code).toBe(0);
    expect(normalize(r.stdout)).toMatchSnapshot();
    expect(r.stdout).toContain(`answer with: ccagent tasks answer ${FIXTURE_IDS.ask} "<text>"`);
  });

  it('tasks show of a failed task shows its error; a task without steps says so', async () => {
    const r = await cli('tasks', 'show', FIXTURE_IDS.unknownKind);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatchSnapshot();
    expect(r.stdout).toContain('error     no_strategy: no strategy for task kind "tree_farm"');
    expect(r.stdout).toContain('(no steps logged)');
  });

  it('--step N prints only the records of engine step N', async () => {
    const r = await cli('tasks', 'show', ID, '--step', '3');
    expect(r.code).toBe(0);
    expect(normalize(r.stdout)).toMatchSnapshot();
    const seqs = [...r.stdout.matchAll(/^ {2}#(\d+) /gm)].map((m) => Number(m[1]));
    expect(seqs).toEqual(stored.filter((s) => s.step === 3).map((s) => s.seq));
  });

  it('truncates long model texts by default and prints them whole with --full', async () => {
    const short = await cli('tasks', 'show', ID);
    const full = await cli('tasks', 'show', ID, '--full');
    const planner = stored.find((s) => s.kind === 'planner');
    const system = (planner?.input as { messages: Array<{ content: string }> }).messages[0]?.content ?? '';
    expect(system.split('\n').length).toBeGreaterThan(20);
    const lastLine = system.trimEnd().split('\n').at(-1) ?? '';
    expect(short.stdout).toMatch(/… \d+ more lines \(--full shows all\)/);
    expect(short.stdout).not.toContain(lastLine);
    expect(full.stdout).not.toContain('--full shows all');
    // Every line of the exact system prompt is printed with --full.
    for (const line of system.split('\n').filter((l) => l.trim() !== '')) expect(full.stdout).toContain(line);
    // Each planner call's system prompt is cut in the short form: --full adds at least one whole prompt's worth. (A
    // ratio of the two lengths no longer says that: planner calls send a conversation, shown message by message.)
    expect(full.stdout.length - short.stdout.length).toBeGreaterThan(system.length);
  });

  it('clients list and tools list: the client and its model-written tools with their lifecycle states', async () => {
    const clients = await cli('clients', 'list');
    expect(clients.code).toBe(0);
    expect(clients.stdout).toMatchSnapshot();
    const tools = await cli('tools', 'list');
    expect(tools.code).toBe(0);
    expect(tools.stdout).toMatchSnapshot();
    expect((await cli('tools', 'list', '--status', 'active')).stdout).toMatch(
      /^turtle-7 {2}dig_tunnel {2}3 +active/m,
    );
  });

  it('colour only when asked or on a terminal: FORCE_COLOR paints, NO_COLOR and pipes do not', async () => {
    const piped = await cli('tasks', 'list');
    expect(piped.stdout).not.toContain('\u001b[');
    const forced = await runCli(['--db', db, 'tasks', 'list'], { FORCE_COLOR: '1' });
    expect(forced.stdout).toContain('\u001b[32mcompleted\u001b[39m');
    expect(forced.stdout).toContain('\u001b[33mwaiting_for_user\u001b[39m');
    const flag = await runCli(['--db', db, '--color', 'tasks', 'list'], { NO_COLOR: '1' });
    expect(flag.stdout).toContain('\u001b[');
    const noColor = await runCli(['--db', db, '--no-color', 'tasks', 'list'], { FORCE_COLOR: '1' });
    expect(noColor.stdout).not.toContain('\u001b[');
  });
});

describe('--json', () => {
  it('tasks show --json carries every step exactly as stored: model input, raw output, usage, tool call/result', async () => {
    const r = await cli('--json', 'tasks', 'show', ID);
    expect(r.code).toBe(0);
    const d = JSON.parse(r.stdout) as {
      task: Record<string, unknown>;
      steps: Array<Record<string, unknown>>;
      questions: unknown[];
    };
    expect(d.task).toMatchObject({
      id: ID,
      kind: 'code_job',
      status: 'completed',
      clientId: CLIENT_ID,
      allowedCommands: ['fs_read', 'fs_write', 'fs_list', 'run_program'],
      counters: { steps: 6, toolCalls: 5, questions: 0 },
      budgets: { maxSteps: 30, maxToolCalls: 20 },
      result: {
        success: true,
        evidence: [{ call: 'run_program countdown.lua 3', output: '3\n2\n1\nLiftoff!' }],
      },
    });
    expect(d.questions).toEqual([]);
    expect(d.steps.map((s) => s.seq)).toEqual(stored.map((s) => s.seq));
    expect(d.steps.map((s) => s.kind)).toEqual(stored.map((s) => s.kind));
    for (const [i, s] of stored.entries()) {
      const j = d.steps[i] as Record<string, unknown>;
      // Exactly what the model saw and said, byte for byte.
      expect(j.input).toEqual(s.input);
      expect(j.output).toEqual(s.output);
      expect(j.toolCall).toEqual(s.toolCall);
      expect(j.toolResult).toEqual(s.toolResult);
      expect(j.validationErrors).toEqual(s.validationErrors);
      expect(j.usage).toEqual(s.usage);
      expect(j.durationMs).toEqual(s.durationMs);
      expect(j.startedAt).toEqual(s.startedAt);
      expect(j.model).toEqual(s.model);
    }
    expect(d.steps.filter((s) => s.model === EXECUTOR_MODEL).length).toBeGreaterThanOrEqual(4);
    const planner = d.steps.find((s) => s.kind === 'planner') as { usage: { promptTokens: number } };
    expect(planner.usage.promptTokens).toBeGreaterThan(0);
  });

  it('tasks list --json is a page of tasks with the total; filters by status, kind and client', async () => {
    const all = JSON.parse((await cli('--json', 'tasks', 'list')).stdout) as {
      tasks: Array<{ id: string }>;
      total: number;
    };
    expect(all.total).toBe(4);
    expect(all.tasks.map((t) => t.id)).toEqual([
      FIXTURE_IDS.cancelled,
      FIXTURE_IDS.unknownKind,
      FIXTURE_IDS.ask,
      FIXTURE_IDS.countdown,
    ]);
    const page = async (...args: string[]) =>
      JSON.parse((await cli('--json', 'tasks', 'list', ...args)).stdout) as {
        tasks: Array<{ id: string }>;
        total: number;
      };
    expect((await page('--status', 'completed,failed')).tasks.map((t) => t.id)).toEqual([
      FIXTURE_IDS.unknownKind,
      FIXTURE_IDS.countdown,
    ]);
    expect((await page('--kind', 'tree_farm')).tasks.map((t) => t.id)).toEqual([FIXTURE_IDS.unknownKind]);
    expect((await page('--client', CLIENT_ID)).tasks.map((t) => t.id)).toEqual([
      FIXTURE_IDS.ask,
      FIXTURE_IDS.countdown,
    ]);
    const second = await page('--limit', '1', '--offset', '1');
    expect(second).toEqual({ tasks: [expect.objectContaining({ id: FIXTURE_IDS.unknownKind })], total: 4 });
  });

  it('clients list --json and tools list --json', async () => {
    const c = JSON.parse((await cli('--json', 'clients', 'list')).stdout) as { clients: unknown[] };
    expect(c.clients).toEqual([
      expect.objectContaining({
        clientId: CLIENT_ID,
        connected: false,
        clientVersion: '0.1.0',
        commands: ['fs_read', 'fs_write', 'fs_list', 'run_program', 'shell_exec'],
      }),
    ]);
    const t = JSON.parse((await cli('--json', 'tools', 'list')).stdout) as {
      tools: Array<{ name: string; status: string }>;
    };
    expect(t.tools.map((x) => [x.name, x.status])).toEqual([
      ['dig_tunnel', 'active'],
      ['refuel', 'draft'],
      ['sort_ores', 'test'],
      ['strip_mine', 'retired'],
    ]);
  });

  it('the open question of a waiting task is in the JSON', async () => {
    const d = JSON.parse((await cli('--json', 'tasks', 'show', FIXTURE_IDS.ask)).stdout) as {
      task: { status: string };
      questions: Array<{ questionId: string; question: string; answer?: string }>;
    };
    expect(d.task.status).toBe('waiting_for_user');
    expect(d.questions).toEqual([
      expect.objectContaining({
        questionId: `${FIXTURE_IDS.ask}:q:1`,
        question: expect.stringContaining('Which chest'),
      }),
    ]);
    expect(d.questions[0]?.answer).toBeUndefined();
  });
});

describe('errors: one line, documented exit code, no stack trace', () => {
  const oneLine = (text: string) => {
    expect(text.trimEnd().split('\n')).toHaveLength(1);
    expect(text).not.toMatch(/^\s+at /m);
  };

  it('an unknown task id exits 3 with "no task <id>"', async () => {
    for (const args of [
      ['tasks', 'show', 'no-such-task'],
      ['tasks', 'follow', 'no-such-task'],
    ]) {
      const r = await cli(...args);
      expect(r).toEqual({ code: 3, stdout: '', stderr: 'ccagent: no task no-such-task\n' });
    }
    const step = await cli('tasks', 'show', ID, '--step', '99');
    expect(step).toEqual({
      code: 3,
      stdout: '',
      stderr: `ccagent: task ${ID} has no step 99 (steps 1..6)\n`,
    });
  });

  it('a missing database exits 1 naming the path and what to do', async () => {
    const missing = path.join(mkdtempSync(path.join(tmpdir(), 'ccagent-cli-')), 'nope.db');
    const r = await runCli(['--db', missing, 'tasks', 'list']);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    oneLine(r.stderr);
    expect(r.stderr).toBe(
      `ccagent: no ccagent database at ${missing} (start the orchestrator once, or pass --db PATH or --url URL)\n`,
    );
  });

  it('without --db the server default path is used ($CCAGENT_DB, else $CCAGENT_DATA_DIR/ccagent.db)', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'ccagent-cli-'));
    const viaDataDir = await runCli(['tasks', 'list'], { CCAGENT_DATA_DIR: dir });
    expect(viaDataDir.code).toBe(1);
    expect(viaDataDir.stderr).toContain(`no ccagent database at ${path.join(dir, 'ccagent.db')}`);
    const viaDb = await runCli(['--json', 'tasks', 'list'], { CCAGENT_DB: db });
    expect(viaDb.code).toBe(0);
    expect((JSON.parse(viaDb.stdout) as { total: number }).total).toBe(4);
  });

  it('a file that is not a ccagent database exits 1 with one line', async () => {
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'ccagent-cli-')), 'notes.db');
    writeFileSync(file, 'these are my notes, not a database\n'.repeat(200));
    const r = await runCli(['--db', file, 'tasks', 'list']);
    expect(r.code).toBe(1);
    oneLine(r.stderr);
    expect(r.stderr).toMatch(/^ccagent: .*notes\.db/);
  });

  it('usage errors exit 2', async () => {
    for (const args of [
      ['tasks', 'list', '--limit', '0'],
      ['tasks', 'list', '--status', 'done'],
      ['tasks', 'show'],
      ['tasks', 'show', ID, '--step', 'two'],
      ['tasks', 'answer', ID],
      ['bogus'],
    ]) {
      const r = await cli(...args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(/^error: /);
      expect(r.stderr).not.toMatch(/^\s+at /m);
    }
  });

  it('reading never changes the database file (guards against a reader that migrates or writes)', async () => {
    const before = createHash('sha256').update(readFileSync(db)).digest('hex');
    await cli('tasks', 'list');
    await cli('tasks', 'show', ID, '--full');
    await cli('clients', 'list');
    expect(createHash('sha256').update(readFileSync(db)).digest('hex')).toBe(before);
  });

  it('--version and --help exit 0', async () => {
    expect(await runCli(['--version'])).toEqual({ code: 0, stdout: '0.1.0\n', stderr: '' });
    const help = await runCli(['tasks', 'show', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--full');
    expect(help.stdout).toContain('--step <n>');
  });
});
