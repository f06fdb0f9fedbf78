// End to end: the farm watcher of docs/agents.md on a real CC computer (CraftOS-PC) and the built orchestrator. A
// long-lived task (a native kind with the wait tool) named `farm-watcher` sleeps on `farm-host`; the host's triggers
// file sends a redstone change on the back as an event to it by that name (no task id in the file; the server
// resolves it); the task wakes, does its work on the host through its tools and sleeps
// again. While it sleeps no model call happens.
//
// CraftOS-PC cannot drive a redstone input: the host program swaps the `redstone` API's input readers for a table
// and turns the back input on (queuing the real `redstone` event) when the test writes /ripe into its disk.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { FakeChatRequest } from '@ccagent/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startComputer, sessionProgram } from '../craftos/craftos.js';
import { waitFor } from './programs.js';
import { MODELS, Stack, craftos } from './stack.js';

type Msg = { role: string; content: string };

const HOST = `${sessionProgram('farm-host')}
local function sensor()
    while not fs.exists("/ripe") do sleep(0.1) end
    -- the sensor flickers while the last plant grows, then stays on
    for _, level in ipairs({ 15, 0, 15, 0, 15 }) do
        inputs.back = level
        os.queueEvent("redstone")
        sleep(0.05)
    end
    while not fs.exists("/stop") do sleep(0.1) end
end
parallel.waitForAny(function() session_mod.run(session) end, sensor)
`;

describe.skipIf(!craftos)('end to end: the farm watcher', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await Stack.start({
      config: {
        taskKinds: {
          farm_watcher: {
            strategy: 'native',
            waitTool: true,
            allowedCommands: ['fs_write', 'run_program'],
            budgets: { maxSteps: 40 },
          },
        },
      },
    });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('sleeps, is woken by a debounced redstone change on the host, harvests there and sleeps again without model calls', async () => {
    const requests: FakeChatRequest[] = [];
    stack.fake.script(MODELS.native, (req) => {
      requests.push(req);
      const msgs = req.body.messages as Msg[];
      const woken = msgs.some(
        (m) => m.role !== 'system' && /redstone/.test(m.content) && /"on":\s*true/.test(m.content),
      );
      const wrote = msgs.filter((m) => m.role === 'tool').length >= 2;
      if (!woken || wrote)
        return { toolCalls: [{ name: 'wait', arguments: { seconds: 86400, reason: 'ripe wheat' } }] };
      return {
        toolCalls: [{ name: 'fs_write', arguments: { path: 'harvest.log', content: 'harvested 64 wheat' } }],
      };
    });
    const created = await stack.post<{ task: { id: string } }>('/api/tasks', {
      task_kind: 'farm_watcher',
      client_id: 'farm-host',
      name: 'farm-watcher',
      prompt: 'Watch the wheat farm. When an event "redstone" says on = true, harvest, then sleep again.',
    });
    expect(created.status).toBe(201);
    const id = created.body.task.id;
    const triggers = `return {
    { name = "crops", on = "redstone", side = "back", debounce = 0.5, agent = "farm-watcher" },
}`;
    const host = startComputer(craftos!, HOST, {
      args: [stack.wsUrl],
      files: { '.ccagent/triggers.lua': triggers },
      timeoutMs: 60_000,
    });
    try {
      // asleep: one model call, the wait
      await stack.until(
        'the watcher asleep',
        () => Promise.resolve(requests.length),
        (n) => n === 1,
      );
      await new Promise((r) => setTimeout(r, 1000));
      expect(requests).toHaveLength(1);

      writeFileSync(path.join(host.disk, 'ripe'), '');
      await waitFor('harvest.log on the host', () => existsSync(path.join(host.disk, 'harvest.log')));
      expect(readFileSync(path.join(host.disk, 'harvest.log'), 'utf8')).toBe('harvested 64 wheat');
      // woken once (the flicker sent one change), harvested, asleep again: three model calls in all
      await stack.until(
        'asleep again',
        () => Promise.resolve(requests.length),
        (n) => n === 3,
      );
      await new Promise((r) => setTimeout(r, 1500));
      expect(requests).toHaveLength(3);
      const detail = await stack.task(id);
      const events = detail.history.filter((h) => h.type === 'event');
      expect(events).toHaveLength(1);
      expect(events[0]).toMatchObject({ name: 'redstone', data: { side: 'back', on: true, level: 15 } });
      expect(detail.task.status).not.toMatch(/completed|failed|cancelled/);
      expect(detail.command_calls.map((c) => c.command)).toEqual(['fs_write']);
    } finally {
      writeFileSync(path.join(host.disk, 'stop'), '');
      await host.stop();
    }
  });
});
