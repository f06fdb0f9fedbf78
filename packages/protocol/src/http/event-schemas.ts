/**
 * The records `GET /api/events` streams (Server-Sent Events): one zod schema per event kind, keyed by the name its
 * `event:` line carries (`HTTP_EVENT_TYPES`). Each record's `data:` line is one JSON object of that schema
 * (snake_case). The orchestrator builds them with these types, readers parse them with {@link parseHttpEvent}, and
 * docs/http-api.md's reference lists them. Records are open: a newer server may add fields.
 */
import { z } from 'zod';
import { HTTP_EVENT_TYPES, TASK_STATUSES, type HttpEventType, type ProtocolErrorCode } from '../constants.js';
import { TOOL_STATUSES } from '../messages.js';
import { nestingExceeds, toJsonPath, type ProtocolResult } from '../parse.js';
import { HttpErrorInfoSchema, HttpStepSummarySchema, HttpTaskSchema } from './http-schemas.js';
import {
  HttpMinecraftActionSchema,
  HttpMinecraftInstanceSchema,
  HttpMinecraftLogSchema,
} from './minecraft-http-schemas.js';

const time = z.number().describe('epoch ms');

/** `task`: a task was created or changed. The list's columns; the whole task is one `GET /api/tasks/:id` away. */
export const HttpTaskEventSchema = z.object({
  id: z.string(),
  kind: z.string(),
  status: z.enum(TASK_STATUSES),
  client_id: z.string().nullable(),
  prompt: z.string().describe('the first 200 characters'),
  prompt_truncated: z.boolean().describe('the prompt is longer than `prompt`'),
  counters: HttpTaskSchema.shape.counters,
  progress: z.number().optional(),
  progress_message: z.string().optional(),
  error: HttpErrorInfoSchema.optional(),
  created_at: time,
  updated_at: time,
});

/**
 * `step`: a record was added to a task's step log. With `summary` true it carries the record's short form (a timeline
 * row: [StepSummary](#stepsummary) without `input_chars`, at most {@link STEP_EVENT_MAX_CHARS} characters of JSON);
 * otherwise (a larger one) only its numbers. The whole record is `GET /api/tasks/:id/steps`.
 */
export const HttpStepEventSchema = HttpStepSummarySchema.omit({ input_chars: true }).extend({
  task_id: z.string(),
  summary: z.literal(true).optional().describe('the record’s short form is here; absent: only its numbers'),
});

/** Longest `step` record carrying the short form (characters of its JSON); a longer one carries only its numbers. */
export const STEP_EVENT_MAX_CHARS = 2048;

/** `schedule`: a schedule was added, paused, resumed or removed, or fired (list them with `GET /api/schedules`). */
export const HttpScheduleEventSchema = z.object({
  schedule_id: z.string(),
  change: z.enum(['added', 'paused', 'resumed', 'removed', 'fired']),
  at: time,
  due_at: time.optional().describe('`fired`: the occurrence'),
  status: z.string().optional().describe('`fired`: how the firing ended (`done`, `failed`)'),
  task_id: z.string().optional().describe('`fired`: the task it created or posted to'),
});

/** `question`: a task asked a question (`answered` false, with its text) or it was answered (`answered` true). */
export const HttpQuestionEventSchema = z.object({
  task_id: z.string(),
  question_id: z.string(),
  question: z.string().optional().describe('when asked'),
  answered: z.boolean(),
});

/** `call`: a command call was sent to a client (no `ok`) or its result came back (`ok`). */
export const HttpCallEventSchema = z.object({
  task_id: z.string(),
  call_id: z.string(),
  command: z.string(),
  status: z.string(),
  ok: z.boolean().optional().describe('when resolved'),
});

/** `client`: a client connected (with the names of its commands) or disconnected. */
export const HttpClientEventSchema = z.object({
  client_id: z.string(),
  connected: z.boolean(),
  commands: z.array(z.string()).optional().describe('when connected'),
  at: time,
});

/** `tool`: a client reported its model-written tools (the whole list). */
export const HttpToolEventSchema = z.object({
  client_id: z.string(),
  tools: z.array(z.object({ name: z.string(), status: z.enum(TOOL_STATUSES), version: z.number() })),
  at: time,
});

/** `delta`: the next piece of a chat task's reply, as the model writes it. */
export const HttpDeltaEventSchema = z.object({
  task_id: z.string(),
  step: z.number(),
  delta: z.string(),
});

/** `resync`: this reader missed records; refetch what it shows over the other routes. */
export const HttpResyncEventSchema = z.object({
  reason: z
    .enum(['unknown_event_id', 'slow_consumer', 'minecraft_gap'])
    .describe(
      '`unknown_event_id`: the resume point is no longer held; `slow_consumer`: its queue overflowed; `minecraft_gap`: the records after the resume point were replayed but Minecraft records among them are no longer held',
    ),
});

/** `hello`: the first record of a fresh stream (not sent on a resume). */
export const HttpHelloEventSchema = z.object({
  epoch: z.string().describe('names this server process; ids of another epoch cannot be resumed'),
});

/** The schema of each event kind's `data`. */
export const HTTP_EVENT_SCHEMAS = {
  task: HttpTaskEventSchema,
  step: HttpStepEventSchema,
  question: HttpQuestionEventSchema,
  call: HttpCallEventSchema,
  client: HttpClientEventSchema,
  tool: HttpToolEventSchema,
  delta: HttpDeltaEventSchema,
  resync: HttpResyncEventSchema,
  hello: HttpHelloEventSchema,
  mc_instance: HttpMinecraftInstanceSchema,
  mc_log: HttpMinecraftLogSchema,
  mc_action: HttpMinecraftActionSchema,
  schedule: HttpScheduleEventSchema,
} as const satisfies Record<HttpEventType, z.ZodType>;

/** What each event kind says, for the generated reference (one entry per kind, in {@link HTTP_EVENT_TYPES} order). */
export const HTTP_EVENTS: ReadonlyArray<{ name: HttpEventType; schema: z.ZodType; description: string }> =
  HTTP_EVENT_TYPES.map((name) => ({
    name,
    schema: HTTP_EVENT_SCHEMAS[name],
    description: {
      task: 'A task was created or changed (sent to readers of that task).',
      step: 'A record was added to the task’s step log.',
      question: 'The task asked a question, or it was answered.',
      call: 'A command call was sent to a client, or its result came back.',
      client: 'A client connected or disconnected (not sent to readers filtered to tasks).',
      tool: 'A client reported its model-written tools (not sent to readers filtered to tasks).',
      delta:
        'A chat task’s reply as the model writes it: the text since the previous `delta`, at most 10 a second per task (the whole reply is in the step log and the task’s result).',
      resync:
        'Records were missed (a resume from an id the server no longer holds, or a reader too slow to keep up): refetch.',
      hello: 'First record of a fresh stream; its `id` is the newest record’s, to resume from.',
      mc_instance:
        'A Minecraft instance connected, disconnected or sent a new state (at most 4 a second per instance; the whole instance, as `GET /api/minecraft/instances` lists it). Not sent to readers filtered to tasks.',
      mc_log:
        'A Minecraft mod sent a `log` line (at most 50 a second per instance after a burst of 200; lines over that are counted in one line with `dropped`, and the instance keeps them). Not sent to readers filtered to tasks.',
      mc_action:
        'An action on a Minecraft instance started (`ok` null) or ended with its outcome and duration. Not sent to readers filtered to tasks.',
      schedule:
        'A schedule was added, paused, resumed, removed or fired. Not sent to readers filtered to tasks.',
    }[name],
  }));

/** The `data` of an event of kind `K`. */
export type HttpEventData<K extends HttpEventType> = z.infer<(typeof HTTP_EVENT_SCHEMAS)[K]>;
/** One record of `GET /api/events`: its kind and its parsed `data`. */
export type HttpEvent = { [K in HttpEventType]: { type: K; data: HttpEventData<K> } }[HttpEventType];
/** A `task` event's `data`. */
export type HttpTaskEvent = HttpEventData<'task'>;
/** A `step` event's `data`. */
export type HttpStepEvent = HttpEventData<'step'>;
/** A `question` event's `data`. */
export type HttpQuestionEvent = HttpEventData<'question'>;
/** A `call` event's `data`. */
export type HttpCallEvent = HttpEventData<'call'>;
/** A `client` event's `data`. */
export type HttpClientEvent = HttpEventData<'client'>;
/** A `tool` event's `data`. */
export type HttpToolEvent = HttpEventData<'tool'>;
/** A `delta` event's `data`. */
export type HttpDeltaEvent = HttpEventData<'delta'>;
/** A `resync` event's `data`. */
export type HttpResyncEvent = HttpEventData<'resync'>;
/** A `hello` event's `data`. */
export type HttpHelloEvent = HttpEventData<'hello'>;
/** A `schedule` event's `data`. */
export type HttpScheduleEvent = HttpEventData<'schedule'>;

/** Deepest nesting accepted in a record's `data` (records are flat; this only bounds a hostile stream). */
const MAX_EVENT_DEPTH = 8;

/**
 * Parse one record of `GET /api/events`: `event` is its `event:` line, `data` its `data:` line (JSON text). An
 * unknown kind is `unknown_type` (a newer server: skip it), bad JSON `invalid_json`, a field of the wrong shape
 * `invalid_field` / `missing_field` with its path.
 */
export function parseHttpEvent(event: string, data: string): ProtocolResult<HttpEvent> {
  if (!(HTTP_EVENT_TYPES as readonly string[]).includes(event)) {
    return fail('unknown_type', '$', `unknown event ${JSON.stringify(event.slice(0, 64))}`);
  }
  const type = event as HttpEventType;
  if (nestingExceeds(data, MAX_EVENT_DEPTH)) {
    return fail('nesting_too_deep', '$', `data is nested deeper than ${MAX_EVENT_DEPTH} levels`);
  }
  let json: unknown;
  try {
    json = JSON.parse(data);
  } catch (cause) {
    return fail('invalid_json', '$', `data is not valid JSON: ${(cause as Error).message}`);
  }
  const parsed = HTTP_EVENT_SCHEMAS[type].safeParse(json);
  if (parsed.success) return { ok: true, value: { type, data: parsed.data } as HttpEvent };
  const issue = parsed.error.issues[0];
  const path = toJsonPath(issue?.path ?? []);
  const missing = issue !== undefined && isMissing(json, issue.path);
  const code =
    (issue?.path.length ?? 0) === 0 ? 'invalid_message' : missing ? 'missing_field' : 'invalid_field';
  return fail(code, path, `${type} event ${path}: ${issue?.message ?? 'invalid'}`);
}

function fail(code: ProtocolErrorCode, path: string, message: string): ProtocolResult<never> {
  return { ok: false, error: { code, path, message } };
}

/** Whether the field at `path` is absent (its parent is an object without it). */
function isMissing(root: unknown, path: readonly PropertyKey[]): boolean {
  let parent: unknown = root;
  for (const key of path.slice(0, -1)) {
    if (typeof parent !== 'object' || parent === null) return false;
    parent = (parent as Record<PropertyKey, unknown>)[key];
  }
  const last = path.at(-1);
  return last !== undefined && typeof parent === 'object' && parent !== null && !Object.hasOwn(parent, last);
}
