// The last check before dispatch reads the directive's values from the planner's reply itself (issue 31): a parse
// that merged prose into a value — here the parser replaced by one that does what the parser before issue 31 did with
// a sign-off after the last field, standing in for any future reading path — is refused when the decision is made,
// not run. Real Engine, real `ollama` client over HTTP to the fake server, Lua 5.2.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { policyEvents, startModels } from '@ccagent/agent/testing';
import type * as Parser from '../src/directive-parser.js';
import { D, runHello } from './support/hello.js';

vi.mock('../src/directive-parser.js', async (importOriginal) => {
  const real = await importOriginal<typeof Parser>();
  return {
    ...real,
    // A faulty reading: the words of the reply's sign-off merged into the last value, as small models' prose was.
    parseDirective: (reply: string) => {
      const r = real.parseDirective(reply);
      if (!r.ok || !reply.includes('Let me know')) return r;
      const d = r.value.directive;
      const merged: Parser.Directive =
        d.kind === 'RUN'
          ? { ...d, args: [...d.args, 'Let', 'me', 'know'] }
          : d.kind === 'SHELL'
            ? { ...d, command: `${d.command} Let me know` }
            : d.kind === 'WRITE_FILE'
              ? { ...d, then: [...d.then, { path: 'Let', args: ['me', 'know'] }] }
              : d;
      return { ...r, value: { ...r.value, directive: merged } };
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

describe('dispatch gate: values come from their field lines', () => {
  it.each(['parser', 'parser-then-model'] as const)(
    'refuses RUN, SHELL and WRITE_FILE calls holding words of the sign-off (%s mode)',
    async (mode) => {
      const run = await runHello(
        models,
        {
          planner: [
            'RUN\nPATH: hello.lua\nARGS: list\n\nLet me know the output!',
            'SHELL\nCOMMAND: hello.lua list\n\nLet me know what it prints.',
            `${D.fix}\n\nLet me know if it works.`,
            D.fix,
            D.done,
          ],
        },
        { mode },
      );
      const dispatched = run.history.filter((h) => h.type === 'tool_call').map((h) => JSON.stringify(h.args));
      expect(dispatched.filter((a) => /Let|know/.test(a))).toEqual([]);
      expect(policyEvents(run.steps).slice(0, 3)).toEqual(['not_derived', 'not_derived', 'not_derived']);
      const messages = run.steps.filter((s) => s.kind === 'policy').map((s) => s.error?.message ?? '');
      expect(messages[0]).toMatch(/"Let" is not written on its PATH: or ARGS: line/);
      expect(run.task.status).toBe('completed');
    },
  );
});
