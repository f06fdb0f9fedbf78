// The interactive `ccagent` program, typed at by a driver coroutine that queues the same paste/key events a
// player's keyboard produces: create a task, watch it, answer its question, list tasks, quit.
import type { ClientMessage } from '@ccagent/protocol';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { screenText } from './craftos.js';
import { Scenario, craftos } from './scenario.js';

type CreateTask = Extract<ClientMessage, { type: 'create_task' }>;

// `type(text)`: what a player does by pasting a line and pressing Enter.
const DRIVER = `
local function type_line(text)
    os.queueEvent("paste", text)
    os.queueEvent("key", keys.enter)
end
local function driver(connected)
    if not connected then os.pullEvent("ccagent_connection") end
    sleep(0.1)
    type_line("build a tiny house")
    os.pullEvent("ccagent_question")
    sleep(0.1)
    type_line("oak wood")
    local id
    repeat local _, tid, status = os.pullEvent("ccagent_task") id = tid until status == "completed"
    sleep(0.1)
    type_line("/msg " .. id:sub(1, 8) .. " now add a door")
    sleep(0.1)
    type_line("/tasks")
    sleep(0.1)
    type_line("/quit")
end
`;

const STANDALONE = `${DRIVER}
local url = ...
parallel.waitForAll(function()
    assert(shell.run("/ccagent/programs/ccagent.lua", url, "--id", "ui-test", "--kind", "code_job"))
end, driver)
`;

// ccagent-host already runs (as the startup file arranges); the UI must share its connection.
const ATTACHED = `${DRIVER}
local url = ...
parallel.waitForAny(function() shell.run("/ccagent/programs/ccagent-host.lua", url, "--id", "host-1", "--quiet") end,
    function()
        os.pullEvent("ccagent_connection")
        parallel.waitForAll(function() assert(shell.run("/ccagent/programs/ccagent.lua")) end,
            function() driver(true) end)
    end)
`;

// A chat: one question, the streamed reply, quit.
const CHAT = `
local url = ...
parallel.waitForAll(function()
    assert(shell.run("/ccagent/programs/ccagent.lua", url, "--id", "chat-ui", "--kind", "chat"))
end, function()
    os.pullEvent("ccagent_connection")
    sleep(0.1)
    os.queueEvent("paste", "what is a turtle?")
    os.queueEvent("key", keys.enter)
    repeat local _, _, status = os.pullEvent("ccagent_task") until status == "completed"
    sleep(0.1)
    os.queueEvent("paste", "/quit")
    os.queueEvent("key", keys.enter)
end)
`;

// Settings from inside the game: pick a kind and a model from what the server offered, set a temperature and
// budgets, and run the task on another computer of the player's group.
const SETTINGS = `
local url = ...
parallel.waitForAll(function()
    assert(shell.run("/ccagent/programs/ccagent.lua", url, "--id", "pocket-1"))
end, function()
    os.pullEvent("ccagent_connection")
    for _, line in ipairs({ "/kind", "/kind 2", "/model", "/model nope", "/model 2", "/set temperature 0.3",
        "/set max_steps 12", "/set deadline_s 600", "/set colour blue", "/on farm-host", "/settings",
        "/name two words", "/name hen-keeper",
        "collect the eggs" }) do
        sleep(0.1)
        os.queueEvent("paste", line)
        os.queueEvent("key", keys.enter)
    end
    os.pullEvent("ccagent_task")
    sleep(0.1)
    os.queueEvent("paste", "/quit")
    os.queueEvent("key", keys.enter)
end)
`;

const OFFER = {
  task_kinds: ['general_agent', 'code_job', 'chat'],
  models: ['qwen3:8b', 'qwen3:1.7b'],
  model_roles: { general_agent: ['native'], code_job: ['planner', 'executor'], chat: ['chat'] },
};

describe.skipIf(!craftos)('settings from the ccagent terminal program in CraftOS', () => {
  it('creates the task with the kind, model, temperature and budgets picked from the offer, on the chosen computer', async () => {
    const s = await Scenario.start({ offer: OFFER });
    try {
      const c = s.boot(SETTINGS, { args: [s.server.url] });
      const ct = await s.server.waitFor<CreateTask>((m) => m.type === 'create_task', 20_000);
      expect(ct).toMatchObject({
        prompt: 'collect the eggs',
        name: 'hen-keeper',
        task_kind: 'code_job',
        client_id: 'farm-host',
        allowed_commands: [],
        settings: {
          models: { planner: 'qwen3:1.7b', executor: 'qwen3:1.7b' },
          temperature: 0.3,
          budgets: { max_steps: 12, deadline_ms: 600_000 },
        },
      });
      expect((await c.exited).code).toBe(0);
      const screen = screenText(c);
      expect(screen).toContain('2 code_job');
      expect(screen).toContain("no model 'nope' on this server");
      expect(screen).toContain('usage: /set');
      expect(screen).toContain('usage: /name');
      expect(screen).toContain('kind code_job on farm-host');
    } finally {
      expect(await s.end()).toEqual([]);
    }
  });
});

describe.skipIf(!craftos)('the ccagent terminal program in CraftOS', () => {
  let s: Scenario;
  beforeEach(async () => {
    s = await Scenario.start();
  });
  afterEach(async () => {
    expect(await s.end()).toEqual([]);
  });

  /** Plays the orchestrator's side of one task with a question; returns the task id. */
  const playTask = async (): Promise<{ ct: CreateTask; taskId: string }> => {
    const ct = await s.server.waitFor<CreateTask>((m) => m.type === 'create_task');
    const taskId = s.server.tasks.get(ct.request_id)!;
    s.server.send({ type: 'task_update', task_id: taskId, status: 'running', message: 'planning the walls' });
    s.server.send({ type: 'ask_user', task_id: taskId, question_id: 'q-7', question: 'Which wood?' });
    const answer = await s.server.waitFor((m) => m.type === 'user_answer');
    expect(answer).toEqual({ type: 'user_answer', task_id: taskId, question_id: 'q-7', text: 'oak wood' });
    s.server.send({
      type: 'task_completed',
      task_id: taskId,
      result: { message: 'house built at 10,64,-3' },
    });
    return { ct, taskId };
  };

  it('typing a task creates it; the question is answered by the next line; status shows live', async () => {
    const c = s.boot(STANDALONE, { args: [s.server.url] });
    const hello = await s.server.hello();
    expect(hello.client_id).toBe('ui-test');
    expect(hello.commands.map((x) => x.name)).toContain('fs_write'); // it serves the tools while it runs
    const { ct, taskId } = await playTask();
    expect(ct).toMatchObject({ prompt: 'build a tiny house', task_kind: 'code_job', client_id: 'ui-test' });
    // `/msg <id prefix> text` sends a follow-up to the finished task (which continues it)
    const follow = await s.server.waitFor((m) => m.type === 'task_message');
    expect(follow).toMatchObject({ type: 'task_message', task_id: taskId, text: 'now add a door' });
    expect(ct.allowed_commands).toContain('run_program');
    expect((await c.exited).code).toBe(0); // /quit leaves cleanly
    const screen = screenText(c);
    expect(screen).toContain('planning the walls');
    expect(screen).toContain('Which wood?');
    expect(screen).toContain('house built at 10,64,-3');
    expect(screen).toContain('completed');
  });

  it('a chat task’s reply appears as it streams (task_update.delta), once, not again when the task completes (guards: a chat reply only seen whole)', async () => {
    const c = s.boot(CHAT, { args: [s.server.url] });
    await s.server.hello();
    const ct = await s.server.waitFor<CreateTask>((m) => m.type === 'create_task');
    expect(ct).toMatchObject({ prompt: 'what is a turtle?', task_kind: 'chat' });
    const taskId = s.server.tasks.get(ct.request_id)!;
    s.server.send({ type: 'task_update', task_id: taskId, status: 'running' });
    for (const delta of ['A turtle is ', 'a small robot ', 'that digs.']) {
      s.server.send({ type: 'task_update', task_id: taskId, status: 'running', delta });
    }
    // On the screen while the task still runs (before any result could show it).
    const end = Date.now() + 5000;
    while (!screenText(c).includes('A turtle is a small robot that digs.') && Date.now() < end) {
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(screenText(c)).toContain('A turtle is a small robot that digs.');
    s.server.send({
      type: 'task_completed',
      task_id: taskId,
      result: { message: 'A turtle is a small robot that digs.', iterations: 1 },
    });
    expect((await c.exited).code).toBe(0);
    const screen = screenText(c);
    expect(screen.split('A turtle is a small robot that digs.')).toHaveLength(2); // shown exactly once
    expect(screen).toContain('completed');
  });

  it('uses the running ccagent-host connection instead of opening a rival one', async () => {
    const c = s.boot(ATTACHED, { args: [s.server.url] });
    await s.server.hello();
    const { ct } = await playTask();
    expect(ct.client_id).toBe('host-1');
    expect((await c.exited).code).toBe(0);
    expect(s.server.connections).toBe(1);
    expect(s.server.received.filter((m) => m.type === 'hello')).toHaveLength(1);
  });
});
