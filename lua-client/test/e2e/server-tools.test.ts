// End to end (seed 004): server-side tools beside a real CraftOS-PC computer's commands. The built orchestrator
// loads docs/tools.md's dice module and a slow tool from its config; a native task and a planner/executor task each
// call server tools and the computer's commands in one run, the slow tool ends at its own timeout, the task kind's
// allow-list keeps a server tool from the planner, and every call is in the task's record like a computer's.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FakeChatRequest } from '@ccagent/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootDriver, driverResult } from './driver.js';
import { MODELS, Stack, craftos } from './stack.js';

type Msg = { role: string; content: string };
const messagesOf = (req: FakeChatRequest) => req.body.messages as Msg[];
const toolNames = (req: FakeChatRequest) =>
  ((req.body.tools ?? []) as Array<{ function: { name: string } }>).map((t) => t.function.name);

const DOC = readFileSync(fileURLToPath(new URL('../../../docs/tools.md', import.meta.url)), 'utf8');
const DICE = /```ts\n(\/\/ example: dice\.ts\n[\s\S]*?)```/.exec(DOC)?.[1];
const SLOW = `export default {
  name: 'slow_lookup',
  description: 'Looks something up (slowly).',
  parameters: { type: 'object', properties: {} },
  timeoutSeconds: 0.5,
  execute: (_args, ctx) => new Promise((resolve) => ctx.signal.addEventListener('abort', () => resolve('late'))),
};
`;
const CC = ['shell_exec', 'fs_list', 'fs_read', 'fs_write', 'fs_delete', 'fs_move', 'run_program'];

describe.skipIf(!craftos)('end to end: server-side tools with a CraftOS-PC computer', () => {
  let stack: Stack;
  const dir = mkdtempSync(path.join(tmpdir(), 'ccagent-e2e-tools-'));
  beforeAll(async () => {
    if (!DICE) throw new Error('docs/tools.md has no dice.ts example');
    writeFileSync(path.join(dir, 'dice.ts'), DICE);
    writeFileSync(path.join(dir, 'slow.mjs'), SLOW);
    stack = await Stack.start({
      config: {
        serverTools: { modules: [path.join(dir, 'dice.ts'), path.join(dir, 'slow.mjs')] },
        taskKinds: {
          tool_job: {
            strategy: 'planner_executor',
            executorMode: 'parser',
            // get_time is the only server tool this kind may call
            allowedCommands: [...CC, 'get_time'],
            budgets: { maxSteps: 20 },
          },
        },
      },
    });
  });
  afterAll(async () => {
    await stack?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a native task calls server tools and the computer’s commands; the slow tool ends at its timeout', async () => {
    const requests: FakeChatRequest[] = [];
    stack.fake.script(MODELS.native, (req) => {
      requests.push(req);
      const results = messagesOf(req).filter((m) => m.role === 'tool');
      switch (results.length) {
        case 0:
          return { toolCalls: [{ name: 'roll_dice', arguments: { count: 2 } }] };
        case 1: {
          const roll = JSON.parse(results[0]?.content ?? '{}') as { total?: number };
          return {
            toolCalls: [{ name: 'fs_write', arguments: { path: 'roll.txt', content: String(roll.total) } }],
          };
        }
        case 2:
          return { toolCalls: [{ name: 'slow_lookup', arguments: {} }] };
        default:
          return `Rolled and saved; the lookup said ${results[2]?.content ?? ''}`;
      }
    });
    const c = bootDriver({
      url: stack.wsUrl,
      client_id: 'e2e-server-tools',
      tasks: [{ kind: 'general_agent', prompt: 'Roll two dice and save the total in roll.txt.' }],
    });
    const out = await driverResult(c);
    const [seen] = out.tasks;
    expect(seen?.status, `${JSON.stringify(seen)}\n${stack.output()}`).toBe('completed');
    // the stock host offers nothing named like a server tool: no refusal at its hello
    expect(out.errors).toEqual([]);

    // offered together: the server's tools (built-ins and the config's modules) and the computer's commands
    const offered = toolNames(requests[0]!);
    for (const n of [
      'echo',
      'get_time',
      'get_system_info',
      'roll_dice',
      'slow_lookup',
      'fs_write',
      'computer_info',
    ])
      expect(offered).toContain(n);
    const dice = (requests[0]!.body.tools as Array<{ function: Record<string, unknown> }>).find(
      (t) => t.function.name === 'roll_dice',
    );
    expect(dice?.function.parameters).toMatchObject({ properties: { sides: { enum: [4, 6, 8, 12, 20] } } });

    const detail = await stack.task(seen!.id!);
    const calls = detail.command_calls.map((x) => ({
      command: x.command,
      status: x.status,
      outcome: x.outcome,
    }));
    expect(calls.map((x) => x.command)).toEqual(['roll_dice', 'fs_write', 'slow_lookup']);
    const roll = calls[0]!.outcome?.result as { sides: number; faces: number[]; total: number };
    expect(calls[0]!.status).toBe('succeeded');
    expect(roll.sides).toBe(6); // the schema's default, filled in before execute
    expect(roll.faces).toHaveLength(2);
    // the computer wrote what the server tool returned
    expect(calls[1]!.status).toBe('succeeded');
    expect(readFileSync(path.join(c.disk, 'roll.txt'), 'utf8')).toBe(String(roll.total));
    // the tool's own 0.5 s timeout, however long the call may otherwise take
    expect(calls[2]!.outcome?.ok).toBe(false);
    expect(calls[2]!.outcome?.error).toMatchObject({ code: 'timeout' });
    expect(['failed', 'timed_out']).toContain(calls[2]!.status);
    // recorded like the computer's calls: a tool_call before each tool_result in the history, and the step log
    const order = detail.history
      .filter((h) => h.type === 'tool_call' || h.type === 'tool_result')
      .map((h) => h.type);
    expect(order).toEqual([
      'tool_call',
      'tool_result',
      'tool_call',
      'tool_result',
      'tool_call',
      'tool_result',
    ]);
    const logged = detail.steps
      .filter((s) => s.kind === 'tool_result')
      .map((s) => (s.tool_call as { command: string }).command);
    expect(logged).toEqual(['roll_dice', 'fs_write', 'slow_lookup']);
    expect(String(seen?.result?.message)).toContain('timed out');
  });

  it('a planner/executor task calls a server tool with TOOL, refused one its kind does not allow, and works on the computer', async () => {
    const planner: FakeChatRequest[] = [];
    stack.fake.script(MODELS.planner, (req) => {
      // only the planner's own calls (not a model check the server makes)
      if (!messagesOf(req)[0]?.content.startsWith('You are the PLANNER')) return 'ok';
      planner.push(req);
      switch (planner.length) {
        case 1:
          return 'PLAN:\n1. ask the server the time\n2. write and run the program\nTOOL\nNAME: roll_dice\nARGS: {}';
        case 2:
          return 'TOOL\nNAME: get_time\nARGS: {"format": "timestamp"}';
        case 3:
          return 'WRITE_FILE\nPATH: stamp.lua\nLANGUAGE: lua\nCONTENT:\n```lua\nprint("stamp ok")\n```\nTHEN:\n- stamp.lua';
        default:
          return 'DONE\nSUMMARY: stamp.lua ran and printed "stamp ok".\nNOTES: none';
      }
    });
    const c = bootDriver({
      url: stack.wsUrl,
      client_id: 'e2e-server-tools-2',
      tasks: [{ kind: 'tool_job', prompt: 'Ask the server for the time, then write stamp.lua and run it.' }],
    });
    const out = await driverResult(c);
    const [seen] = out.tasks;
    expect(seen?.status, `${JSON.stringify(seen)}\n${stack.output()}`).toBe('completed');

    // the planner is shown the server tools its kind allows, and only those
    const system = messagesOf(planner[0]!)[0]?.content ?? '';
    expect(system).toContain('TOOL\nNAME: <tool name>');
    expect(system).toMatch(/^- get_time: /m);
    expect(system).not.toMatch(/^- roll_dice/m);
    // roll_dice was bounced back to the planner, never run
    const second = messagesOf(planner[1]!)
      .map((m) => m.content)
      .join('\n');
    expect(second).toContain(
      '"roll_dice" is not a server tool this task may call (the server tools: get_time)',
    );

    const detail = await stack.task(seen!.id!);
    expect(detail.command_calls.map((x) => [x.command, x.status])).toEqual([
      ['fs_read', 'failed'], // the planner loop first reads the file the task names (not there yet)
      ['get_time', 'succeeded'],
      ['fs_write', 'succeeded'],
      ['run_program', 'succeeded'],
    ]);
    const time = detail.command_calls[1]!.outcome?.result as { format: string; time: number };
    expect(time.format).toBe('timestamp');
    expect(Math.abs(time.time - Date.now() / 1000)).toBeLessThan(120);
    expect(detail.command_calls[1]!.args).toEqual({ format: 'timestamp' });
    // the planner read the server's answer in HISTORY on its next turn
    const third = messagesOf(planner[2]!)
      .map((m) => m.content)
      .join('\n');
    expect(third).toContain(String(time.time));
    expect(
      detail.steps.some((s) => s.kind === 'policy' && (s.error as { code?: string })?.code === 'not_allowed'),
    ).toBe(true);
  });
});
