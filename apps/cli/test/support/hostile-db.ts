/**
 * A database whose every outside-chosen string is hostile: what a computer, a model or a tool could have written
 * before ids were restricted at the protocol edge (a database from an older server), and what prompts, model replies
 * and tool output may always hold. Written with the SQLite store the orchestrator uses.
 */
import type { JsonValue, Task } from '@ccagent/engine';
import { openSqliteStore } from '@ccagent/store';

/**
 * A string that, printed raw, recolours, clears the line (CR + erase), rings the bell, sets the window title (OSC),
 * clears the screen (C1 CSI) and reverses what follows (bidi override).
 */
export const HOSTILE = 'x\u001b[31mRED\u001b[0m\r\u001b[2K\u001b]0;pwned\u0007\u009b2J\u007f\u202eevil\u2066';
/** A one-line id with a newline that would forge a row of its own. */
export const HOSTILE_ID = `pc\u001b[31m-1\nforged  row\r`;

/** Ids of the hostile tasks. */
export const HOSTILE_TASKS = { waiting: 'hostile-waiting', failed: 'hostile-failed' } as const;

const T0 = Date.UTC(2026, 10, 23, 8, 0, 0);

function task(id: string, status: Task['status'], over: Partial<Task> = {}): Task {
  return {
    id,
    kind: `kind${HOSTILE}`,
    status,
    clientId: HOSTILE_ID,
    prompt: `prompt ${HOSTILE}\nsecond line ${HOSTILE}`,
    allowedCommands: [`cmd${HOSTILE}`],
    memory: null,
    metadata: {},
    budgets: { maxSteps: 10 },
    counters: { steps: 1, toolCalls: 1, questions: 1 },
    progress: 0.5,
    progressMessage: `progress ${HOSTILE}`,
    createdAt: T0,
    updatedAt: T0 + 1000,
    ...over,
  };
}

const hostileJson: JsonValue = { [`key${HOSTILE}`]: [HOSTILE, { deep: `multi\nline ${HOSTILE}` }], n: 1 };

/** Step-log records holding hostile text in every field a renderer shows. */
function steps(): Array<Record<string, unknown> & { kind: string; step: number; at: number }> {
  return [
    {
      kind: 'planner',
      step: 1,
      at: T0 + 100,
      startedAt: T0 + 50,
      durationMs: 50,
      model: `model${HOSTILE}`,
      input: {
        messages: [
          { role: 'system', content: `system ${HOSTILE}` },
          { role: 'user', content: `user ${HOSTILE}` },
          { role: 'tool', toolName: `tool${HOSTILE}`, content: `tool says ${HOSTILE}` },
        ],
        tools: [{ name: `fn${HOSTILE}`, description: HOSTILE, parameters: {} }],
        [`extra${HOSTILE}`]: HOSTILE,
      },
      output: { content: `reply ${HOSTILE}`, thinking: `thinking ${HOSTILE}`, doneReason: `stop${HOSTILE}` },
      directive: hostileJson,
      validationErrors: [`bad ${HOSTILE}`],
    },
    {
      kind: 'decision',
      step: 1,
      at: T0 + 200,
      directive: { type: `command${HOSTILE}`, command: `cmd${HOSTILE}`, args: hostileJson },
      toolCall: { command: `cmd${HOSTILE}`, callId: `call${HOSTILE}`, args: hostileJson },
    },
    {
      kind: 'tool_result',
      step: 1,
      at: T0 + 300,
      toolCall: { command: `cmd${HOSTILE}`, callId: `call${HOSTILE}` },
      toolResult: {
        ok: true,
        result: { ok: false, output: `out ${HOSTILE}\nmore ${HOSTILE}`, extra: hostileJson },
      },
    },
    {
      kind: 'tool_result',
      step: 1,
      at: T0 + 400,
      toolResult: {
        ok: false,
        error: { code: `E${HOSTILE}`, message: `failed ${HOSTILE}`, traceback: HOSTILE },
      },
      error: { code: `code${HOSTILE}`, message: `error ${HOSTILE}`, details: hostileJson },
    },
    {
      kind: `kind${HOSTILE}`,
      step: 1,
      at: T0 + 500,
      toolResult: hostileJson,
    },
  ];
}

/** Write the hostile tasks, client, tools, pairing request and audit rows into a new database at `path`. */
export async function writeHostileDb(path: string): Promise<void> {
  const store = openSqliteStore({ path });
  try {
    await store.commit({
      task: task(HOSTILE_TASKS.waiting, 'waiting_for_user'),
      create: true,
      steps: steps() as never,
      question: {
        questionId: `q${HOSTILE}`,
        taskId: HOSTILE_TASKS.waiting,
        question: `question ${HOSTILE}`,
        why: `why ${HOSTILE}`,
        askedAt: T0 + 600,
      },
    });
    await store.commit({
      task: task(HOSTILE_TASKS.failed, 'failed', {
        error: { code: `code${HOSTILE}`, message: `error ${HOSTILE}`, details: hostileJson },
        result: hostileJson,
        metadata: { settings: { models: { native: `model${HOSTILE}` } } },
      }),
      create: true,
      steps: steps() as never,
      history: [
        { type: 'message', text: `follow-up ${HOSTILE}`, from: `from${HOSTILE}`, step: 1, at: T0 + 700 },
      ],
    });
    await store.upsertClient({
      clientId: HOSTILE_ID,
      commands: [{ name: `cmd${HOSTILE}`, description: HOSTILE }],
      connected: false,
      seenAt: T0,
      clientVersion: `v${HOSTILE}`,
    });
    await store.replaceClientTools(
      HOSTILE_ID,
      [
        {
          name: `tool${HOSTILE}`,
          status: 'active',
          version: 1,
          description: `desc ${HOSTILE}`,
          file: HOSTILE,
        },
      ],
      T0,
    );
    await store.security.insertPairing({
      id: 'pair_hostile',
      secretHash: 'x',
      clientId: HOSTILE_ID,
      name: `name${HOSTILE}`,
      source: `src${HOSTILE}`,
      match: '1234',
      createdAt: Date.now(),
      expiresAt: Date.now() + 3_600_000,
      grants: {},
    });
    await store.security.appendAudit({
      at: T0,
      actor: `actor${HOSTILE}`,
      role: `role${HOSTILE}`,
      source: `src${HOSTILE}`,
      action: `pair.request${HOSTILE}`,
      target: HOSTILE_ID,
      outcome: 'refused',
      detail: hostileJson,
    });
  } finally {
    await store.close();
  }
}
