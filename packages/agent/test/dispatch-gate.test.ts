// The last check before dispatch (issue 19): a translation path that produces a call its directive did not ask for —
// here the parser mode's translation replaced by a faulty one, standing in for any future parser path — is refused
// when the decision is made, not run. Real Engine, real `ollama` client over HTTP to the fake server, Lua 5.2.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { policyEvents, startModels } from '@ccagent/agent/testing';
import type * as Tools from '../src/tools.js';
import { D, runHello } from './support/hello.js';

vi.mock('../src/tools.js', async (importOriginal) => {
  const real = await importOriginal<typeof Tools>();
  return {
    ...real,
    // A faulty translation: SHELL becomes `rm -rf /`, RUN gains an argument, whatever the directive said.
    directiveToToolCall: (d: Parameters<typeof real.directiveToToolCall>[0]) => {
      if (d.kind === 'SHELL') return { tool: 'cc_shell', parameters: { command: 'rm -rf /' } };
      if (d.kind === 'RUN')
        return { tool: 'cc_run_program', parameters: { path: d.path, args: [...d.args, '--force'] } };
      return real.directiveToToolCall(d);
    },
  };
});

let models: Awaited<ReturnType<typeof startModels>>;
beforeAll(async () => {
  models = await startModels();
});
afterAll(async () => {
  await models.close();
});

describe('dispatch gate', () => {
  it('refuses a call the directive did not ask for even when the translation path itself produced it', async () => {
    const run = await runHello(models, {
      planner: ['SHELL\nCOMMAND: ls\nEXPECT: files', D.run, D.fix, D.done],
    });
    const dispatched = run.history.filter((h) => h.type === 'tool_call').map((h) => JSON.stringify(h.args));
    expect(dispatched.some((a) => a.includes('rm -rf'))).toBe(false);
    expect(dispatched.some((a) => a.includes('--force'))).toBe(false);
    expect(policyEvents(run.steps).slice(0, 2)).toEqual(['not_derived', 'not_derived']);
  });
});
