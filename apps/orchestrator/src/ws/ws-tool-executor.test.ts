import {
  confirmationCheck,
  confirmationQuestionId,
  InMemoryTaskStore,
  ManualClock,
  type CommandOutcome,
  type Task,
} from '@ccagent/engine';
import { describe, expect, it } from 'vitest';
import { ClientRegistry } from '../clients/client-registry.js';
import { ArgsValidator } from './args-validator.js';
import { WsToolExecutor } from './ws-tool-executor.js';

const silent = { debug() {}, info() {}, warn() {}, error() {} };

/** A task of `kind` for the disconnected client "pc", with its call 1 and (optionally) an answered confirmation. */
async function setup(kind: string, answer?: string) {
  const clock = new ManualClock(1_000);
  const store = new InMemoryTaskStore();
  const task: Task = {
    id: 't',
    kind,
    status: 'waiting_for_command',
    clientId: 'pc',
    prompt: 'p',
    allowedCommands: [],
    memory: null,
    metadata: {},
    budgets: {},
    counters: { steps: 1, toolCalls: 1, questions: 0 },
    createdAt: 1_000,
    updatedAt: 1_000,
  };
  await store.commit({ task, create: true });
  if (answer !== undefined) {
    await store.commit({
      task,
      expectedStatus: task.status,
      question: {
        questionId: confirmationQuestionId('t:call:1'),
        taskId: 't',
        question: 'Allow?',
        askedAt: 1_000,
        answer,
        answeredAt: 1_000,
      },
    });
  }
  const executor = new WsToolExecutor({
    registry: new ClientRegistry(0, clock),
    validator: new ArgsValidator(),
    clock,
    logger: silent,
    disconnectPolicy: 'fail',
    graceMs: 0,
    confirmation: confirmationCheck(store, (t, command) =>
      t.kind === 'careful' && command === 'fs_delete' ? 'Allow?' : undefined,
    ),
  });
  const run = (command: string): Promise<CommandOutcome> =>
    executor.execute({
      taskId: 't',
      callId: 't:call:1',
      clientId: 'pc',
      command,
      args: { path: '/x' },
      timeoutMs: 1_000,
      attempt: 1,
      signal: new AbortController().signal,
    });
  return { run };
}

const code = (o: CommandOutcome) => (o.ok ? 'ok' : o.error.code);

describe('WsToolExecutor: the last check of destructive calls', () => {
  it('never routes a flagged call without a yes on disk, whatever handed it over (guards against a path that skips the engine hold)', async () => {
    const none = await setup('careful');
    expect(await none.run('fs_delete')).toMatchObject({
      ok: false,
      error: { code: 'confirmation_required' },
    });
    const no = await setup('careful', 'no');
    expect(code(await no.run('fs_delete'))).toBe('confirmation_required');
  });

  it('routes a confirmed call, an unflagged command and other kinds as usual (here: to a client that is not connected)', async () => {
    expect(code(await (await setup('careful', 'yes')).run('fs_delete'))).toBe('client_disconnected');
    expect(code(await (await setup('careful')).run('fs_read'))).toBe('client_disconnected');
    expect(code(await (await setup('other')).run('fs_delete'))).toBe('client_disconnected');
  });
});
