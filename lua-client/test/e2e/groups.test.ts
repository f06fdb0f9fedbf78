// End to end (issue 35, item 4): a player's computers work together. Two real CC computers (CraftOS-PC) of one
// named group on the built orchestrator: the pocket-style computer creates a task that runs on the agent host, with
// its own settings, and follows it to the end; a third computer outside the group is refused and nothing is
// created for it. No crossClientAccess anywhere.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { FakeChatRequest } from '@ccagent/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootDriver, driverResult } from './driver.js';
import { waitFor } from './programs.js';
import { MODELS, Stack, craftos } from './stack.js';

type Msg = { role: string; content: string };

describe.skipIf(!craftos)('end to end: computers of one group', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await Stack.start({
      config: { server: { groups: { named: { base: ['e2e-host', 'e2e-pocket'] } } } },
    });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('a pocket computer starts a job on the agent host and follows it; a computer outside the group is refused', async () => {
    const requests: FakeChatRequest[] = [];
    stack.fake.script(MODELS.native, (req) => {
      requests.push(req);
      const results = (req.body.messages as Msg[]).filter((m) => m.role === 'tool');
      if (results.length === 0) {
        return {
          toolCalls: [{ name: 'fs_write', arguments: { path: 'harvest.txt', content: 'wheat: 64' } }],
        };
      }
      return 'Wrote the harvest report on the host.';
    });

    const host = bootDriver({ url: stack.wsUrl, client_id: 'e2e-host', tasks: [], stay_until_file: '/stop' });
    // The host is connected before the pocket asks for work on it (else the first call finds no client there).
    await stack.until(
      'the host connected',
      () => stack.get<{ clients: Array<{ client_id: string; connected: boolean }> }>('/api/clients'),
      (r) => r.clients.some((c) => c.client_id === 'e2e-host' && c.connected),
    );
    const pocket = bootDriver({
      url: stack.wsUrl,
      client_id: 'e2e-pocket',
      tasks: [
        {
          kind: 'general_agent',
          prompt: 'Write the harvest report on the host.',
          target: 'e2e-host',
          settings: { temperature: 0.2, budgets: { max_steps: 5 } },
        },
        // above the operator's maximum: refused with the field named, nothing created
        {
          kind: 'general_agent',
          prompt: 'Too big.',
          target: 'e2e-host',
          settings: { budgets: { max_steps: 1e9 } },
        },
      ],
    });
    const out = await driverResult(pocket);
    const [job, tooBig] = out.tasks;
    expect(job?.status, JSON.stringify(job)).toBe('completed');
    expect(job?.statuses).toEqual(expect.arrayContaining(['queued', 'running', 'completed']));
    expect(tooBig?.refused?.code).toBe('forbidden');
    expect(tooBig?.refused?.message).toMatch(/max_steps/);

    // it ran on the host: the file is on the host's disk, not the pocket's
    await waitFor('harvest.txt on the host', () => existsSync(path.join(host.disk, 'harvest.txt')));
    expect(readFileSync(path.join(host.disk, 'harvest.txt'), 'utf8')).toBe('wheat: 64');
    expect(existsSync(path.join(pocket.disk, 'harvest.txt'))).toBe(false);
    const detail = await stack.task(job!.id!);
    expect(detail.task).toMatchObject({
      client_id: 'e2e-host',
      status: 'completed',
      settings: { temperature: 0.2, budgets: { max_steps: 5 } },
    });
    expect(detail.command_calls.map((c) => c.command)).toEqual(['fs_write']);
    expect((requests[0]?.body.options as { temperature?: number } | undefined)?.temperature).toBe(0.2);

    const before = (await stack.get<{ total: number }>('/api/tasks')).total;
    const stranger = bootDriver({
      url: stack.wsUrl,
      client_id: 'e2e-stranger',
      tasks: [{ kind: 'general_agent', prompt: 'Take over the host.', target: 'e2e-host' }],
    });
    const sOut = await driverResult(stranger);
    expect(sOut.tasks[0]?.refused?.code).toBe('forbidden');
    expect(sOut.tasks[0]?.refused?.message).toMatch(/group/);
    expect((await stack.get<{ total: number }>('/api/tasks')).total).toBe(before);

    writeFileSync(path.join(host.disk, 'stop'), '');
    const hOut = await driverResult(host);
    expect(hOut.errors).toEqual([]);
  });
});
