// End to end: cancelling a task reaches the CC computer. A native task runs a program that never ends by itself on a
// real CraftOS-PC computer; `POST /api/tasks/:id/cancel` on the built orchestrator sends `command_cancel`, the host
// terminates the program's coroutine (as CC's own `terminate` would) and answers once. The loop stops within a
// second, the task is `cancelled`, and nothing runs afterwards: no further tick of the program, no model call.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootDriver, driverResult } from './driver.js';
import { waitFor } from './programs.js';
import { MODELS, Stack, craftos } from './stack.js';

/** Counts forever: writes the tick number to /ticks.txt every 50 ms. */
const LOOP = `local n = 0
while true do
  n = n + 1
  local h = fs.open("/ticks.txt", "w") h.write(tostring(n)) h.close()
  sleep(0.05)
end
`;

describe.skipIf(!craftos)('end to end: cancel reaches the computer', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await Stack.start();
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('cancelling a task stops its endless program on the CC computer within a second; nothing runs afterwards', async () => {
    stack.fake.script(MODELS.native, [
      { toolCalls: [{ name: 'run_program', arguments: { path: 'loop.lua' } }] },
      'should never be asked',
    ]);
    const c = bootDriver(
      {
        url: stack.wsUrl,
        client_id: 'e2e-cancel',
        tasks: [{ kind: 'general_agent', prompt: 'Run loop.lua.' }],
      },
      { files: { 'loop.lua': LOOP } },
    );
    const ticksFile = path.join(c.disk, 'ticks.txt');
    const ticks = (): number => {
      try {
        return Number(readFileSync(ticksFile, 'utf8'));
      } catch {
        return 0;
      }
    };
    await waitFor('loop.lua to tick', () => ticks() > 5);
    const [task] = (await stack.get<{ tasks: Array<{ id: string; status: string }> }>('/api/tasks')).tasks;
    expect(task?.status).toBe('waiting_for_command');

    const cancelledAt = Date.now();
    const res = await stack.post(`/api/tasks/${task!.id}/cancel`, { reason: 'stop it' });
    expect(res.status).toBe(200);
    // stopped: the tick count no longer moves (checked over 4 loop periods)
    let last = ticks();
    let stable = 0;
    await waitFor('the loop to stop', () => {
      const now = ticks();
      stable = now === last ? stable + 1 : 0;
      last = now;
      return stable >= 4;
    });
    const stoppedMs = Date.now() - cancelledAt - 4 * 50;
    expect(stoppedMs).toBeLessThan(1000);
    const frozen = ticks();
    await new Promise((r) => setTimeout(r, 1000));
    expect(ticks()).toBe(frozen); // nothing of the program runs afterwards

    const out = await driverResult(c);
    expect(out.tasks[0]?.status).toBe('cancelled');
    expect(out.errors).toEqual([]); // the host's answer to the cancel was acknowledged, not refused
    const detail = await stack.task(task!.id);
    expect(detail.task.status).toBe('cancelled');
    expect(detail.command_calls).toEqual([
      expect.objectContaining({ status: 'cancelled', dispatch_count: 1 }),
    ]);
    expect(stack.fake.chatRequests(MODELS.native)).toHaveLength(1); // no model step after the cancel
    console.log(`[e2e cancel] loop stopped within ${stoppedMs} ms of the cancel request`);
  });
});
