// End to end: the orchestrator is SIGKILLed while a command runs on the CC computer and started again on the same
// database and port, twice: once the command finishes while the server is down (the host keeps the result, sends it
// after reconnecting and answers the re-sent call_id from it), once it is still running when the server is back
// (the re-sent call_id must not start it again). The host reconnects by itself each time and the task completes.
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootDriver, driverResult } from './driver.js';
import { ASK_KIND, SLOW, lampPlanner, read, waitFor } from './programs.js';
import { MODELS, Stack, craftos } from './stack.js';

describe.skipIf(!craftos)('end to end: orchestrator killed mid-task', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await Stack.start({ config: { taskKinds: { e2e_ask: ASK_KIND } } });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('the host reconnects after kill -9 + restart on the same DB and port; the task finishes; nothing runs twice', async () => {
    stack.fake.script(MODELS.native, [
      { toolCalls: [{ name: 'run_program', arguments: { path: 'slow.lua', args: ['a'] } }] },
      { toolCalls: [{ name: 'run_program', arguments: { path: 'slow.lua', args: ['b'] } }] },
      'slow.lua finished twice.',
    ]);
    const port = new URL(stack.url).port;
    const c = bootDriver(
      {
        url: stack.wsUrl,
        client_id: 'e2e-restart',
        reconnect_min: 0.2,
        reconnect_max: 1,
        tasks: [{ kind: 'general_agent', prompt: 'Run slow.lua a, then slow.lua b, and report.' }],
      },
      { files: { 'slow.lua': SLOW } },
    );
    const runs = path.join(c.disk, 'runs.log');
    const go = (tag: string) => writeFileSync(path.join(c.disk, `go-${tag}`), '');

    // 1. Killed while "a" runs; "a" finishes while the server is down.
    await waitFor('slow.lua a to start', () => read(runs) === 'start a\n');
    const [before] = (await stack.get<{ tasks: Array<{ id: string; status: string }> }>('/api/tasks')).tasks;
    expect(before?.status).toBe('waiting_for_command');
    await stack.kill9();
    go('a');
    await waitFor('slow.lua a to end', () => read(runs) === 'start a\nend a\n');
    expect(await stack.restart(port)).toMatch(/1 unfinished tasks resumed/);

    // 2. Killed while "b" runs; the server is back before "b" ends, and re-sends its call meanwhile.
    await waitFor('slow.lua b to start', () => read(runs).endsWith('start b\n'));
    await stack.kill9();
    expect(await stack.restart(port)).toMatch(/1 unfinished tasks resumed/);
    await stack.until(
      'the call of b to be re-sent after the restart',
      () => stack.task(before!.id),
      (d) => d.command_calls[1]?.dispatch_count === 2,
    );
    go('b');

    const out = await driverResult(c);
    const [seen] = out.tasks;
    expect(seen?.status, JSON.stringify(out)).toBe('completed');
    expect(seen?.id).toBe(before?.id);
    expect(seen?.result).toMatchObject({ message: 'slow.lua finished twice.' });
    // The client noticed both drops and reconnected by itself; the server refused nothing it sent.
    expect(out.connections.filter((x) => x === 'disconnected').length).toBeGreaterThanOrEqual(2);
    expect(out.connections.filter((x) => x === 'connected').length).toBeGreaterThanOrEqual(3);
    expect(out.connections.at(-1)).toBe('connected');
    expect(out.errors).toEqual([]);

    // Host side: each program ran exactly once.
    expect(read(runs)).toBe('start a\nend a\nstart b\nend b\n');
    // Server side: each call re-sent once after a restart, closed by its one run's result.
    const detail = await stack.task(seen!.id!);
    expect(detail.task.status).toBe('completed');
    expect(detail.command_calls.map((x) => [x.args, x.status, x.dispatch_count, x.outcome])).toEqual([
      [
        { path: 'slow.lua', args: ['a'] },
        'succeeded',
        2,
        { ok: true, result: { ok: true, output: 'slow work a done' } },
      ],
      [
        { path: 'slow.lua', args: ['b'] },
        'succeeded',
        2,
        { ok: true, result: { ok: true, output: 'slow work b done' } },
      ],
    ]);
    const last = stack.fake.chatRequests(MODELS.native)[2]?.body as {
      messages: Array<{ role: string; content: string }>;
    };
    expect(last.messages.filter((m) => m.role === 'tool').map((m) => m.content)).toEqual([
      expect.stringContaining('slow work a done'),
      expect.stringContaining('slow work b done'),
    ]);
  });

  it('a call the server cancels is stopped on the computer and its answer acknowledged: nothing refused, nothing re-sent after a restart', async () => {
    stack.fake.script(MODELS.native, [
      { toolCalls: [{ name: 'run_program', arguments: { path: 'slow.lua', args: ['c'] } }] },
      // The second task's answer, which needs no command: marked final (a first answer in prose is nudged).
      'FINAL: nothing to do',
    ]);
    const refused = 'ccagent_ws_errors_sent_total{code="unknown_call"}';
    const port = new URL(stack.url).port;
    const c = bootDriver(
      {
        url: stack.wsUrl,
        client_id: 'e2e-closed',
        reconnect_min: 0.2,
        reconnect_max: 1,
        tasks: [
          { kind: 'general_agent', prompt: 'Run slow.lua c.' },
          // Created after the restart: the server handles it only after whatever the client re-sent at welcome.
          { kind: 'general_agent', prompt: 'Say something.', after_file: '/next' },
        ],
      },
      { files: { 'slow.lua': SLOW } },
    );
    const runs = path.join(c.disk, 'runs.log');
    await waitFor('slow.lua c to start', () => read(runs) === 'start c\n');
    const [task] = (await stack.get<{ tasks: Array<{ id: string }> }>('/api/tasks?client=e2e-closed')).tasks;
    const cancel = await stack.post(`/api/tasks/${task!.id}/cancel`, { reason: 'changed my mind' });
    expect(cancel.status).toBe(200);
    const state = path.join(c.disk, '.ccagent', 'state');
    // The host answers the command_cancel once; the server acknowledges it, so it leaves the state dir.
    await waitFor(
      'the cancelled call to leave the state dir',
      () =>
        existsSync(state) && readdirSync(state).every((f) => !f.endsWith('.result') && !f.endsWith('.run')),
    );
    writeFileSync(path.join(c.disk, 'go-c'), ''); // too late: the program was terminated

    await stack.kill9();
    await stack.restart(port);
    writeFileSync(path.join(c.disk, 'next'), '');
    const out = await driverResult(c);
    expect(out.tasks.map((t) => t.status)).toEqual(['cancelled', 'completed']);
    expect(await stack.metric(refused)).toBe(0); // nothing was re-sent to the restarted server
    expect(out.errors).toEqual([]);
    expect(out.connections.filter((x) => x === 'connected')).toHaveLength(2);
    expect(read(runs)).toBe('start c\n'); // stopped mid-way: it never reached "end c"
    const detail = await stack.task(task!.id);
    expect(detail.task.status).toBe('cancelled');
    expect(detail.command_calls).toEqual([
      expect.objectContaining({ status: 'cancelled', dispatch_count: 1 }),
    ]);
  });

  it('a task waiting for an answer survives the restart: the question is announced once, answered after the restart, and the task completes', async () => {
    stack.fake.script(MODELS.planner, lampPlanner());
    const port = new URL(stack.url).port;
    const c = bootDriver({
      url: stack.wsUrl,
      client_id: 'e2e-ask-restart',
      reconnect_min: 0.2,
      reconnect_max: 1,
      tasks: [
        {
          kind: 'e2e_ask',
          prompt: 'Set up the lamp program.',
          answer: 'amber',
          answer_after_file: '/answer',
        },
      ],
    });
    const waiting = await stack.until(
      'the task to wait for an answer',
      () => stack.get<{ tasks: Array<{ id: string; status: string }> }>('/api/tasks?client=e2e-ask-restart'),
      (r) => r.tasks[0]?.status === 'waiting_for_user',
    );
    const id = waiting.tasks[0]!.id;
    await stack.kill9();
    expect(await stack.restart(port)).toMatch(/1 unfinished tasks resumed/);
    await stack.until(
      'the client to reconnect',
      () => stack.get<{ clients: Array<{ client_id: string; connected: boolean }> }>('/api/clients'),
      (r) => r.clients.some((x) => x.client_id === 'e2e-ask-restart' && x.connected),
    );
    writeFileSync(path.join(c.disk, 'answer'), '');

    const out = await driverResult(c);
    const [seen] = out.tasks;
    expect(seen?.status, JSON.stringify(out)).toBe('completed');
    // The server repeats the open question after the reconnect (twice: re-sent, and in the subscribe reply); the
    // program hears of it once and answers it once, to the restarted server.
    expect(seen?.questions.map((q) => q.question)).toEqual(['Which colour should the lamp be?']);
    expect(out.errors).toEqual([]);
    const detail = await stack.task(id);
    expect(detail.questions).toEqual([expect.objectContaining({ answer: 'amber' })]);
    expect(seen?.result).toMatchObject({ summary: 'the lamp is amber; lamp.lua printed it.' });
    expect(read(path.join(c.disk, 'lamp.lua'))).toBe('print("lamp colour: amber")\n');
  });
});
