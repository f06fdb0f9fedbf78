// `ccagent schedules` through the built CLI against the built orchestrator: add a cron schedule in a time zone and an
// interval schedule that posts an event to a task, list them with their next firing, pause, resume and remove; a bad
// cron expression is refused with the field named and nothing stored; a viewer key lists but cannot add; each change
// is in the audit log.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { orchestratorBuilt, startOrchestrator, type RunningOrchestrator } from './support/orchestrator.js';
import { runCli } from './support/run-cli.js';

const TOKEN = 'operator-s3cret';

describe.skipIf(!orchestratorBuilt)('ccagent schedules list / add / pause / resume / remove', () => {
  let fake: FakeOllama;
  let server: RunningOrchestrator;
  let dir: string;
  const cli = (...args: string[]) => runCli(['--url', server.url, '--token', TOKEN, ...args]);

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'ccagent-schedules-cli-'));
    fake = await startFakeOllama();
    server = await startOrchestrator({ db: path.join(dir, 's.db'), ollamaUrl: fake.url, token: TOKEN });
  });
  afterAll(async () => {
    await server?.stop();
    await fake?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('manages schedules, refuses bad ones, and a viewer only reads (guards against schedules changed outside the operator role)', async () => {
    const bad = await cli('schedules', 'add', '--cron', '0 25 * * *', '--task-kind', 'chat', '--prompt', 'x');
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/cron/);
    expect((await cli('schedules', 'list')).stdout).toContain('no schedules');

    const morning = await cli(
      'schedules',
      'add',
      '--id',
      'morning',
      '--name',
      'report',
      '--cron',
      '0 7 * * *',
      '--tz',
      'Europe/Berlin',
      '--task-kind',
      'chat',
      '--prompt',
      'Say good morning',
    );
    expect(morning.code, morning.stderr).toBe(0);
    expect(morning.stdout).toContain('added morning');
    expect(morning.stdout).toContain('cron "0 7 * * *" Europe/Berlin');

    const created = await fetch(`${server.url}/api/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify({ task_kind: 'chat', prompt: 'hello' }),
    });
    const taskId = ((await created.json()) as { task: { id: string } }).task.id;
    const tick = await cli(
      'schedules',
      'add',
      '--id',
      'tick',
      '--every',
      '1h',
      '--missed',
      'skip',
      '--event',
      'tick',
      '--task',
      taskId,
      '--data',
      '{"zone":"farm"}',
    );
    expect(tick.code, tick.stderr).toBe(0);
    expect(tick.stdout).toContain(`event tick → ${taskId}`);

    const listed = await cli('--json', 'schedules', 'list');
    const body = JSON.parse(listed.stdout) as { schedules: Array<Record<string, unknown>> };
    expect(body.schedules.map((s) => s['id'])).toEqual(['morning', 'tick']);
    const m = body.schedules[0] ?? {};
    // 07:00 Berlin is 05:00 or 06:00 UTC
    expect(new Date(m['next_due_at'] as number).getUTCHours()).toBeGreaterThanOrEqual(5);
    expect(new Date(m['next_due_at'] as number).getUTCHours()).toBeLessThanOrEqual(6);
    expect(body.schedules[1]).toMatchObject({
      every_ms: 3_600_000,
      missed: 'skip',
      event: { data: { zone: 'farm' } },
    });

    // by agent name, looked up at each firing (the agent need not run yet); not both --task and --agent
    const byName = await cli(
      'schedules',
      'add',
      '--id',
      'dawn',
      '--every',
      '1h',
      '--event',
      'dawn',
      '--agent',
      'farm-watcher',
    );
    expect(byName.code, byName.stderr).toBe(0);
    expect(byName.stdout).toContain('event dawn → agent farm-watcher');
    const both = await cli(
      'schedules',
      'add',
      '--every',
      '1h',
      '--event',
      'x',
      '--agent',
      'a',
      '--task',
      taskId,
    );
    expect(both.code).not.toBe(0);
    expect(both.stderr).toContain('--task or --agent');
    expect((await cli('schedules', 'remove', 'dawn')).code).toBe(0);

    expect((await cli('schedules', 'pause', 'tick')).stdout).toContain('paused');
    expect((await cli('schedules', 'resume', 'tick')).stdout).toContain('next ');
    expect((await cli('schedules', 'remove', 'tick')).stdout).toContain('removed tick');
    const gone = await cli('schedules', 'remove', 'tick');
    expect(gone.code).not.toBe(0);

    const viewer = await cli('clients', 'keys', '--create', 'viewer', '--name', 'wall');
    const viewerKey = /: (cck_\S+)/.exec(viewer.stdout)?.[1] ?? '';
    const asViewer = (...args: string[]) => runCli(['--url', server.url, '--token', viewerKey, ...args]);
    expect((await asViewer('schedules', 'list')).stdout).toContain('morning');
    const refused = await asViewer(
      'schedules',
      'add',
      '--every',
      '1h',
      '--task-kind',
      'chat',
      '--prompt',
      'x',
    );
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/403|read-only/);

    const audit = await cli('--json', 'audit');
    const actions = (JSON.parse(audit.stdout) as { entries: Array<{ action: string }> }).entries.map(
      (e) => e.action,
    );
    for (const a of ['schedule.add', 'schedule.pause', 'schedule.resume', 'schedule.remove'])
      expect(actions).toContain(a);
  }, 60_000);
});
