// End to end: one resident agent woken by a durable schedule AND by a redstone change on a real CC computer, across
// a kill -9 of the orchestrator, with its hourly step budget enforced. The built `cc-orchestrator serve` (temp
// SQLite file) runs a `resident_agent` task bound to `farm-host` (a real CraftOS-PC computer running the host with a
// triggers file); the model is the testkit's scripted double and answers every wake with `wait`.
//
//   1. created: model call 1 (the prompt), then asleep;
//   2. a 3 s event schedule is added and paused again once it woke the agent: model call 2 sees its `tick`;
//   3. the crop sensor turns on: call 3 sees the debounced `redstone` event from the host's triggers file;
//   4. kill -9, restart on the same file and port; the host reconnects by itself; the schedule is resumed: call 4
//      sees a `tick` fired by the new process;
//   5. the sensor turns off, and the schedule keeps firing: `periodBudgets.hour.maxSteps` is 4, so the agent sleeps
//      until the hour ends (a `period_budget` record) and no model call happens, however many events arrive.
//
// What woke each call is read from the store (the step log): the events recorded between one model request and the
// one before it. Each schedule firing is posted once (its `schedule_firing` is unique), the host's redstone events
// arrive once per real change, and the model is called exactly four times.
//
// CraftOS-PC cannot drive a redstone input: the host program swaps the `redstone` API's input readers for a table
// and sets the back input (queuing the real `redstone` event) to the level the test writes into /level.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { FakeChatRequest } from '@ccagent/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sessionProgram, startComputer, type Computer } from '../craftos/craftos.js';
import { waitFor } from './programs.js';
import { MODELS, Stack, craftos, type TaskDetail } from './stack.js';

const HOST = `${sessionProgram('farm-host')}
local function sensor()
    while not fs.exists("/stop") do
        if fs.exists("/level") then
            local h = fs.open("/level", "r")
            local levels = h.readAll()
            h.close()
            fs.delete("/level")
            -- several levels: a flickering line, 50 ms apart
            for level in levels:gmatch("%d+") do
                inputs.back = tonumber(level)
                os.queueEvent("redstone")
                local log = fs.open("/sensor.log", "a")
                log.writeLine(level)
                log.close()
                sleep(0.05)
            end
        end
        sleep(0.1)
    end
end
parallel.waitForAny(function() session_mod.run(session) end, sensor)
`;

const HOUR = 3_600_000;
const MAX_STEPS_PER_HOUR = 4;
type Json = Record<string, unknown>;
type Entry = TaskDetail['history'][number];

/**
 * What woke each model call, from the store: the events recorded while the task slept after step k-1 (a history
 * entry carries the number of the step it arrived after) are what step k's model request saw first.
 */
function wakes(d: TaskDetail): Entry[][] {
  const requests = d.steps.filter((s) => s.kind === 'model_request').map((s) => s['step'] as number);
  const events = d.history.filter((h) => h.type === 'event');
  return requests.map((step) => events.filter((e) => (e['step'] as number) === step - 1));
}
/** The events that arrived after the last model call. */
function unanswered(d: TaskDetail): Entry[] {
  const last = Math.max(
    0,
    ...d.steps.filter((s) => s.kind === 'model_request').map((s) => s['step'] as number),
  );
  return d.history.filter((h) => h.type === 'event' && (h['step'] as number) >= last);
}
const names = (es: Entry[]) => [...new Set(es.map((e) => e['name'] as string))];
const firingsOf = (d: TaskDetail) =>
  d.history
    .filter((h) => h.type === 'event' && h['name'] === 'tick')
    .map((h) => (h['data'] as Json)['schedule_firing'] as string);

describe.skipIf(!craftos)('end to end: a resident agent woken by a schedule and by redstone', () => {
  let stack: Stack;
  let host: Computer | undefined;
  beforeAll(async () => {
    stack = await Stack.start({
      config: {
        taskKinds: { resident_agent: { periodBudgets: { hour: { maxSteps: MAX_STEPS_PER_HOUR } } } },
      },
    });
  });
  afterAll(async () => {
    if (host) {
      writeFileSync(path.join(host.disk, 'stop'), '');
      await host.stop();
    }
    await stack?.close();
  });

  it('wakes on a schedule firing and on a CraftOS redstone change, across kill -9, and sleeps without a model call once its hourly budget is spent', async () => {
    // The budget window is the UTC hour: start well inside one so the whole test runs in it.
    const left = HOUR - (Date.now() % HOUR);
    if (left < 100_000) await new Promise((r) => setTimeout(r, left + 1000));
    const hour = Math.floor(Date.now() / HOUR);

    const requests: FakeChatRequest[] = [];
    stack.fake.script(MODELS.native, (req) => {
      requests.push(req);
      return {
        toolCalls: [{ name: 'wait', arguments: { seconds: 86_400, reason: 'waiting for the farm' } }],
      };
    });
    const calls = () => Promise.resolve(requests.length);
    const created = await stack.post<{ task: { id: string } }>('/api/tasks', {
      task_kind: 'resident_agent',
      client_id: 'farm-host',
      prompt: 'Watch the wheat farm. Sleep with the wait tool; wake on events "tick" and "redstone".',
    });
    expect(created.status).toBe(201);
    const id = created.body.task.id;
    await stack.until('call 1: the prompt', calls, (n) => n === 1);

    host = startComputer(craftos!, HOST, {
      args: [stack.wsUrl],
      files: {
        '.ccagent/triggers.lua': `return {
    { name = "crops", on = "redstone", side = "back", debounce = 0.3, agent = "${id}" },
}`,
      },
      timeoutMs: 170_000,
    });
    const disk = host.disk;
    const setLevel = async (levels: string) => {
      writeFileSync(path.join(disk, 'level'), levels);
      await waitFor('the sensor to read the level', () => !existsSync(path.join(disk, 'level')), 30_000);
    };
    const connected = () =>
      stack.until(
        'farm-host connected',
        () => stack.get<{ clients: Array<{ client_id: string; connected: boolean }> }>('/api/clients'),
        (r) => r.clients.some((c) => c.client_id === 'farm-host' && c.connected),
        30_000,
      );
    await connected();

    // 2. the schedule wakes it; paused again at once (the next firing is 3 s away), so the redstone wake below is
    // its own
    const added = await stack.post('/api/schedules', {
      id: 'farm-tick',
      every_ms: 3000,
      missed: 'skip',
      event: { task_id: id, name: 'tick', data: { zone: 'wheat' } },
    });
    expect(added.status).toBe(201);
    await stack.until('call 2: woken by the schedule', calls, (n) => n === 2, 30_000);
    expect((await stack.post('/api/schedules/farm-tick/pause', {})).status).toBe(200);

    // 3. the crop sensor turns on (it flickers first: the host's debounce sends one change)
    await setLevel('15 0 15');
    await stack.until('call 3: woken by redstone', calls, (n) => n === 3, 30_000);
    await new Promise((r) => setTimeout(r, 800));
    expect(requests).toHaveLength(3);

    // 4. kill -9 and restart on the same database and port; the host reconnects by itself
    const port = new URL(stack.url).port;
    await stack.kill9();
    const restartedAt = Date.now();
    expect(await stack.restart(port)).toMatch(/1 unfinished tasks resumed/);
    await connected();
    expect(requests).toHaveLength(3); // a restart is no wake: the agent sleeps on
    expect((await stack.post('/api/schedules/farm-tick/resume', {})).status).toBe(200);
    await stack.until('call 4: woken by the schedule after the restart', calls, (n) => n === 4, 30_000);

    // 5. over the hour's budget: more ticks and a redstone change are recorded, but no model call happens
    await setLevel('0');
    let detail = await stack.until(
      'the agent asleep on its budget with events arriving',
      () => stack.task(id),
      (d) => {
        const after = unanswered(d);
        return (
          wakes(d).length === 4 &&
          d.steps.some((s) => s.kind === 'period_budget') &&
          names(after).includes('redstone') &&
          after.filter((h) => h['name'] === 'tick').length >= 2
        );
      },
      30_000,
    );
    await new Promise((r) => setTimeout(r, 1500));
    detail = await stack.task(id);
    expect(Math.floor(Date.now() / HOUR), 'the test left the budget hour').toBe(hour);
    expect(requests).toHaveLength(MAX_STEPS_PER_HOUR);
    expect(detail.task.status).toBe('running');

    // What woke each call, from the step log.
    const w = wakes(detail);
    expect(w).toHaveLength(4);
    expect(w[0]).toEqual([]);
    expect(names(w[1]!)).toEqual(['tick']);
    expect(w[2]!.map((e) => [e['name'], e['data']])).toEqual([
      ['redstone', { side: 'back', on: true, level: 15 }],
    ]);
    expect(names(w[3]!)).toEqual(['tick']);
    // the fourth wake's ticks were fired by the restarted process (due after the kill)
    const due = (e: Entry) => Date.parse((e['data'] as Json)['due_at'] as string);
    for (const e of w[3]!) expect(due(e)).toBeGreaterThanOrEqual(restartedAt);
    // the budget's sleep is on record, with the hour's end as its wake time
    const sleeps = detail.steps.filter((s) => s.kind === 'period_budget');
    expect(sleeps.length).toBeGreaterThanOrEqual(1);
    for (const rec of sleeps) {
      expect(rec['output']).toMatchObject({
        period: 'hour',
        budget: 'maxSteps',
        limit: MAX_STEPS_PER_HOUR,
        used: MAX_STEPS_PER_HOUR,
        until: (hour + 1) * HOUR,
      });
    }

    // Nothing twice: each schedule firing posted once; one redstone event per real change (on, then off).
    const firings = firingsOf(detail);
    expect(new Set(firings).size).toBe(firings.length);
    const redstone = detail.history.filter((h) => h.type === 'event' && h['name'] === 'redstone');
    expect(redstone.map((e) => (e['data'] as Json)['on'])).toEqual([true, false]);
    expect(readFileSync(path.join(disk, 'sensor.log'), 'utf8')).toBe('15\n0\n15\n0\n');
    // each model call was answered once, with a wait: four decisions, four waits, no tool ran on the host
    expect(detail.command_calls).toEqual([]);
  }, 180_000);
});
