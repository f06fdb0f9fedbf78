// End to end: the screen mirror switched at the server, and a running program's output in it (issue 36 item 3), on a
// real CC computer (CraftOS-PC) and the built orchestrator. The host has no screen setting of its own: nothing is
// mirrored until an operator switches it on over HTTP, which reaches the running host (no reboot). A task then runs
// a program (`run_program`) that prints known text: the server's snapshot shows it while it runs (the mirror shows
// the capture window), the task still gets the output, and the screen comes back after. Switched off, the host stops
// mirroring (the server refuses nothing: the host stopped sending) and the server holds no screen.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PRELUDE, startComputer } from '../craftos/craftos.js';
import { MODELS, Stack, craftos } from './stack.js';

const TOKEN = 'screen-switch-e2e';

const HOST = `${PRELUDE}
local url = ...
local session_mod = require "ccagent.session"
local session = session_mod.create({ ws_url = url, client_id = "switch-host", token = "${TOKEN}",
    state_dir = "/.ccagent/state" }, { shell = shell })
local function tick()
    local n = 0
    while not fs.exists("/stop") do
        n = n + 1
        term.setCursorPos(1, 1)
        term.setTextColour(colours.white)
        term.write(("tick %d   "):format(n))
        sleep(0.2)
    end
end
parallel.waitForAny(function() session_mod.run(session) end, tick)
`;

/** The program the task runs: orange text, then it waits until the test has seen it. */
const HELLO = `term.setTextColour(colours.orange)
print("PROGRAM SAYS HI")
while not fs.exists("/seen") do sleep(0.1) end
print("bye")
`;

interface Screen {
  width: number;
  height: number;
  frames: number;
  lines: { y: number; text: string; fg: string; bg: string }[];
}

describe.skipIf(!craftos)(
  'end to end: the screen switched at the server, and program output mirrored',
  () => {
    let stack: Stack;
    beforeAll(async () => {
      stack = await Stack.start({ token: TOKEN });
    });
    afterAll(async () => {
      await stack?.close();
    });

    const screen = async (): Promise<{ status: number; screen?: Screen }> => {
      const res = await fetch(`${stack.url}/api/clients/switch-host/screen`, {
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      return res.ok
        ? { status: 200, screen: ((await res.json()) as { screen: Screen }).screen }
        : { status: res.status };
    };
    const text = (s: { screen?: Screen }): string => s.screen?.lines.map((l) => l.text).join('\n') ?? '';

    it('is off without a word, on at the operator’s switch without a reboot, shows a program’s output, and off again', async () => {
      const host = startComputer(craftos!, HOST, {
        args: [stack.wsUrl],
        files: { 'hello.lua': HELLO },
        timeoutMs: 120_000,
      });
      try {
        await stack.until(
          'the host connected',
          () => stack.get<{ clients: { client_id: string; connected: boolean }[] }>('/api/clients'),
          (r) => r.clients.some((c) => c.client_id === 'switch-host' && c.connected),
          30_000,
        );
        // No word on either side: nothing is mirrored (the host draws all the time meanwhile).
        await new Promise((r) => setTimeout(r, 1500));
        expect((await screen()).status).toBe(404);

        const on = await stack.post('/api/clients/switch-host/screen/switch', { screen: true });
        expect(on).toMatchObject({ status: 200, body: { server: true } });
        await stack.until('the mirror started', screen, (s) => /tick \d+/.test(text(s)), 15_000);

        stack.fake.script(MODELS.native, [
          { toolCalls: [{ name: 'run_program', arguments: { path: 'hello.lua' } }] },
          'It printed a greeting.',
        ]);
        const created = await stack.post<{ task: { id: string } }>('/api/tasks', {
          task_kind: 'general_agent',
          prompt: 'Run hello.lua.',
          client_id: 'switch-host',
        });
        expect(created.status).toBe(201);
        const shown = await stack.until(
          "the program's output in the mirror",
          screen,
          (s) => text(s).includes('PROGRAM SAYS HI'),
          30_000,
        );
        const line = shown.screen!.lines.find((l) => l.text.startsWith('PROGRAM SAYS HI'))!;
        expect(line.fg.slice(0, 15)).toBe('1'.repeat(15)); // orange
        writeFileSync(path.join(host.disk, 'seen'), '');

        // The task still gets the program's output (the capture is unchanged), and the screen shows again.
        const done = await stack.until(
          'the task finished',
          () => stack.task(created.body.task.id),
          (d) => d.task.status === 'completed' || d.task.status === 'failed',
          30_000,
        );
        const run = done.command_calls.find((c) => c.command === 'run_program');
        expect(JSON.stringify(run?.outcome)).toContain('PROGRAM SAYS HI\\nbye');
        await stack.until(
          'the screen again',
          screen,
          (s) => /tick \d+/.test(text(s)) && !text(s).includes('PROGRAM SAYS HI'),
          15_000,
        );

        const off = await stack.post('/api/clients/switch-host/screen/switch', { screen: false });
        expect(off).toMatchObject({ status: 200, body: { server: false } });
        expect((await screen()).status).toBe(404);
        // The host stopped sending: nothing to refuse over the next second, and no screen is held.
        await new Promise((r) => setTimeout(r, 1000));
        expect(await stack.metric('ccagent_ws_errors_sent_total{code="forbidden"}')).toBe(0);
        expect((await screen()).status).toBe(404);
      } finally {
        writeFileSync(path.join(host.disk, 'stop'), '');
        await host.stop();
      }
    });
  },
);
