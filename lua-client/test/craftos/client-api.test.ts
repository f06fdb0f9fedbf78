// The library API as a CC program uses it (create_task with a callback, the tasks table, ccagent_* events,
// answer()), inside parallel with other code, against the scripted orchestrator.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { ClientMessage } from '@ccagent/protocol';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PRELUDE } from './craftos.js';
import { Scenario, craftos } from './scenario.js';

type CreateTask = Extract<ClientMessage, { type: 'create_task' }>;

// Creates one task, answers its question through the API, records what it saw in /out.json, then stops.
const APP = `${PRELUDE}
local ccagent = require "ccagent"
local url = ...
local client = ccagent.connect(url, { client_id = "api-test" })
local seen, created, ticks = {}, nil, 0
local function app()
    local ev, state = os.pullEvent("ccagent_connection")
    seen[#seen + 1] = ev .. " " .. state
    client:create_task({
        prompt = "paint the house", context = { colour = "blue", options = {} },
        on_created = function(id, status, message) created = { id = id, status = status, message = message } end,
    })
    while true do
        local e, a, b, c, d = os.pullEvent()
        if e == "ccagent_task" then
            seen[#seen + 1] = "task " .. a .. " " .. b
            if b == "completed" or b == "failed" then break end
        elseif e == "ccagent_question" then
            seen[#seen + 1] = "question " .. c .. " / " .. tostring(d)
            client:answer(b, "blue please")
        end
    end
    local t = client.tasks[created.id]
    local h = fs.open("/out.json", "w")
    h.write(ccagent.json.encode({ created = created, seen = seen, status = t.status, result = t.result,
        error = t.error, progress = t.progress, ticks = ticks }))
    h.close()
    client:stop()
end
-- a busy neighbour: run() must share the computer, not starve it
local function ticker() while true do ticks = ticks + 1 sleep(0.05) end end
parallel.waitForAny(function() client:run() end, app, ticker)
`;

const REFUSED = `${PRELUDE}
local ccagent = require "ccagent"
local client = ccagent.connect(..., { client_id = "api-test" })
parallel.waitForAny(function() client:run() end, function()
    os.pullEvent("ccagent_connection")
    local got
    client:create_task({ prompt = "x", kind = "no_such_kind", on_created = function(...) got = table.pack(...) end })
    repeat os.pullEvent("ccagent_error") until got
    local h = fs.open("/out.json", "w")
    h.write(ccagent.json.encode({ task_id_is_nil = got[1] == nil, code = got[2], message = got[3] }))
    h.close()
end)
`;

// Follows one task to its end, then — after the orchestrator dropped and the client came back — records what the
// replay of that end announces, until the marker task shows up.
const REPLAY = `${PRELUDE}
local ccagent = require "ccagent"
local client = ccagent.connect(..., { client_id = "api-test", reconnect_min = 0.1, reconnect_max = 0.2 })
local seen, fired, id = {}, 0, nil
parallel.waitForAny(function() client:run() end, function()
    os.pullEvent("ccagent_connection")
    client:create_task({ prompt = "x", on_created = function(tid) fired = fired + 1 id = tid end })
    while true do
        local e, a, b = os.pullEvent()
        if e == "ccagent_task" then
            seen[#seen + 1] = "task " .. a .. " " .. b
            if a == "marker" then break end
        elseif e == "ccagent_connection" then
            seen[#seen + 1] = "connection " .. a
        end
    end
    local t = client.tasks[id]
    local h = fs.open("/out.json", "w")
    h.write(ccagent.json.encode({ seen = seen, fired = fired, status = t.status, result = t.result,
        message = t.message }))
    h.close()
end)
`;

describe.skipIf(!craftos)('client library API in CraftOS', () => {
  let s: Scenario;
  afterEach(async () => {
    expect(await s.end()).toEqual([]);
  });

  describe('with tasks accepted', () => {
    beforeEach(async () => {
      s = await Scenario.start();
    });

    it('creates a task, follows it, answers ask_user via answer() and gets a chunked >128 KiB result', async () => {
      const c = s.boot(APP, { args: [s.server.url] });
      await s.server.hello();
      const ct = await s.server.waitFor<CreateTask>((m) => m.type === 'create_task');
      expect(ct).toMatchObject({
        prompt: 'paint the house',
        task_kind: 'general_agent',
        client_id: 'api-test',
        context: { colour: 'blue', options: {} }, // an empty Lua table stays an object
        allowed_commands: [], // nothing registered: [] not {}
      });
      const taskId = s.server.tasks.get(ct.request_id)!;
      s.server.send({
        type: 'task_update',
        task_id: taskId,
        status: 'running',
        progress: 0.25,
        message: 'mixing',
      });
      s.server.send({
        type: 'ask_user',
        task_id: taskId,
        question_id: 'q-1',
        question: 'Which colour?',
        why: 'two tins',
      });
      const answer = await s.server.waitFor((m) => m.type === 'user_answer');
      expect(answer).toEqual({
        type: 'user_answer',
        task_id: taskId,
        question_id: 'q-1',
        text: 'blue please',
      });
      const report = 'ünïcødé ✓ '.repeat(20_000); // ~300 KiB: arrives as protocol chunk frames
      s.server.send({ type: 'task_completed', task_id: taskId, result: { summary: 'painted', report } });
      const exit = await c.exited;
      expect(exit.code).toBe(0);
      const out = JSON.parse(readFileSync(path.join(c.disk, 'out.json'), 'utf8')) as Record<string, unknown>;
      expect(out.created).toEqual({ id: taskId, status: 'queued' });
      expect(out.seen).toEqual([
        'ccagent_connection connected',
        `task ${taskId} queued`,
        `task ${taskId} running`,
        'question Which colour? / two tins',
        `task ${taskId} completed`,
      ]);
      expect(out.status).toBe('completed');
      expect(out.result).toEqual({ summary: 'painted', report });
      expect(out.ticks).toBeGreaterThan(0); // the neighbour coroutine kept running
    });
  });

  describe('after a reconnect', () => {
    beforeEach(async () => {
      s = await Scenario.start();
    });

    it('a replayed task end (task_update + task_completed) and a stale update are not announced again; the entry keeps the first result', async () => {
      // guards: the orchestrator replays the current state of a returning client's tasks after welcome; a client
      // that already saw the end fired ccagent_task "completed" a second time and overwrote the result
      const c = s.boot(REPLAY, { args: [s.server.url] });
      await s.server.hello();
      const ct = await s.server.waitFor<CreateTask>((m) => m.type === 'create_task');
      const taskId = s.server.tasks.get(ct.request_id)!;
      s.server.send({ type: 'task_update', task_id: taskId, status: 'running' });
      s.server.send({
        type: 'task_update',
        task_id: taskId,
        status: 'completed',
        progress: 1,
        message: 'done',
      });
      s.server.send({ type: 'task_completed', task_id: taskId, result: { n: 1 } });
      // The pong proves the computer handled everything sent before the ping.
      const from = s.server.received.length;
      s.server.send({ type: 'ping', id: 'sync-1' });
      await s.server.waitFor((m) => m.type === 'pong', 15_000, from);
      s.server.drop();
      await s.server.hello(2);
      s.server.send({
        type: 'task_update',
        task_id: taskId,
        status: 'completed',
        progress: 1,
        message: 'replayed',
      });
      s.server.send({ type: 'task_completed', task_id: taskId, result: { n: 2 } });
      s.server.send({ type: 'task_update', task_id: taskId, status: 'running', message: 'stale' });
      s.server.send({ type: 'task_update', task_id: 'marker', status: 'running' });
      expect((await c.exited).code).toBe(0);
      const out = JSON.parse(readFileSync(path.join(c.disk, 'out.json'), 'utf8')) as Record<string, unknown>;
      expect(out).toEqual({
        seen: [
          `task ${taskId} queued`,
          `task ${taskId} running`,
          `task ${taskId} completed`,
          'connection disconnected',
          'connection connected',
          'task marker running',
        ],
        fired: 1,
        status: 'completed',
        result: { n: 1 },
        message: 'done',
      });
    });
  });

  describe('with tasks refused', () => {
    beforeEach(async () => {
      s = await Scenario.start({ autoCreate: false });
    });

    it('a refused create_task reaches the callback as (nil, code, message)', async () => {
      const c = s.boot(REFUSED, { args: [s.server.url] });
      const ct = await s.server.waitFor<CreateTask>((m) => m.type === 'create_task');
      expect(ct.task_kind).toBe('no_such_kind');
      s.server.send({
        type: 'error',
        code: 'not_found',
        message: 'unknown task kind',
        request_id: ct.request_id,
      });
      expect((await c.exited).code).toBe(0);
      const out = JSON.parse(readFileSync(path.join(c.disk, 'out.json'), 'utf8')) as unknown;
      expect(out).toEqual({ task_id_is_nil: true, code: 'not_found', message: 'unknown task kind' });
    });
  });
});
