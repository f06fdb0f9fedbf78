/**
 * The one SQLite schema of ccagent, shared by the orchestrator (writer) and the CLI (read-only reader). drizzle-kit
 * generates the checked-in migrations in `../drizzle` from this file (`npm run db:generate -w @ccagent/store`).
 *
 * Conventions: times are epoch milliseconds (INTEGER); columns documented as "JSON" hold `JSON.stringify` text, where
 * SQL NULL means "absent" and the text `null` means the JSON value null.
 */
import { index, integer, primaryKey, real, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';

/** One row per task: its current state (the history and step log live in their own tables). */
export const tasks = sqliteTable(
  'tasks',
  {
    id: text('id').primaryKey(),
    kind: text('kind').notNull(),
    /** queued | running | waiting_for_command | waiting_for_user | completed | failed | cancelled */
    status: text('status').notNull(),
    clientId: text('client_id'),
    prompt: text('prompt').notNull(),
    /** JSON */
    context: text('context'),
    /** JSON array of command names; empty = any command the executor offers. */
    allowedCommands: text('allowed_commands').notNull(),
    /** JSON object. */
    metadata: text('metadata').notNull(),
    /** JSON object: maxSteps, maxToolCalls, deadlineAt. */
    budgets: text('budgets').notNull(),
    stepsCount: integer('steps_count').notNull().default(0),
    toolCallsCount: integer('tool_calls_count').notNull().default(0),
    questionsCount: integer('questions_count').notNull().default(0),
    /** JSON */
    result: text('result'),
    /** JSON object: code, message, details. */
    error: text('error'),
    progress: real('progress'),
    progressMessage: text('progress_message'),
    /** A sleeping task (`continue` with `wakeAfterMs`) is not stepped before this time. */
    wakeAt: integer('wake_at'),
    createdAt: integer('created_at').notNull(),
    updatedAt: integer('updated_at').notNull(),
  },
  (t) => [
    index('tasks_status_idx').on(t.status),
    index('tasks_created_idx').on(t.createdAt, t.id),
    index('tasks_client_idx').on(t.clientId),
    index('tasks_kind_idx').on(t.kind),
  ],
);

/**
 * The strategy-owned memory of each task (JSON), one row per task, written with the task in the same transaction.
 * It lives apart from `tasks` because it is the one large value (kilobytes) of a task and changes far less often than
 * its status and counters: SQLite rewrites a whole row, overflow pages included, on every UPDATE of any column, so
 * with the memory inside `tasks` each status-only commit rewrote it. The store writes this row only when the memory
 * changed.
 */
export const taskMemory = sqliteTable('task_memory', {
  taskId: text('task_id')
    .primaryKey()
    .references(() => tasks.id, { onDelete: 'cascade' }),
  /** JSON: strategy-owned memory. */
  memory: text('memory').notNull(),
});

/** The durable observation log of a task (what strategies see), dense `seq` per task. */
export const history = sqliteTable(
  'history',
  {
    taskId: text('task_id')
      .notNull()
      .references(() => tasks.id, { onDelete: 'cascade' }),
    seq: integer('seq').notNull(),
    step: integer('step').notNull(),
    at: integer('at').notNull(),
    /** tool_call | tool_result | question | answer | note | complete | fail | cancel */
    type: text('type').notNull(),
    /** JSON: the entry body (its fields besides taskId/seq/step/at). */
    body: text('body').notNull(),
  },
  (t) => [primaryKey({ columns: [t.taskId, t.seq] })],
);

/** The per-step log: exact model inputs and outputs, parsed directive, validation errors, tool call/result, timings. */
export const steps = sqliteTable(
  'steps',
  {
    taskId: text('task_id')
      .notNull()
      .references(() => tasks.id, { onDelete: 'cascade' }),
    seq: integer('seq').notNull(),
    step: integer('step').notNull(),
    at: integer('at').notNull(),
    /** planner | executor | native | validation | note | decision | tool_result … */
    kind: text('kind').notNull(),
    model: text('model'),
    /**
     * JSON: exact model input (messages, options, format), when stored whole: every step written before schema
     * version 5, and since then the inputs that are not worth packing (no `messages` array, or small ones).
     */
    input: text('input'),
    /**
     * JSON: the model input with its `messages` array replaced by the hashes of the chunks (runs of message hashes)
     * in `step_messages` that list its messages (schema version 5; see `src/step-messages.ts`). Exactly one of
     * `input` and `input_packed` is set for a step that has an input; readers put the messages back (byte-for-byte
     * the stored text).
     */
    inputPacked: text('input_packed'),
    /** JSON: raw model output. */
    output: text('output'),
    /** JSON: parsed directive or decision. */
    directive: text('directive'),
    /** JSON array of strings. */
    validationErrors: text('validation_errors'),
    /** JSON */
    toolCall: text('tool_call'),
    /** JSON */
    toolResult: text('tool_result'),
    /** JSON object: code, message, details. */
    error: text('error'),
    startedAt: integer('started_at'),
    durationMs: real('duration_ms'),
    promptTokens: integer('prompt_tokens'),
    completionTokens: integer('completion_tokens'),
    totalDurationMs: real('total_duration_ms'),
  },
  (t) => [primaryKey({ columns: [t.taskId, t.seq] })],
);

/**
 * Model-input messages of the step log, stored once (content-addressed; schema version 5). `hash` is the SHA-256 of
 * `body` (base64url, 43 characters); `body` is the JSON text of a message, or of a chunk: a JSON array of the hashes
 * of a run of consecutive messages. A model call repeats most of the previous call's messages (the system prompt, the
 * task, every turn still in the window), so a step stores the hashes of its chunks (`steps.input_packed`) and only
 * the messages and chunks not seen before become rows here. Rows are written with INSERT OR IGNORE in the
 * transaction of the step that references them; ccagent never deletes them (see the package README).
 */
export const stepMessages = sqliteTable('step_messages', {
  hash: text('hash').primaryKey(),
  body: text('body').notNull(),
});

/** Command calls: inserted `pending` with the decision that made them, closed with their outcome. */
export const commandCalls = sqliteTable(
  'command_calls',
  {
    callId: text('call_id').primaryKey(),
    taskId: text('task_id')
      .notNull()
      .references(() => tasks.id, { onDelete: 'cascade' }),
    command: text('command').notNull(),
    /** JSON */
    args: text('args').notNull(),
    timeoutMs: integer('timeout_ms').notNull(),
    /** pending | succeeded | failed | timed_out | cancelled */
    status: text('status').notNull(),
    /** JSON: { ok, result } | { ok: false, error }. */
    outcome: text('outcome'),
    dispatchCount: integer('dispatch_count').notNull(),
    createdAt: integer('created_at').notNull(),
    completedAt: integer('completed_at'),
    /**
     * Client a call of a task bound to no client was sent to (`TaskStore.bindCall`, written before the call is
     * sent); NULL for calls of bound tasks and calls never sent. Written only by bindCall: the commit path's upsert
     * leaves it out, so closing the call keeps it.
     */
    sentTo: text('sent_to'),
  },
  // Every query filters by task (the engine's pending calls of a task, the HTTP API's calls of a task): one
  // composite index instead of one per column, one index page fewer written per command round trip.
  (t) => [index('command_calls_task_status_idx').on(t.taskId, t.status)],
);

/** Questions to the user and their answers. */
export const questions = sqliteTable(
  'questions',
  {
    questionId: text('question_id').primaryKey(),
    taskId: text('task_id')
      .notNull()
      .references(() => tasks.id, { onDelete: 'cascade' }),
    question: text('question').notNull(),
    why: text('why'),
    answer: text('answer'),
    askedAt: integer('asked_at').notNull(),
    answeredAt: integer('answered_at'),
  },
  (t) => [index('questions_task_idx').on(t.taskId)],
);

/** CC computers the orchestrator has seen, with the commands they last reported. */
export const clients = sqliteTable('clients', {
  clientId: text('client_id').primaryKey(),
  /** JSON array of command descriptors. */
  commands: text('commands').notNull(),
  connected: integer('connected', { mode: 'boolean' }).notNull(),
  clientVersion: text('client_version'),
  /** The credential its last hello authenticated with (a key id, `token`, `open`): its key group while offline. */
  connectedWith: text('connected_with'),
  firstSeenAt: integer('first_seen_at').notNull(),
  lastSeenAt: integer('last_seen_at').notNull(),
});

/** The registry of model-written tools, as each client last reported it (`tools_update`). */
export const modelTools = sqliteTable(
  'model_tools',
  {
    clientId: text('client_id')
      .notNull()
      .references(() => clients.clientId, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    /** draft | test | active | retired */
    status: text('status').notNull(),
    version: integer('version').notNull(),
    description: text('description'),
    file: text('file'),
    /** When the client says the tool last changed. */
    updatedAt: integer('updated_at'),
    /** When this row was written. */
    recordedAt: integer('recorded_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.clientId, t.name] }), index('model_tools_status_idx').on(t.status)],
);

/**
 * Credentials (schema version 6): who may connect or call the API, one row per key. Only a SHA-256 hash of each key
 * is stored. `role` is `computer` (bound to `client_id`), `viewer` (read-only HTTP) or `operator`.
 */
export const credentials = sqliteTable(
  'credentials',
  {
    id: text('id').primaryKey(),
    role: text('role').notNull(),
    clientId: text('client_id'),
    name: text('name'),
    /** base64url SHA-256 of the key. */
    keyHash: text('key_hash').notNull(),
    /** JSON: `{ kinds?: string[], observeOthers?: boolean }` (what a computer may do beyond its own tasks). */
    grants: text('grants'),
    createdAt: integer('created_at').notNull(),
    /** Set on the old key by a rotation: it keeps working until then. */
    expiresAt: integer('expires_at'),
    revokedAt: integer('revoked_at'),
  },
  (t) => [
    index('credentials_client_idx').on(t.clientId),
    uniqueIndex('credentials_key_hash_idx').on(t.keyHash),
  ],
);

/** Enrollment codes (schema version 6): short-lived, single-use, stored as hashes; redeemed for a computer key. */
export const enrollmentCodes = sqliteTable('enrollment_codes', {
  codeHash: text('code_hash').primaryKey(),
  /** The client id the code is for, or NULL: the computer names itself. */
  clientId: text('client_id'),
  name: text('name'),
  /** JSON grants handed to the credential. */
  grants: text('grants'),
  createdAt: integer('created_at').notNull(),
  expiresAt: integer('expires_at').notNull(),
  usedAt: integer('used_at'),
  /** Credential created with it. */
  credentialId: text('credential_id'),
});

/** Audit log (schema version 6): who did what to which object, and when. */
export const auditLog = sqliteTable(
  'audit_log',
  {
    id: integer('id').primaryKey(),
    at: integer('at').notNull(),
    /** Credential id, `token` (the shared operator token), `open` (no credential on an open loopback server). */
    actor: text('actor').notNull(),
    role: text('role').notNull(),
    /** Remote address (and transport). */
    source: text('source').notNull(),
    /** e.g. task.create, task.cancel, task.answer, client.enroll, client.revoke, auth.fail */
    action: text('action').notNull(),
    target: text('target'),
    /** ok | refused */
    outcome: text('outcome').notNull(),
    /** JSON */
    detail: text('detail'),
  },
  (t) => [index('audit_at_idx').on(t.at)],
);

/**
 * Pairing requests (schema version 7): a computer without an enrollment code asks to pair; an operator approves or
 * denies it; the computer then collects its key with the request's secret (stored as a hash), once.
 */
export const pairingRequests = sqliteTable(
  'pairing_requests',
  {
    id: text('id').primaryKey(),
    /** base64url SHA-256 of the secret the computer polls with. */
    secretHash: text('secret_hash').notNull(),
    clientId: text('client_id').notNull(),
    name: text('name'),
    /** Where the request came from (`http 10.0.0.5`). */
    source: text('source').notNull(),
    /** Short code shown on the computer and in the pending list, to approve the right one. */
    match: text('match').notNull(),
    createdAt: integer('created_at').notNull(),
    /** Until then it can be approved (pending) or collected (approved). */
    expiresAt: integer('expires_at').notNull(),
    /** approved | denied | NULL (pending) */
    decision: text('decision'),
    decidedAt: integer('decided_at'),
    decidedBy: text('decided_by'),
    /** JSON grants handed to the credential. */
    grants: text('grants'),
    collectedAt: integer('collected_at'),
    credentialId: text('credential_id'),
  },
  (t) => [uniqueIndex('pairing_secret_idx').on(t.secretHash)],
);

/**
 * Durable schedules (schema version 8): a cron expression in a time zone or a fixed interval, what each firing does
 * (the engine's `ScheduleAction`, JSON), the missed-firing policy, and the due time of the last firing recorded.
 */
export const schedules = sqliteTable('schedules', {
  id: text('id').primaryKey(),
  name: text('name'),
  /** JSON `ScheduleSpec`. */
  spec: text('spec').notNull(),
  /** JSON `ScheduleAction`. */
  action: text('action').notNull(),
  /** run_once | skip */
  missed: text('missed').notNull(),
  paused: integer('paused').notNull(),
  createdBy: text('created_by'),
  createdAt: integer('created_at').notNull(),
  updatedAt: integer('updated_at').notNull(),
  lastDueAt: integer('last_due_at'),
});

/** Firings of schedules (schema version 8): one row per (schedule, due time), recorded before the firing acts. */
export const scheduleFirings = sqliteTable(
  'schedule_firings',
  {
    scheduleId: text('schedule_id').notNull(),
    dueAt: integer('due_at').notNull(),
    firedAt: integer('fired_at').notNull(),
    /** pending | done | failed | skipped */
    status: text('status').notNull(),
    taskId: text('task_id'),
    error: text('error'),
  },
  (t) => [
    primaryKey({ columns: [t.scheduleId, t.dueAt] }),
    index('schedule_firings_status_idx').on(t.status),
  ],
);

/**
 * Task kinds saved at run time (schema version 10): one row per save of a kind — the definition (JSON, validated by
 * the orchestrator; NULL when the stored kind was removed), who saved it and when. Append-only, so a task keeps the
 * definition in effect when it was created.
 */
export const taskKindRevisions = sqliteTable(
  'task_kind_revisions',
  {
    name: text('name').notNull(),
    revision: integer('revision').notNull(),
    /** JSON definition, or NULL: removed. */
    definition: text('definition'),
    savedAt: integer('saved_at').notNull(),
    savedBy: text('saved_by'),
  },
  (t) => [primaryKey({ columns: [t.name, t.revision] })],
);

/**
 * A Minecraft instance's last `log` lines (schema version 11), kept so its activity page survives a restart: at most
 * the orchestrator's configured number per instance (older rows are deleted as new ones are written). `seq` numbers
 * the lines per instance and keeps counting across restarts.
 */
export const minecraftLogs = sqliteTable(
  'minecraft_logs',
  {
    instanceId: text('instance_id').notNull(),
    seq: integer('seq').notNull(),
    at: integer('at').notNull(),
    /** The mod's text, untrusted. */
    message: text('message').notNull(),
  },
  (t) => [primaryKey({ columns: [t.instanceId, t.seq] })],
);

/**
 * A Minecraft instance's last ended actions with their outcomes (schema version 11): at most the orchestrator's
 * configured number per instance, by start time. `ok` 1/0; `code` and `error` on failure, `result` (a JSON preview)
 * on success.
 */
export const minecraftActions = sqliteTable(
  'minecraft_actions',
  {
    instanceId: text('instance_id').notNull(),
    actionId: text('action_id').notNull(),
    type: text('type').notNull(),
    taskId: text('task_id'),
    startedAt: integer('started_at').notNull(),
    endedAt: integer('ended_at').notNull(),
    ok: integer('ok', { mode: 'boolean' }).notNull(),
    code: text('code'),
    error: text('error'),
    result: text('result'),
  },
  (t) => [
    primaryKey({ columns: [t.instanceId, t.actionId] }),
    index('minecraft_actions_started_idx').on(t.instanceId, t.startedAt),
  ],
);
