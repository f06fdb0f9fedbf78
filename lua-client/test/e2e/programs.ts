// Lua programs the end-to-end tests put on the CC computer, and host-side helpers to watch what they do.
import { existsSync, readFileSync } from 'node:fs';
import type { FakeChatRequest, FakeReply } from '@ccagent/testkit';

/**
 * `slow.lua <tag>`: logs "start <tag>" and "end <tag>" to /runs.log and waits in between for the file /go-<tag>,
 * which the test writes (into the computer's disk) when it wants the program to finish. Prints
 * "slow work <tag> done". The log shows how often it really ran.
 */
export const SLOW = `local tag = ...
local function log(s) local h = fs.open("/runs.log", "a") h.writeLine(s .. " " .. tag) h.close() end
log("start")
while not fs.exists("/go-" .. tag) do sleep(0.1) end
log("end")
print("slow work " .. tag .. " done")
`;

/** A host file's text, or '' when it does not exist (yet). */
export const read = (file: string): string => (existsSync(file) ? readFileSync(file, 'utf8') : '');

/** Poll a synchronous check every 50 ms (files the emulator writes). */
export async function waitFor(what: string, check: () => boolean, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A planner/executor task kind (deterministic parser, no executor model) for the ask_user scenarios. */
export const ASK_KIND = {
  strategy: 'planner_executor',
  executorMode: 'parser',
  allowedCommands: ['fs_write', 'run_program'],
};

/**
 * Planner script of the ask_user scenarios: asks which colour the lamp should be, then writes and runs lamp.lua
 * printing the answer it finds under USER ANSWERS in its prompt, then says DONE quoting it.
 */
export function lampPlanner(): (req: FakeChatRequest) => FakeReply {
  let calls = 0;
  return (req) => {
    calls++;
    const messages = req.body.messages as Array<{ role: string; content: string }>;
    const prompt = messages.map((m) => m.content).join('\n');
    const answer =
      /# USER ANSWERS(?: \(new\))?\nQ: [^\n]*\nA: ([^\n]*)/.exec(prompt)?.[1] ?? '(no answer seen)';
    if (calls === 1) {
      return [
        'ASK_USER',
        'QUESTION: Which colour should the lamp be?',
        'WHY: the task does not say, and repainting costs dye',
        'NEXT: write lamp.lua with that colour and run it',
      ].join('\n');
    }
    if (calls === 2) {
      return [
        'WRITE_FILE',
        'PATH: lamp.lua',
        'LANGUAGE: lua',
        'CONTENT:',
        '```lua',
        `print("lamp colour: ${answer}")`,
        '```',
        'THEN:',
        '- lamp.lua',
      ].join('\n');
    }
    return `DONE\nSUMMARY: the lamp is ${answer}; lamp.lua printed it.\nNOTES: none`;
  };
}
