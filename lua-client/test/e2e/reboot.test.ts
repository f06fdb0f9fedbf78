// End to end: the CC computer dies in the middle of a command (a chunk unload, a server crash) and boots again with
// the same disk. Its durable call state answers the orchestrator's re-sent call with `interrupted` instead of
// running the program a second time; the model hears why and the task goes on to complete.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootDriver, driverResult } from './driver.js';
import { SLOW, read, waitFor } from './programs.js';
import { MODELS, Stack, craftos } from './stack.js';

describe.skipIf(!craftos)('end to end: CC computer killed mid-command', () => {
  let stack: Stack;
  let dataDir: string;
  beforeAll(async () => {
    stack = await Stack.start();
    dataDir = mkdtempSync(path.join(tmpdir(), 'ccagent-e2e-disk-'));
  });
  afterAll(async () => {
    await stack?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('after a reboot the call is reported as interrupted (never re-run) and the task completes', async () => {
    stack.fake.script(MODELS.native, (req) => {
      const tool = (req.body.messages as Array<{ role: string; content: string }>).find(
        (m) => m.role === 'tool',
      );
      if (!tool)
        return { toolCalls: [{ name: 'run_program', arguments: { path: 'slow.lua', args: ['d'] } }] };
      return `The run did not finish: ${tool.content}`;
    });
    const plan = { url: stack.wsUrl, client_id: 'e2e-reboot', reconnect_min: 0.2, reconnect_max: 1 };
    const first = bootDriver(
      { ...plan, tasks: [{ kind: 'general_agent', prompt: 'Run slow.lua d.' }] },
      { files: { 'slow.lua': SLOW }, dataDir },
    );
    const runs = path.join(first.disk, 'runs.log');
    await waitFor('slow.lua d to start', () => read(runs) === 'start d\n');
    const [task] = (await stack.get<{ tasks: Array<{ id: string; status: string }> }>('/api/tasks')).tasks;
    await first.stop(); // SIGKILL: the program never ends
    expect((await stack.task(task!.id)).task.status).toBe('waiting_for_command');

    // The same computer boots again and follows the task it created before.
    const second = bootDriver({ ...plan, tasks: [{ task_id: task!.id }] }, { dataDir });
    const out = await driverResult(second);
    const [seen] = out.tasks;
    expect(seen?.status, JSON.stringify(out)).toBe('completed');
    expect(out.errors).toEqual([]);
    expect(read(runs)).toBe('start d\n'); // not run again after the reboot

    const detail = await stack.task(task!.id);
    expect(detail.command_calls).toEqual([
      expect.objectContaining({
        command: 'run_program',
        status: 'failed',
        outcome: {
          ok: false,
          error: expect.objectContaining({ code: 'interrupted' }) as unknown,
        },
      }),
    ]);
    expect(String(seen?.result?.message)).toMatch(/^The run did not finish: .*interrupted/);
  });
});
