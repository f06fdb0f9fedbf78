import { describe, expect, it } from 'vitest';
import { CliError } from './errors.js';
import { wantsColor, type Output } from './output.js';
import { FOLLOW_PAGE, runCli } from './program.js';
import type { StepView, TaskDetail, TaskSource, TaskView } from './source.js';

// Fast checks of the program's own rules against a scripted source (a fake of the CLI's own TaskSource port).
// The process-level tests under test/ run the built binary against real SQLite files and a real orchestrator.

const task: TaskView = {
  id: 't-1',
  kind: 'code_job',
  status: 'completed',
  clientId: 'turtle-7',
  prompt: 'Fix TODO.lua so add/list/done work',
  allowedCommands: [],
  counters: { steps: 2, toolCalls: 1, questions: 0 },
  budgets: {},
  result: { success: true, message: 'fixed' },
  createdAt: Date.UTC(2026, 10, 23, 8, 0, 0),
  updatedAt: Date.UTC(2026, 10, 23, 8, 5, 0),
};
const steps: StepView[] = [
  {
    seq: 1,
    step: 1,
    kind: 'planner',
    model: 'qwen2.5-coder:7b',
    at: Date.UTC(2026, 10, 23, 8, 0, 2),
    startedAt: Date.UTC(2026, 10, 23, 8, 0, 1),
    durationMs: 1500,
    input: {
      messages: [
        { role: 'system', content: 'You plan.' },
        { role: 'user', content: Array.from({ length: 30 }, (_, i) => `line ${i + 1}`).join('\n') },
      ],
      options: { temperature: 0.2 },
    },
    output: { content: 'RUN\nPATH: TODO.lua\nARGS: add milk', doneReason: 'stop' },
    usage: { promptTokens: 812, completionTokens: 40 },
  },
  {
    seq: 2,
    step: 2,
    kind: 'executor',
    at: Date.UTC(2026, 10, 23, 8, 0, 3),
    output: { content: 'x'.repeat(1000) },
    validationErrors: ['$.tool: expected one of cc_run_program, cc_shell'],
  },
];
const detail: TaskDetail = { task, steps, questions: [] };

function fakeSource(): TaskSource {
  return {
    label: 'fake',
    listTasks: async () => ({ tasks: [task], total: 1 }),
    getTask: async (id) => {
      if (id !== task.id) throw new CliError('not_found', `no task ${id}`);
      return structuredClone(detail);
    },
    getTaskUpdates: async (id, afterSeq, limit) => {
      if (id !== task.id) throw new CliError('not_found', `no task ${id}`);
      const after = detail.steps.filter((r) => r.seq > afterSeq);
      return { ...structuredClone(detail), steps: after.slice(0, limit), hasMore: after.length > limit };
    },
    listClients: async () => [],
    listTools: async () => [],
    close: async () => {},
  };
}

async function run(args: string[], color = false): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const output: Output = { color, width: 100, wrap: false, write: (t) => (out += t) };
  const code = await runCli(args, {
    out: output,
    err: (l) => (err += `${l}\n`),
    openDb: async () => fakeSource(),
    env: {},
  });
  return { code, out, err };
}

describe('ccagent program rules', () => {
  it('truncates long model texts unless --full (guards against flooding the terminal)', async () => {
    const short = await run(['--db', 'x.db', 'tasks', 'show', 't-1']);
    expect(short.out).toContain('… 18 more lines (--full shows all)');
    expect(short.out).not.toContain('line 13');
    expect(short.out).toContain(`${'x'.repeat(400)}… (+600 chars)`);
    const full = await run(['--db', 'x.db', 'tasks', 'show', 't-1', '--full']);
    expect(full.out).toContain('line 30');
    expect(full.out).toContain('x'.repeat(1000));
    expect(full.out).not.toContain('--full shows all');
  });

  it('--step N shows only that engine step; an absent step is not found (exit 3) and says which exist', async () => {
    const one = await run(['--db', 'x.db', 'tasks', 'show', 't-1', '--step', '2']);
    expect(one.code).toBe(0);
    expect(one.out).toContain('#2');
    expect(one.out).not.toContain('#1 ');
    const none = await run(['--db', 'x.db', 'tasks', 'show', 't-1', '--step', '9']);
    expect(none).toEqual({ code: 3, out: '', err: 'ccagent: task t-1 has no step 9 (steps 1..2)\n' });
  });

  it('tasks follow reads only the records after the last one it printed, pages through a backlog before the status it led to, and prints each record once (guards against O(n) polls of a long task)', async () => {
    const mk = (seq: number): StepView => ({ seq, step: seq, kind: 'note', at: task.createdAt + seq });
    const running: TaskView = { ...task, status: 'running' };
    let stored = Array.from({ length: 450 }, (_, i) => mk(i + 1));
    let current = running;
    const calls: string[] = [];
    const source: TaskSource = {
      ...fakeSource(),
      getTask: async () => {
        calls.push('getTask');
        return { task: current, steps: [...stored], questions: [] };
      },
      getTaskUpdates: async (_id, afterSeq, limit) => {
        calls.push(`after ${afterSeq} limit ${limit}`);
        const after = stored.filter((r) => r.seq > afterSeq);
        const answer = {
          task: current,
          steps: after.slice(0, limit),
          questions: [],
          hasMore: after.length > limit,
        };
        // While the follower waits, the task writes a backlog of 450 more records and completes.
        if (stored.length === 450) {
          stored = [...stored, ...Array.from({ length: 450 }, (_, i) => mk(451 + i))];
          current = { ...task, status: 'completed' };
        }
        return answer;
      },
    };
    let out = '';
    const code = await runCli(['--db', 'x.db', '--json', 'tasks', 'follow', 't-1', '--interval', '1'], {
      out: { color: false, width: 100, wrap: false, write: (t) => (out += t) },
      err: () => {},
      openDb: async () => source,
      env: {},
    });
    expect(code).toBe(0);
    expect(FOLLOW_PAGE).toBe(200);
    expect(calls).toEqual([
      'getTask',
      'after 450 limit 200', // nothing new yet (the backlog is written after this answer)
      'after 450 limit 200',
      'after 650 limit 200',
      'after 850 limit 200',
    ]);
    const events = out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { event: string; step?: { seq: number }; status?: string });
    expect(events.filter((e) => e.event === 'step').map((e) => e.step?.seq)).toEqual(
      Array.from({ length: 900 }, (_, i) => i + 1),
    );
    // The status change comes after the last record it led to.
    expect(events.slice(-3).map((e) => e.event)).toEqual(['step', 'status', 'end']);
    expect(events.at(-2)).toMatchObject({ status: 'completed' });
  });

  it('usage errors exit 2 with a one-line message and no stack', async () => {
    for (const args of [
      ['tasks', 'frobnicate'],
      ['tasks'],
      ['--db', 'x.db', 'tasks', 'list', '--limit', 'many'],
      ['--db', 'x.db', 'tasks', 'list', '--status', 'runing'],
      ['--db', 'x.db', '--url', 'http://127.0.0.1:1', 'tasks', 'list'],
      ['--db', 'x.db', 'tasks', 'cancel', 't-1'],
      ['--url', 'not a url', 'tasks', 'list'],
    ]) {
      const r = await run(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.err, args.join(' ')).not.toMatch(/\n\s+at /);
      expect(r.out).toBe('');
    }
    expect((await run(['--db', 'x.db', 'tasks', 'list', '--status', 'runing'])).err).toContain(
      'unknown status runing; one or more of queued, running',
    );
  });

  it('colour codes appear only when colour is on', async () => {
    expect((await run(['--db', 'x.db', 'tasks', 'list'])).out).not.toContain('\u001b[');
    expect((await run(['--db', 'x.db', 'tasks', 'list'], true)).out).toContain(
      '\u001b[32mcompleted\u001b[39m',
    );
  });

  it('NO_COLOR and FORCE_COLOR decide colour over the TTY check', () => {
    expect(wantsColor(true, {})).toBe(true);
    expect(wantsColor(false, {})).toBe(false);
    expect(wantsColor(true, { NO_COLOR: '1' })).toBe(false);
    expect(wantsColor(true, { NO_COLOR: '' })).toBe(true);
    expect(wantsColor(false, { FORCE_COLOR: '1' })).toBe(true);
    expect(wantsColor(true, { FORCE_COLOR: '0' })).toBe(false);
    expect(wantsColor(true, { TERM: 'dumb' })).toBe(false);
  });
});
