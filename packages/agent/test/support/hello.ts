// A small task for the policy tests: hello.lua prints the wrong greeting and must be fixed and run.
import type { JsonValue } from '@ccagent/engine';
import type { FakeScript } from '@ccagent/testkit';
import {
  createPlannerExecutorStrategy,
  type ModelRole,
  type PlannerExecutorOptions,
} from '../../src/index.js';
import { removeRoot, runTask, type startModels } from '@ccagent/agent/testing';

export const HELLO_FILES = { 'hello.lua': 'print("Hello world")\n' };
export const HELLO_PROMPT = 'hello.lua must print exactly "Hello, world!". Fix it and run it.';

/** Planner directives a small model writes for this task. */
export const D = {
  run: 'RUN\nPATH: hello.lua\nEXPECT: Hello, world!',
  fix: 'WRITE_FILE\nPATH: hello.lua\nLANGUAGE: lua\nCONTENT:\n```lua\nprint("Hello, world!")\n```\nTHEN:\n- hello.lua',
  write: 'WRITE_FILE\nPATH: hello.lua\nLANGUAGE: lua\nCONTENT:\n```lua\nprint("Hello, world!")\n```',
  done: 'DONE\nSUMMARY: hello.lua prints "Hello, world!" (see the last run).\nNOTES: none',
  ask: 'ASK_USER\nQUESTION: Should the greeting end with "!"?\nWHY: the task text could be read both ways\nNEXT: write it',
};

/** Executor replies for {@link D} in `model` mode. */
export const X = {
  run: JSON.stringify({
    kind: 'tool',
    explanation: 'run hello.lua',
    tool: 'cc_run_program',
    parameters: { path: 'hello.lua', args: [] },
  }),
  fix: JSON.stringify({
    kind: 'tool',
    explanation: 'write and run',
    tool: 'cc_write_and_run',
    parameters: {
      path: 'hello.lua',
      content: 'print("Hello, world!")\n',
      runs: [{ path: 'hello.lua', args: [] }],
    },
  }),
  done: JSON.stringify({
    kind: 'final',
    explanation: 'finished',
    result: { success: true, message: 'hello.lua prints "Hello, world!"', details: '' },
  }),
};

let counter = 0;

/**
 * Run the hello task with scripted planner/executor replies; returns the run plus the recorded requests.
 * `options` are the strategy options besides the model roles (default mode: `parser`).
 */
export async function runHello(
  models: Awaited<ReturnType<typeof startModels>>,
  script: { planner: FakeScript; executor?: FakeScript },
  options: Partial<Omit<PlannerExecutorOptions, 'planner' | 'executor'>> = {},
  task: {
    budgets?: Record<string, number>;
    metadata?: Record<string, JsonValue>;
    allowedCommands?: string[];
    prompt?: string;
  } = {},
  run: { answers?: string[]; files?: Record<string, string> } = {},
  roles: { planner?: Partial<ModelRole>; executor?: Partial<ModelRole> } = {},
) {
  const id = ++counter;
  const planner = `planner-${id}`;
  const executor = `executor-${id}`;
  models.fake.script(planner, script.planner);
  models.fake.script(executor, script.executor ?? []);
  const strategy = createPlannerExecutorStrategy({
    planner: { ...models.role(planner), ...roles.planner },
    executor: { ...models.role(executor), ...roles.executor },
    mode: 'parser',
    ...options,
  });
  const result = await runTask(
    strategy,
    { prompt: task.prompt ?? HELLO_PROMPT, ...task },
    { files: run.files ?? HELLO_FILES, answers: run.answers ?? [] },
  );
  await removeRoot(result.root);
  return {
    ...result,
    plannerRequests: models.fake.chatRequests(planner),
    executorRequests: models.fake.chatRequests(executor),
    /** The memory text the planner saw on its n-th call (0-based). */
    plannerSaw: (n: number) => {
      const body = models.fake.chatRequests(planner)[n]?.body as
        { messages?: Array<{ content: string }> } | undefined;
      // Everything after the system prompt: the planner's conversation (its own replies included) is what it sees.
      return (body?.messages ?? [])
        .slice(1)
        .map((m) => m.content)
        .join('\n\n');
    },
    /** The n-th executor request's messages (role, content). */
    executorSaw: (n: number) => {
      const body = models.fake.chatRequests(executor)[n]?.body as
        { messages?: Array<{ role: string; content: string }>; format?: unknown } | undefined;
      return { messages: body?.messages ?? [], format: body?.format };
    },
  };
}
