// The built CLI against the built orchestrator (`cc-orchestrator serve --port 0`) serving a copy of the fixture
// database, with its models on the fake Ollama server: `--url` reads print exactly what `--db` prints, and the
// actions (create, answer, cancel) drive a real task while `tasks follow --url` streams it — across a restart too.
import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { FIXTURE_IDS } from './support/fixture-db.js';
import {
  orchestratorBuilt,
  ORCHESTRATOR_BIN,
  startOrchestrator,
  type RunningOrchestrator,
} from './support/orchestrator.js';
import { copyDb, runCli, startCli } from './support/run-cli.js';

const TOKEN = 's3cret-token';
/** The orchestrator's default model for every role. */
const MODEL = 'qwen3:8b';

if (!orchestratorBuilt) {
  console.warn(
    `NOTICE: ${ORCHESTRATOR_BIN} is not built; the --url tests against a running orchestrator are skipped`,
  );
}

interface Detail {
  task: { id: string; status: string };
  steps: Array<{ kind: string }>;
  questions: Array<{ questionId: string; question: string; answer?: string }>;
}

describe.skipIf(!orchestratorBuilt)('against a running orchestrator (--url)', () => {
  let fake: FakeOllama;
  let server: RunningOrchestrator;
  let db: string;
  let asked = 0;
  const url = (...args: string[]) => runCli(['--url', server.url, '--token', TOKEN, ...args]);
  const show = async (id: string): Promise<Detail> => {
    const r = await url('--json', 'tasks', 'show', id);
    expect(r.code, r.stderr).toBe(0);
    return JSON.parse(r.stdout) as Detail;
  };
  const waitFor = async (id: string, ok: (d: Detail) => boolean, timeoutMs = 15_000): Promise<Detail> => {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const d = await show(id);
      if (ok(d)) return d;
      if (Date.now() > until) throw new Error(`task ${id} did not get there: ${JSON.stringify(d.task)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };

  beforeAll(async () => {
    fake = await startFakeOllama();
    // The planner asks a new question each turn, so a task waits for a person after every step.
    fake.script(MODEL, () => {
      asked++;
      return [
        'ASK_USER',
        `QUESTION: Question ${asked}: which wall should be painted?`,
        'WHY: The task names no wall.',
        'NEXT: Paint that wall.',
      ].join('\n');
    });
    db = copyDb(inject('fixtureDb'));
    server = await startOrchestrator({ db, ollamaUrl: fake.url, token: TOKEN });
  });
  afterAll(async () => {
    await server?.stop();
    await fake?.close();
  });

  it('reads print exactly what the same file prints with --db (human and JSON)', async () => {
    for (const args of [
      ['tasks', 'list'],
      ['tasks', 'show', FIXTURE_IDS.countdown],
      ['tasks', 'show', FIXTURE_IDS.countdown, '--full', '--step', '2'],
      ['tools', 'list'],
      ['clients', 'list'],
    ]) {
      for (const json of [[], ['--json']]) {
        const viaUrl = await url(...json, ...args);
        const viaDb = await runCli(['--db', db, ...json, ...args]);
        expect(viaUrl.code, `${args.join(' ')}: ${viaUrl.stderr}`).toBe(0);
        expect(viaUrl.stdout, args.join(' ')).toBe(viaDb.stdout);
        expect(viaUrl.stdout.length).toBeGreaterThan(50);
      }
    }
  });

  it('a missing or wrong token, an unknown id and a bad request are one line with the documented exit code', async () => {
    const noToken = await runCli(['--url', server.url, 'tasks', 'list']);
    expect(noToken).toEqual({
      code: 1,
      stdout: '',
      stderr:
        'ccagent: this server requires "Authorization: Bearer <token>" (set CCAGENT_TOKEN or pass --token-file)\n',
    });
    const wrong = await runCli(['--url', server.url, '--token', 'nope', 'tasks', 'list']);
    expect(wrong).toEqual({
      code: 1,
      stdout: '',
      stderr: 'ccagent: wrong token (set CCAGENT_TOKEN or pass --token-file)\n',
    });
    const viaEnv = await runCli(['--json', 'tasks', 'list'], {
      CCAGENT_URL: server.url,
      CCAGENT_TOKEN: TOKEN,
    });
    expect(viaEnv.code).toBe(0);
    expect(await url('tasks', 'show', 'no-such-task')).toEqual({
      code: 3,
      stdout: '',
      stderr: 'ccagent: no task no-such-task\n',
    });
    const kind = await url('tasks', 'create', '--kind', 'tree_farm', '--prompt', 'Plant birches.');
    expect(kind.code).toBe(2);
    expect(kind.stderr).toMatch(/^ccagent: unknown task kind "tree_farm"; known kinds: .*\n$/);
    const notWaiting = await url('tasks', 'answer', FIXTURE_IDS.countdown, 'yes');
    expect(notWaiting).toEqual({
      code: 1,
      stdout: '',
      stderr: `ccagent: task ${FIXTURE_IDS.countdown} is completed; it is not waiting for an answer\n`,
    });
  });

  it('create, follow, answer and cancel a task: follow streams it until the cancel and exits 1', async () => {
    const created = await url(
      '--json',
      'tasks',
      'create',
      '--kind',
      'code_job',
      '--prompt',
      'Paint the wall blue.',
    );
    expect(created.code, created.stderr).toBe(0);
    const { task, created: isNew } = JSON.parse(created.stdout) as {
      task: { id: string; kind: string };
      created: boolean;
    };
    expect(isNew).toBe(true);
    expect(task.kind).toBe('code_job');

    const follow = startCli([
      '--url',
      server.url,
      '--token',
      TOKEN,
      '--json',
      'tasks',
      'follow',
      task.id,
      '--interval',
      '100',
    ]);
    let followOut = '';
    follow.stdout?.setEncoding('utf8').on('data', (d: string) => (followOut += d));
    const followCode = new Promise<number | null>((resolve) => follow.on('close', resolve));

    const first = await waitFor(task.id, (d) => d.task.status === 'waiting_for_user');
    expect(first.questions).toHaveLength(1);
    const answered = await url('tasks', 'answer', task.id, 'The wall by the door.');
    expect(answered.code, answered.stderr).toBe(0);
    expect(answered.stdout).toMatch(new RegExp(`^answered ${task.id} \\((queued|running)\\)\\n$`));
    const second = await waitFor(
      task.id,
      (d) => d.task.status === 'waiting_for_user' && d.questions.length === 2,
    );
    expect(second.questions[0]?.answer).toBe('The wall by the door.');

    const cancelled = await url('tasks', 'cancel', task.id, '--reason', 'painted it myself');
    expect(cancelled).toEqual({ code: 0, stdout: `${task.id} cancelled\n`, stderr: '' });
    expect(await followCode).toBe(1);
    const events = followOut
      .trim()
      .split('\n')
      .map(
        (l) =>
          JSON.parse(l) as {
            event: string;
            status?: string;
            step?: { kind: string };
            question?: { question: string };
          },
      );
    expect(events[0]?.event).toBe('task');
    expect(events.filter((e) => e.event === 'step' && e.step?.kind === 'planner')).toHaveLength(2);
    // Both questions were announced, once each, whether or not a poll caught the task running in between.
    const questions = events.filter((e) => e.event === 'question').map((e) => e.question?.question);
    expect(questions).toEqual(second.questions.map((q) => q.question));
    const statuses = events.filter((e) => e.event === 'status').map((e) => e.status);
    expect(statuses.at(-1)).toBe('cancelled');
    expect(events.at(-1)).toMatchObject({ event: 'end', status: 'cancelled' });

    // Cancelling again is idempotent (the server returns the cancelled task); a finished task is a conflict.
    expect(await url('tasks', 'cancel', task.id)).toEqual({
      code: 0,
      stdout: `${task.id} cancelled\n`,
      stderr: '',
    });
    const finished = await url('tasks', 'cancel', FIXTURE_IDS.countdown);
    expect(finished).toEqual({
      code: 1,
      stdout: '',
      stderr: `ccagent: task ${FIXTURE_IDS.countdown} is already completed; it cannot be cancelled\n`,
    });
  });

  it('follow is pushed by the server: with a one-minute poll interval the next question still shows within seconds', async () => {
    const created = await url('--json', 'tasks', 'create', '--kind', 'code_job', '--prompt', 'Paint it.');
    const id = (JSON.parse(created.stdout) as { task: { id: string } }).task.id;
    await waitFor(id, (d) => d.task.status === 'waiting_for_user');
    const follow = startCli([
      '--url',
      server.url,
      '--token',
      TOKEN,
      '--json',
      'tasks',
      'follow',
      id,
      '--interval',
      '60000',
    ]);
    let out = '';
    follow.stdout?.setEncoding('utf8').on('data', (d: string) => (out += d));
    const code = new Promise<number | null>((resolve) => follow.on('close', resolve));
    const questions = () => out.split('\n').filter((l) => l.includes('"event":"question"')).length;
    const until = async (cond: () => boolean, what: string): Promise<void> => {
      const end = Date.now() + 15_000;
      while (!cond()) {
        if (Date.now() > end) throw new Error(`timed out waiting for ${what}:\n${out}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    await until(() => out.includes('"event":"task"'), 'the first record');
    const before = questions();
    const started = Date.now();
    expect((await url('tasks', 'answer', id, 'The north wall.')).code).toBe(0);
    await until(() => questions() > before, 'the next question');
    // Polling would have slept a minute; the event stream woke it.
    expect(Date.now() - started).toBeLessThan(15_000);
    expect((await url('tasks', 'cancel', id)).code).toBe(0);
    expect(await code).toBe(1);
  });

  it('follow keeps going across an orchestrator restart and ends with the task', async () => {
    const id = FIXTURE_IDS.ask;
    const follow = startCli([
      '--url',
      server.url,
      '--token',
      TOKEN,
      'tasks',
      'follow',
      id,
      '--interval',
      '100',
    ]);
    let out = '';
    let err = '';
    follow.stdout?.setEncoding('utf8').on('data', (d: string) => (out += d));
    follow.stderr?.setEncoding('utf8').on('data', (d: string) => (err += d));
    const code = new Promise<number | null>((resolve) => follow.on('close', resolve));
    const until = async (cond: () => boolean, what: string): Promise<void> => {
      const end = Date.now() + 15_000;
      while (!cond()) {
        if (Date.now() > end)
          throw new Error(`timed out waiting for ${what}\nstdout:\n${out}\nstderr:\n${err}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    await until(() => out.includes(`Task ${id}`), 'the header');

    const port = server.port;
    await server.stop();
    await until(() => err.includes('still following'), 'the unreachable notice');
    server = await startOrchestrator({ db, ollamaUrl: fake.url, token: TOKEN, port });
    await until(() => err.includes('reachable again'), 'the reconnect notice');

    const d = await show(id);
    const answered = await url(
      'tasks',
      'answer',
      id,
      'The chest behind it.',
      '--question',
      d.questions[0]?.questionId ?? '',
    );
    expect(answered.code, answered.stderr).toBe(0);
    await waitFor(id, (x) => x.questions.length === 2 && x.task.status === 'waiting_for_user');
    expect((await url('tasks', 'cancel', id)).code).toBe(0);
    expect(await code).toBe(1);
    expect(err).toBe(
      `ccagent: cannot reach the orchestrator at ${server.url} (connection failed; is it running?); still following, retrying every 100 ms\n` +
        `ccagent: ${server.url} is reachable again\n`,
    );
    // The human stream: the planner step after the answer, its new question, the cancel.
    expect(out).toMatch(/── step 2 ─+\n {2}#\d+ {2}planner {2}qwen3:8b/);
    expect(out).toMatch(
      / {2}question: Question \d+: which wall should be painted\?\n {2}why: The task names no wall\.\n/,
    );
    expect(out).toMatch(/status waiting_for_user → cancelled\n$/);
  });
  it('create with per-task settings (shown by tasks show), cancel, retry and message a task (guards: settings, retry and follow-ups unreachable from the CLI)', async () => {
    const created = await url(
      '--json',
      'tasks',
      'create',
      '--kind',
      'code_job',
      '--prompt',
      'Paint the fence.',
      '--temperature',
      '0.3',
      '--max-steps',
      '5',
    );
    expect(created.code, created.stderr).toBe(0);
    const { task } = JSON.parse(created.stdout) as { task: { id: string; settings?: unknown } };
    expect(task.settings).toEqual({ temperature: 0.3, budgets: { max_steps: 5 } });
    const shown = await url('tasks', 'show', task.id);
    expect(shown.stdout).toMatch(/settings\s+temperature=0\.3 · budgets\.max_steps=5/);
    const tooMany = await url(
      'tasks',
      'create',
      '--kind',
      'code_job',
      '--prompt',
      'x',
      '--max-steps',
      '1000000',
    );
    expect(tooMany.code).toBe(1);
    expect(tooMany.stderr).toContain('maxSteps');
    await waitFor(task.id, (d) => d.task.status === 'waiting_for_user');
    expect((await url('tasks', 'cancel', task.id)).code).toBe(0);
    const retried = await url('tasks', 'retry', task.id);
    expect(retried.code, retried.stderr).toBe(0);
    expect(retried.stdout).toBe(`retrying ${task.id} (queued)\n`);
    await waitFor(task.id, (d) => d.task.status === 'waiting_for_user');
    const sent = await url('tasks', 'message', task.id, 'Paint it green instead.');
    expect(sent.code, sent.stderr).toBe(0);
    expect(sent.stdout).toBe(`sent to ${task.id} (waiting_for_user)\n`);
    expect((await url('tasks', 'retry', task.id)).code).toBe(1); // not failed or cancelled: a conflict
    expect((await url('tasks', 'cancel', task.id)).code).toBe(0);
  });

  it('create --name gives the agent a name, a second running one of that name is refused and nothing is created, and tasks event reaches it by name (guards: names unreachable from the CLI)', async () => {
    const make = (name: string) =>
      url('--json', 'tasks', 'create', '--kind', 'code_job', '--prompt', 'Watch the farm.', '--name', name);
    const first = await make('cli-watcher');
    expect(first.code, first.stderr).toBe(0);
    const id = (JSON.parse(first.stdout) as { task: { id: string } }).task.id;
    const total = async () =>
      (JSON.parse((await url('--json', 'tasks', 'list', '--limit', '1000')).stdout) as { total: number })
        .total;
    const before = await total();
    const second = await make('cli-watcher');
    expect(second.code).toBe(1);
    expect(second.stderr).toContain('already named "cli-watcher"');
    expect(second.stderr).toContain(id);
    expect(await total()).toBe(before);

    const sent = await url('tasks', 'event', 'cli-watcher', 'redstone', '--data', '{"on":true}');
    expect(sent.code, sent.stderr).toBe(0);
    expect(sent.stdout).toMatch(new RegExp(`^sent redstone to ${id} \\(`));
    const history = async () => {
      const r = await fetch(`${server.url}/api/tasks/${id}`, {
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      const body = (await r.json()) as { history: Array<{ type: string; name?: string; data?: unknown }> };
      return body.history.filter((h) => h.type === 'event');
    };
    expect(await history()).toMatchObject([{ name: 'redstone', data: { on: true } }]);
    const unknown = await url('tasks', 'event', 'cli-watchr', 'redstone');
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toContain('no running task named "cli-watchr"');
    expect((await url('tasks', 'event', 'cli-watcher', 'x', '--data', '{bad')).code).not.toBe(0);
    expect(await history()).toHaveLength(1);

    // once it ends, the name is free again
    expect((await url('tasks', 'cancel', id)).code).toBe(0);
    const third = await make('cli-watcher');
    expect(third.code, third.stderr).toBe(0);
    expect(
      (await url('tasks', 'cancel', (JSON.parse(third.stdout) as { task: { id: string } }).task.id)).code,
    ).toBe(0);
  });
});
