/**
 * The PostgreSQL schema of ccagent: the same tables, columns and meaning as `@ccagent/store`'s SQLite schema (so the
 * same row codec maps both), in PostgreSQL types. drizzle-kit generates the checked-in migrations in `../drizzle`
 * from this file (`npm run db:generate -w @ccagent/store-postgres`).
 *
 * Conventions: times are epoch milliseconds (`bigint`, read as JS numbers); columns documented as "JSON" hold
 * `JSON.stringify` text in `text` columns, not `jsonb`, because the step log must read back exactly what was written
 * (`jsonb` reorders keys, drops duplicates and rewrites numbers); SQL NULL means "absent" and the text `null` the JSON
 * value null. `ord` columns (identity) stand in for SQLite's `rowid` where rows are listed in insertion order.
 */
import {
  bigint,
  bigserial,
  boolean,
  doublePrecision,
  index,
  integer,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
} from 'drizzle-orm/pg-core';

const ms = (name: string) => bigint(name, { mode: 'number' });

/** One row per task: its current state (the history and step log live in their own tables). */
export const tasks = pgTable(
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
    progress: doublePrecision('progress'),
    progressMessage: text('progress_message'),
    /** A sleeping task (`continue` with `wakeAfterMs`) is not stepped before this time. */
    wakeAt: ms('wake_at'),
    createdAt: ms('created_at').notNull(),
    updatedAt: ms('updated_at').notNull(),
  },
  (t) => [
    index('tasks_status_idx').on(t.status),
    index('tasks_created_idx').on(t.createdAt, t.id),
    index('tasks_client_idx').on(t.clientId),
    index('tasks_kind_idx').on(t.kind),
    index('tasks_updated_idx').on(t.updatedAt),
  ],
);

/** The strategy-owned memory of each task (JSON), one row per task, written with the task in the same transaction. */
export const taskMemory = pgTable('task_memory', {
  taskId: text('task_id')
    .primaryKey()
    .references(() => tasks.id, { onDelete: 'cascade' }),
  /** JSON: strategy-owned memory. */
  memory: text('memory').notNull(),
});

/** The durable observation log of a task (what strategies see), dense `seq` per task. */
export const history = pgTable(
  'history',
  {
    taskId: text('task_id')
      .notNull()
      .references(() => tasks.id, { onDelete: 'cascade' }),
    seq: integer('seq').notNull(),
    step: integer('step').notNull(),
    at: ms('at').notNull(),
    /** tool_call | tool_result | question | answer | note | complete | fail | cancel */
    type: text('type').notNull(),
    /** JSON: the entry body (its fields besides taskId/seq/step/at). */
    body: text('body').notNull(),
  },
  (t) => [primaryKey({ columns: [t.taskId, t.seq] })],
);

/** The per-step log: exact model inputs and outputs, parsed directive, validation errors, tool call/result, timings. */
export const steps = pgTable(
  'steps',
  {
    taskId: text('task_id')
      .notNull()
      .references(() => tasks.id, { onDelete: 'cascade' }),
    seq: integer('seq').notNull(),
    step: integer('step').notNull(),
    at: ms('at').notNull(),
    /** planner | executor | native | validation | note | decision | tool_result … */
    kind: text('kind').notNull(),
    model: text('model'),
    /** JSON: exact model input, when stored whole (no `messages` array, or small ones). */
    input: text('input'),
    /**
     * JSON: the model input with its `messages` array replaced by the hashes of its chunks in `step_messages`
     * (packed exactly as `@ccagent/store` packs it). Exactly one of `input` and `input_packed` is set for a step with
     * an input.
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
    startedAt: ms('started_at'),
    durationMs: doublePrecision('duration_ms'),
    promptTokens: integer('prompt_tokens'),
    completionTokens: integer('completion_tokens'),
    totalDurationMs: doublePrecision('total_duration_ms'),
  },
  (t) => [primaryKey({ columns: [t.taskId, t.seq] })],
);

/** Model-input messages and chunks of the step log, stored once, keyed by the SHA-256 of their JSON text. */
export const stepMessages = pgTable('step_messages', {
  hash: text('hash').primaryKey(),
  body: text('body').notNull(),
});

/** Command calls: inserted `pending` with the decision that made them, closed with their outcome. */
export const commandCalls = pgTable(
  'command_calls',
  {
    callId: text('call_id').primaryKey(),
    taskId: text('task_id')
      .notNull()
      .references(() => tasks.id, { onDelete: 'cascade' }),
    command: text('command').notNull(),
    /** JSON */
    args: text('args').notNull(),
    timeoutMs: ms('timeout_ms').notNull(),
    /** pending | succeeded | failed | timed_out | cancelled */
    status: text('status').notNull(),
    /** JSON: { ok, result } | { ok: false, error }. */
    outcome: text('outcome'),
    dispatchCount: integer('dispatch_count').notNull(),
    createdAt: ms('created_at').notNull(),
    completedAt: ms('completed_at'),
    /** Client a call of a task bound to no client was sent to; written by `bindCall` only. */
    sentTo: text('sent_to'),
    /** Insertion order (SQLite's rowid): calls created in the same millisecond list in the order they were made. */
    ord: bigint('ord', { mode: 'number' }).generatedAlwaysAsIdentity(),
  },
  (t) => [index('command_calls_task_status_idx').on(t.taskId, t.status)],
);

/** Questions to the user and their answers. */
export const questions = pgTable(
  'questions',
  {
    questionId: text('question_id').primaryKey(),
    taskId: text('task_id')
      .notNull()
      .references(() => tasks.id, { onDelete: 'cascade' }),
    question: text('question').notNull(),
    why: text('why'),
    answer: text('answer'),
    askedAt: ms('asked_at').notNull(),
    answeredAt: ms('answered_at'),
    /** Insertion order (SQLite's rowid). */
    ord: bigint('ord', { mode: 'number' }).generatedAlwaysAsIdentity(),
  },
  (t) => [index('questions_task_idx').on(t.taskId)],
);

/** CC computers the orchestrator has seen, with the commands they last reported. */
export const clients = pgTable('clients', {
  clientId: text('client_id').primaryKey(),
  /** JSON array of command descriptors. */
  commands: text('commands').notNull(),
  connected: boolean('connected').notNull(),
  clientVersion: text('client_version'),
  /** The credential its last hello authenticated with (a key id, `token`, `open`): its key group while offline. */
  connectedWith: text('connected_with'),
  firstSeenAt: ms('first_seen_at').notNull(),
  lastSeenAt: ms('last_seen_at').notNull(),
});

/** The registry of model-written tools, as each client last reported it (`tools_update`). */
export const modelTools = pgTable(
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
    updatedAt: ms('updated_at'),
    recordedAt: ms('recorded_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.clientId, t.name] }), index('model_tools_status_idx').on(t.status)],
);

/**
 * The leader lease of the orchestrators sharing this database (one row per lease name). `token` only grows: each
 * new holder gets the next one, and every write transaction of a leader checks that the row still carries its token
 * (fencing), so a paused old leader cannot write once another took over. Expiry uses the database's clock.
 */
export const leases = pgTable('leases', {
  name: text('name').primaryKey(),
  holder: text('holder').notNull(),
  token: bigint('token', { mode: 'number' }).notNull(),
  /** Backend pid of the holder's lease connection: a holder whose connection is gone is dead, expiry or not. */
  holderPid: integer('holder_pid').notNull(),
  /** Where the holder serves clients (for standbys to redirect to). */
  url: text('url'),
  acquiredAt: timestamp('acquired_at', { withTimezone: true }).notNull(),
  expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
});

/** Credentials (schema version 2): one row per key, only a SHA-256 hash of it (as in the SQLite store). */
export const credentials = pgTable(
  'credentials',
  {
    id: text('id').primaryKey(),
    role: text('role').notNull(),
    clientId: text('client_id'),
    name: text('name'),
    keyHash: text('key_hash').notNull(),
    /** JSON grants. */
    grants: text('grants'),
    createdAt: ms('created_at').notNull(),
    expiresAt: ms('expires_at'),
    revokedAt: ms('revoked_at'),
  },
  (t) => [
    index('credentials_client_idx').on(t.clientId),
    uniqueIndex('credentials_key_hash_idx').on(t.keyHash),
  ],
);

/** Enrollment codes (schema version 2), stored as hashes. */
export const enrollmentCodes = pgTable('enrollment_codes', {
  codeHash: text('code_hash').primaryKey(),
  clientId: text('client_id'),
  name: text('name'),
  grants: text('grants'),
  createdAt: ms('created_at').notNull(),
  expiresAt: ms('expires_at').notNull(),
  usedAt: ms('used_at'),
  credentialId: text('credential_id'),
});

/** Pairing requests (schema version 2): a computer asks, an operator decides, the computer collects its key once. */
export const pairingRequests = pgTable(
  'pairing_requests',
  {
    id: text('id').primaryKey(),
    secretHash: text('secret_hash').notNull(),
    clientId: text('client_id').notNull(),
    name: text('name'),
    source: text('source').notNull(),
    match: text('match').notNull(),
    createdAt: ms('created_at').notNull(),
    expiresAt: ms('expires_at').notNull(),
    decision: text('decision'),
    decidedAt: ms('decided_at'),
    decidedBy: text('decided_by'),
    grants: text('grants'),
    collectedAt: ms('collected_at'),
    credentialId: text('credential_id'),
  },
  (t) => [uniqueIndex('pairing_secret_idx').on(t.secretHash)],
);

/** The audit log (schema version 2): who did what to which object, and when. */
export const auditLog = pgTable(
  'audit_log',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    at: ms('at').notNull(),
    actor: text('actor').notNull(),
    role: text('role').notNull(),
    source: text('source').notNull(),
    action: text('action').notNull(),
    target: text('target'),
    outcome: text('outcome').notNull(),
    detail: text('detail'),
  },
  (t) => [index('audit_at_idx').on(t.at)],
);

/** Durable schedules (schema version 3): the same columns as the SQLite store's `schedules`. */
export const schedules = pgTable('schedules', {
  id: text('id').primaryKey(),
  name: text('name'),
  /** JSON `ScheduleSpec`. */
  spec: text('spec').notNull(),
  /** JSON `ScheduleAction`. */
  action: text('action').notNull(),
  /** run_once | skip */
  missed: text('missed').notNull(),
  paused: boolean('paused').notNull(),
  createdBy: text('created_by'),
  createdAt: ms('created_at').notNull(),
  updatedAt: ms('updated_at').notNull(),
  lastDueAt: ms('last_due_at'),
});

/** Firings of schedules (schema version 3): one row per (schedule, due time), recorded before the firing acts. */
export const scheduleFirings = pgTable(
  'schedule_firings',
  {
    scheduleId: text('schedule_id').notNull(),
    dueAt: ms('due_at').notNull(),
    firedAt: ms('fired_at').notNull(),
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

/** Task kinds saved at run time (schema version 5): the same columns as the SQLite store's `task_kind_revisions`. */
export const taskKindRevisions = pgTable(
  'task_kind_revisions',
  {
    name: text('name').notNull(),
    revision: integer('revision').notNull(),
    /** JSON definition, or NULL: removed. */
    definition: text('definition'),
    savedAt: ms('saved_at').notNull(),
    savedBy: text('saved_by'),
  },
  (t) => [primaryKey({ columns: [t.name, t.revision] })],
);

/**
 * The Minecraft side's own settings (schema version 6): one JSON document per key — `seat`: the active instance (the
 * seed's `connect-instance`) and each instance's action allow/deny lists. The SQLite deployment keeps the same
 * document in a file beside its database.
 */
export const minecraftSettings = pgTable('minecraft_settings', {
  key: text('key').primaryKey(),
  /** JSON document. */
  value: text('value').notNull(),
  updatedAt: ms('updated_at').notNull(),
});

/**
 * A Minecraft instance's last `log` lines (schema version 7), as the SQLite `minecraft_logs`: at most the
 * orchestrator's configured number per instance; `seq` keeps counting across restarts.
 */
export const minecraftLogs = pgTable(
  'minecraft_logs',
  {
    instanceId: text('instance_id').notNull(),
    seq: ms('seq').notNull(),
    at: ms('at').notNull(),
    /** The mod's text, untrusted. */
    message: text('message').notNull(),
  },
  (t) => [primaryKey({ columns: [t.instanceId, t.seq] })],
);

/** A Minecraft instance's last ended actions with their outcomes (schema version 7), as the SQLite `minecraft_actions`. */
export const minecraftActions = pgTable(
  'minecraft_actions',
  {
    instanceId: text('instance_id').notNull(),
    actionId: text('action_id').notNull(),
    type: text('type').notNull(),
    taskId: text('task_id'),
    startedAt: ms('started_at').notNull(),
    endedAt: ms('ended_at').notNull(),
    ok: boolean('ok').notNull(),
    code: text('code'),
    error: text('error'),
    result: text('result'),
  },
  (t) => [
    primaryKey({ columns: [t.instanceId, t.actionId] }),
    index('minecraft_actions_started_idx').on(t.instanceId, t.startedAt),
  ],
);
