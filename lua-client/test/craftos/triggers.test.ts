// In-game triggers on a real CC:Tweaked computer (issue 35): the triggers file on the computer's disk, loaded by the
// agent host's session, forwards CC events to the orchestrator — redstone changes (debounced, so a flickering line
// sends one change or none), a peripheral attached (CraftOS-PC's periphemu raises the real `peripheral` event), a
// rednet message on one protocol, chat-box chat, a timer — as `task_event`s to a named task or as new tasks from a
// template, each naming its trigger (the server rate-limits by it). `ccagent triggers` lists them.
//
// CraftOS-PC cannot drive a redstone input (its computers have no neighbours): the test program swaps the
// `redstone` API's input readers for a table it changes, and queues the real `redstone` event CC:Tweaked raises.
// Monitors, rednet between computers and chat boxes are not emulated headless either: those events are queued
// with the arguments CC:Tweaked (and Advanced Peripherals' chat box) give them.
import type { ClientMessage } from '@ccagent/protocol';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PRELUDE, screenText, sessionProgram } from './craftos.js';
import { Scenario, craftos } from './scenario.js';

type TaskEvent = Extract<ClientMessage, { type: 'task_event' }>;
type CreateTask = Extract<ClientMessage, { type: 'create_task' }>;

const TRIGGERS = `-- the farm watcher's triggers (docs/agents.md)
return {
    { name = "crops", on = "redstone", side = "back", debounce = 0.5, agent = "farm-watcher" },
    { name = "new_device", on = "peripheral", task = { kind = "general_agent",
        prompt = "A device was attached: find out what it is.", settings = { temperature = 0.2 } } },
    { name = "farm_msgs", on = "rednet", protocol = "farm", agent = "farm-watcher", event = "farm_message" },
    { name = "harvest_cmd", on = "chat", pattern = "^harvest", agent = "farm-watcher" },
    { name = "screen", on = "monitor_touch", debounce = 0, agent = "farm-watcher",
        when = function(d) return d.y == 1 end },
    { name = "tick", on = "timer", every = 1, agent = "farm-watcher" },
}
`;

// The real session (ccagent.session: host + triggers from /.ccagent/triggers.lua), with the redstone inputs the
// emulator cannot set made settable, and a script of events.
const PROGRAM = `${sessionProgram('farm')}
local function mark(what) local h = fs.open("/marks", "a") h.writeLine(what) h.close() end
local function script()
    repeat local _, state = os.pullEvent("ccagent_connection") until state == "connected"
    -- a line that flickers on, off, on inside the quiet period: one change (on) at its end
    inputs.back = 15 os.queueEvent("redstone") sleep(0.1)
    inputs.back = 0 os.queueEvent("redstone") sleep(0.1)
    inputs.back = 15 os.queueEvent("redstone")
    sleep(1.2)
    mark("flicker-on")
    -- a flicker that ends where it began: nothing
    inputs.back = 0 os.queueEvent("redstone") sleep(0.1)
    inputs.back = 15 os.queueEvent("redstone")
    sleep(1.2)
    -- another side changing is not this trigger's business
    inputs.left = 15 os.queueEvent("redstone")
    sleep(1.2)
    mark("flicker-back")
    periphemu.create("top", "modem")
    os.queueEvent("rednet_message", 12, "ripe", "farm")
    os.queueEvent("rednet_message", 13, "ignore me", "other")
    os.queueEvent("chat", "Steve", "harvest now", "uuid-1", false)
    os.queueEvent("chat", "Alex", "hello there", "uuid-2", false)
    os.queueEvent("monitor_touch", "monitor_0", 4, 1)
    os.queueEvent("monitor_touch", "monitor_0", 4, 9)
    sleep(0.5)
    mark("events")
    while true do sleep(1) end
end
parallel.waitForAny(function() session_mod.run(session) end, script)
`;

describe.skipIf(!craftos)('in-game triggers in CraftOS', () => {
  let s: Scenario;
  beforeEach(async () => {
    s = await Scenario.start();
  });
  afterEach(async () => {
    expect(await s.end()).toEqual([]);
  });

  const events = (trigger: string): TaskEvent[] =>
    s.server.received.filter((m): m is TaskEvent => m.type === 'task_event' && m.trigger === trigger);

  it('forwards redstone (debounced), peripheral, rednet, chat, monitor and timer events as the file says', async () => {
    const c = s.boot(PROGRAM, {
      args: [s.server.url],
      files: { '.ccagent/triggers.lua': TRIGGERS },
      timeoutMs: 40_000,
    });
    await s.server.hello();
    const created = await s.server.waitFor<CreateTask>((m) => m.type === 'create_task', 20_000);
    // the template's task, with the event in its prompt and context, and the trigger named for the rate limit
    expect(created).toMatchObject({
      task_kind: 'general_agent',
      client_id: 'farm',
      trigger: 'new_device',
      settings: { temperature: 0.2 },
      context: { trigger: 'new_device', event: 'peripheral', data: { side: 'top', type: 'modem' } },
    });
    expect(created.prompt).toMatch(/^A device was attached: find out what it is\.\n\nTrigger new_device/);
    await s.server.waitFor((m) => m.type === 'task_event' && m.trigger === 'screen', 10_000);
    await new Promise((r) => setTimeout(r, 1500));

    // three changes on the watched line made one event; the flicker back to on made none; the left side none
    expect(events('crops').map((e) => e.data)).toEqual([{ side: 'back', on: true, level: 15 }]);
    expect(events('crops')[0]).toMatchObject({ agent: 'farm-watcher', name: 'redstone' });
    expect(events('crops')[0]).not.toHaveProperty('task_id');
    expect(events('farm_msgs').map((e) => [e.name, e.data])).toEqual([
      ['farm_message', { sender: 12, message: 'ripe', protocol: 'farm' }],
    ]);
    expect(events('harvest_cmd').map((e) => e.data)).toEqual([{ player: 'Steve', message: 'harvest now' }]);
    expect(events('screen').map((e) => e.data)).toEqual([{ monitor: 'monitor_0', x: 4, y: 1 }]);
    // a 1 s timer over the run: several, each with the time it fired
    const ticks = events('tick');
    expect(ticks.length).toBeGreaterThanOrEqual(3);
    expect(typeof (ticks[0]?.data as { at: number }).at).toBe('number');
    expect(screenText(c)).not.toContain('problem:');
  });

  it('`ccagent triggers` lists the file, and a bad entry is reported without losing the good ones', async () => {
    const bad = TRIGGERS.replace(
      'return {',
      'return {\n    { name = "broken", on = "sunrise", agent = "t" },',
    );
    const c = s.boot(`${PRELUDE}shell.run("/ccagent/programs/ccagent.lua", "triggers")`, {
      files: { '.ccagent/triggers.lua': bad },
    });
    expect((await c.exited).code).toBe(0);
    const screen = screenText(c);
    expect(screen).toContain('6 trigger(s) in /.ccagent/triggers.lua');
    expect(screen).toContain(
      "crops: redstone back -> event 'redstone' to agent farm-watcher (debounce 0.5s)",
    );
    expect(screen).toContain('farm_msgs: rednet protocol farm');
    expect(screen).toContain('new_device: peripheral -> new general_agent');
    expect(screen).toContain('trigger #1 (broken): on must be one of');
  });
});
