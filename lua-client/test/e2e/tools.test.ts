// End to end: a tool the model writes on the CC computer. A native tool-calling task creates it as a draft,
// tests it and activates it through the host's commands; a later task calls it as a command of its own. The
// orchestrator sees each lifecycle state through the client's tools_update.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { FakeChatRequest } from '@ccagent/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootDriver, driverResult } from './driver.js';
import { MODELS, Stack, craftos } from './stack.js';

interface ToolRow {
  client_id: string;
  name: string;
  status: string;
  version: number;
  description?: string;
}

const GREET = {
  name: 'greet',
  description: 'Greet someone by name',
  code: 'return function(args)\n  return { greeting = "hello " .. args.who }\nend\n',
  args_schema: { type: 'object', properties: { who: { type: 'string' } }, required: ['who'] },
};

type Msg = { role: string; content: string };
const messagesOf = (req: FakeChatRequest) => req.body.messages as Msg[];
const toolNames = (req: FakeChatRequest) =>
  ((req.body.tools ?? []) as Array<{ function: { name: string } }>).map((t) => t.function.name);

describe.skipIf(!craftos)('end to end: a model-written tool', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await Stack.start();
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('is created as draft, tested and activated by one task, then called as a command by a later task', async () => {
    // What GET /api/tools said when each model request arrived (after the previous command's result).
    const seenAt: Array<{ task: string; results: number; tools: Promise<{ tools: ToolRow[] }> }> = [];
    const requests: FakeChatRequest[] = [];
    stack.fake.script(MODELS.native, (req) => {
      requests.push(req);
      const msgs = messagesOf(req);
      const results = msgs.filter((m) => m.role === 'tool');
      const task = msgs.find((m) => m.role === 'user')?.content ?? '';
      seenAt.push({ task, results: results.length, tools: stack.get('/api/tools?client=e2e-tools') });
      if (task.startsWith('Make')) {
        switch (results.length) {
          case 0:
            return { toolCalls: [{ name: 'tool_create', arguments: GREET }] };
          case 1:
            return {
              toolCalls: [{ name: 'tool_test', arguments: { name: 'greet', args: { who: 'tester' } } }],
            };
          case 2:
            return {
              toolCalls: [{ name: 'tool_set_status', arguments: { name: 'greet', status: 'active' } }],
            };
          default:
            return 'greet is active.';
        }
      }
      if (results.length === 0) return { toolCalls: [{ name: 'greet', arguments: { who: 'world' } }] };
      return `The greet tool answered: ${results[0]?.content ?? '(nothing)'}`;
    });

    const c = bootDriver({
      url: stack.wsUrl,
      client_id: 'e2e-tools',
      tasks: [
        { kind: 'general_agent', prompt: 'Make a tool called greet.' },
        { kind: 'general_agent', prompt: 'Greet the world with your greet tool.' },
      ],
    });
    const out = await driverResult(c);
    const [make, use] = out.tasks;
    expect(make?.status, JSON.stringify(make)).toBe('completed');
    expect(use?.status, JSON.stringify(use)).toBe('completed');
    expect(out.errors).toEqual([]);
    expect(out.problems).toEqual([]);

    // Lifecycle as the orchestrator recorded it from tools_update, step by step.
    const states = await Promise.all(
      seenAt.map(async (s) => ({
        task: s.task.slice(0, 5),
        results: s.results,
        greet: (await s.tools).tools.map((t) => `${t.name}:${t.status}:v${t.version}`),
      })),
    );
    expect(states).toEqual([
      { task: 'Make ', results: 0, greet: [] },
      { task: 'Make ', results: 1, greet: ['greet:draft:v1'] },
      { task: 'Make ', results: 2, greet: ['greet:test:v1'] },
      { task: 'Make ', results: 3, greet: ['greet:active:v1'] },
      { task: 'Greet', results: 0, greet: ['greet:active:v1'] },
      { task: 'Greet', results: 1, greet: ['greet:active:v1'] },
    ]);

    // Only an active tool is offered: the first task's model never saw greet, the later one did.
    expect(toolNames(requests[0]!)).not.toContain('greet');
    expect(toolNames(requests[3]!)).not.toContain('greet'); // this task's commands were fixed at creation
    expect(toolNames(requests[4]!)).toContain('greet');
    const offered = (requests[4]!.body.tools as Array<{ function: Record<string, unknown> }>).find(
      (t) => t.function.name === 'greet',
    );
    expect(offered?.function).toMatchObject({
      description: GREET.description,
      parameters: GREET.args_schema,
    });

    // The test run and the later call really ran the model's code on the computer.
    const made = await stack.task(make!.id!);
    expect(made.command_calls.map((x) => [x.command, x.status])).toEqual([
      ['tool_create', 'succeeded'],
      ['tool_test', 'succeeded'],
      ['tool_set_status', 'succeeded'],
    ]);
    expect(made.command_calls[1]?.outcome?.result).toMatchObject({
      ok: true,
      status: 'test',
      result: { greeting: 'hello tester' },
    });
    const used = await stack.task(use!.id!);
    expect(used.command_calls).toEqual([
      expect.objectContaining({
        command: 'greet',
        args: { who: 'world' },
        status: 'succeeded',
        outcome: { ok: true, result: { greeting: 'hello world' } },
      }),
    ]);
    expect(use?.result).toMatchObject({
      message: 'The greet tool answered: {"greeting":"hello world"}',
    });

    // The store and the computer agree on the final state.
    const { tools } = await stack.get<{ tools: ToolRow[] }>('/api/tools?status=active');
    expect(tools).toEqual([
      expect.objectContaining({
        client_id: 'e2e-tools',
        name: 'greet',
        status: 'active',
        version: 1,
        description: GREET.description,
      }),
    ]);
    const { clients } = await stack.get<{
      clients: Array<{ client_id: string; commands: Array<{ name: string }> }>;
    }>('/api/clients');
    const me = clients.find((x) => x.client_id === 'e2e-tools');
    expect(me?.commands.map((x) => x.name)).toContain('greet');
    expect(out.tools).toEqual([expect.objectContaining({ name: 'greet', status: 'active', version: 1 })]);
    expect(readFileSync(path.join(c.disk, 'tools', 'greet.lua'), 'utf8')).toBe(GREET.code);
  });
});
