import { MESSAGE_CATALOG, type MessageCatalogEntry } from './catalog.js';
import {
  DEFAULT_MAX_DEPTH,
  DEFAULT_MAX_MESSAGE_BYTES,
  ERROR_CODE_DESCRIPTIONS,
  ERROR_CODES,
  MAX_REASSEMBLED_BYTES,
  PROTOCOL_VERSION,
  TASK_STATUSES,
} from './constants.js';
import { messageJsonSchema, type JsonSchema } from './json-schema.js';
import { TOOL_STATUSES } from './messages.js';

const DIRECTION_LABEL: Record<MessageCatalogEntry['direction'], string> = {
  client_to_server: 'client → orchestrator',
  server_to_client: 'orchestrator → client',
  both: 'either direction',
};

const STATUS_MEANING: Record<(typeof TASK_STATUSES)[number], string> = {
  queued: 'Accepted and stored; waiting for the scheduler.',
  running: 'A step is being computed (models are being called).',
  waiting_for_command: 'A `command_call` was sent; waiting for its `command_result`.',
  waiting_for_user: 'Extension. An `ask_user` question was sent; waiting for the `user_answer`.',
  completed: 'Finished successfully (`task_completed` carries the result). Final.',
  failed: 'Ended in failure (`task_failed` carries the error). Final.',
  cancelled: 'Stopped by `cancel_task`. Final.',
};

// Additions to the base framework spec that are fields or values rather than whole messages.
const FIELD_EXTENSIONS = [
  'Task status `waiting_for_user` (with `ask_user` / `user_answer`).',
  '`error` carries a machine-readable `code`, the offending `request_id` / `call_id` / `task_id` and the JSON `path` of the offending field; clients may send `error` too.',
  '`command_result.error` may be a string or `{code?, message, traceback?}`; `task_failed.error` a string or `{code, message}`.',
  '`command_call.timeout_ms` and `cancel_task.request_id` (optional).',
  '`hello.tools` (optional) and `tools_update`: the client’s registry of model-written tools.',
];

/** Escape text for a Markdown table cell. */
function cell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

function asSchema(v: unknown): JsonSchema | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as JsonSchema) : undefined;
}

/** A short human-readable type of a JSON Schema (`string (non-empty)`, `integer > 0`, `"a" \| "b"`, `T[]`). */
export function describeJsonType(schema: JsonSchema): string {
  if ('const' in schema) return JSON.stringify(schema['const']);
  if (Array.isArray(schema['enum'])) return schema['enum'].map((v) => JSON.stringify(v)).join(' | ');
  const anyOf = schema['anyOf'];
  if (Array.isArray(anyOf)) {
    return anyOf.map((s) => describeJsonType(asSchema(s) ?? {})).join(' or ');
  }
  const type = schema['type'];
  if (type === 'string') return schema['minLength'] === 1 ? 'string (non-empty)' : 'string';
  if (type === 'integer' || type === 'number') {
    const parts: string[] = [];
    if (typeof schema['exclusiveMinimum'] === 'number') parts.push(`> ${schema['exclusiveMinimum']}`);
    if (typeof schema['minimum'] === 'number') parts.push(`≥ ${schema['minimum']}`);
    if (typeof schema['maximum'] === 'number' && schema['maximum'] < Number.MAX_SAFE_INTEGER) {
      parts.push(`≤ ${schema['maximum']}`);
    }
    return parts.length > 0 ? `${type} ${parts.join(', ')}` : type;
  }
  if (type === 'array') {
    const items = asSchema(schema['items']) ?? {};
    const inner = describeJsonType(items);
    return inner.includes(' ') ? `array of (${inner})` : `${inner}[]`;
  }
  if (type === 'object') return 'object';
  if (typeof type === 'string') return type;
  return 'any JSON';
}

interface FieldRow {
  name: string;
  type: string;
  required: boolean;
  description: string;
}

// Flatten an object schema into rows: `commands[].name`, `error.message` (for the object branch of a union).
function fieldRows(schema: JsonSchema, prefix: string, depth: number): FieldRow[] {
  const props = asSchema(schema['properties']);
  if (props === undefined) return [];
  const required = new Set(Array.isArray(schema['required']) ? (schema['required'] as string[]) : []);
  const rows: FieldRow[] = [];
  for (const [name, raw] of Object.entries(props)) {
    const prop = asSchema(raw) ?? {};
    const full = `${prefix}${name}`;
    const description =
      typeof prop['description'] === 'string'
        ? prop['description']
        : 'const' in prop
          ? 'Message discriminator.'
          : '';
    rows.push({ name: full, type: describeJsonType(prop), required: required.has(name), description });
    if (depth >= 3) continue;
    const items = asSchema(prop['items']);
    if (prop['type'] === 'array' && items?.['type'] === 'object') {
      rows.push(...fieldRows(items, `${full}[].`, depth + 1));
    }
    if (prop['type'] === 'object') rows.push(...fieldRows(prop, `${full}.`, depth + 1));
    const objectBranch = Array.isArray(prop['anyOf'])
      ? prop['anyOf'].map(asSchema).find((s) => s?.['type'] === 'object')
      : undefined;
    if (objectBranch !== undefined) rows.push(...fieldRows(objectBranch, `${full}.`, depth + 1));
  }
  return rows;
}

function renderMessage(entry: MessageCatalogEntry): string {
  const schema = messageJsonSchema(entry.type);
  const kind = entry.extension ? 'extension' : 'base spec';
  const out: string[] = [];
  out.push(`### \`${entry.type}\``, '');
  out.push(`*${DIRECTION_LABEL[entry.direction]} · ${kind}*`, '');
  out.push(entry.description, '');
  out.push('| field | type | required | description |', '| --- | --- | --- | --- |');
  for (const row of fieldRows(schema, '', 1)) {
    out.push(
      `| \`${row.name}\` | \`${cell(row.type)}\` | ${row.required ? 'yes' : 'no'} | ${cell(row.description)} |`,
    );
  }
  out.push('');
  entry.examples.forEach((example, i) => {
    const compact = JSON.stringify(example);
    const text = compact.length > 110 ? JSON.stringify(example, null, 2) : compact;
    out.push(i === 0 ? 'Example:' : 'Another example:', '', '```json', text, '```', '');
  });
  out.push(
    '<details><summary>JSON Schema</summary>',
    '',
    '```json',
    JSON.stringify(schema, null, 2),
    '```',
    '',
    '</details>',
    '',
  );
  return out.join('\n');
}

/**
 * Render docs/protocol.md: the protocol reference generated from the message catalog, the JSON Schemas and the
 * error codes. Deterministic, so a test can compare it with the checked-in file (`npm run docs:protocol` rewrites
 * it).
 */
export function renderProtocolDoc(): string {
  const out: string[] = [];
  const kib = (n: number) => (n >= 1024 * 1024 ? `${n / 1024 / 1024} MiB` : `${n / 1024} KiB`);
  out.push(
    `# ccagent WebSocket protocol, version ${PROTOCOL_VERSION}`,
    '',
    '<!-- Generated from packages/protocol (renderProtocolDoc) by `npm run docs:protocol`. Do not edit by hand: a test fails when this file is stale. -->',
    '',
    'The wire contract between the orchestrator and its clients (the Lua client on CC:Tweaked computers, the CLI).',
    'The zod schemas in `@ccagent/protocol` are the source of truth; this page and the JSON Schemas',
    '(`messageJsonSchema(type)`, `protocolJsonSchema()`) are generated from them.',
    '',
    '## Framing',
    '',
    '- One WebSocket **text** frame carries one message: a JSON object with a string `type` (the discriminator) and',
    '  snake_case fields.',
    '- **Unknown extra fields are tolerated** (ignored, so newer peers can add fields). An unknown `type` is answered',
    '  with an `error` of code `unknown_type`.',
    `- A frame is at most **${kib(DEFAULT_MAX_MESSAGE_BYTES)}** (${DEFAULT_MAX_MESSAGE_BYTES} bytes of UTF-8, CC:Tweaked's`,
    '  websocket limit; the server states its limit as `welcome.max_message_bytes`). A message whose JSON text is',
    `  larger is sent as \`chunk\` frames and reassembled by the receiver, up to ${kib(MAX_REASSEMBLED_BYTES)}.`,
    `- Arrays/objects may nest at most ${DEFAULT_MAX_DEPTH} levels deep (the message object is level 1).`,
    '- Ids (`task_id`, `call_id`, `request_id`, `question_id`, `chunk_id`, `client_id`) are opaque non-empty strings.',
    '- A rejected frame is answered with one `error` message and changes nothing else. An `error` is never answered.',
    '',
    '## Conversation',
    '',
    '1. The client connects and sends `hello` (client id, token, protocol version, the commands it can run, optionally',
    '   its model-written tools). The server answers `welcome`, or `error` (`unauthorized`, `protocol_version`, a',
    '   parse error) and closes the socket. Nothing but `hello` is accepted before `welcome`.',
    '2. The client sends `tools_update` whenever its tool registry changes (a full snapshot each time).',
    '3. `create_task` → `task_created` (same `request_id`; a repeated `request_id` returns the same task). The creator is',
    '   subscribed to the task; other clients may `subscribe`.',
    '4. While the task runs, the server sends `task_update`s, `command_call`s (answered by `command_result`, acknowledged',
    '   by `command_ack` once stored) and `ask_user` questions (answered by `user_answer`).',
    '5. The task ends with `task_completed`, `task_failed`, or a `task_update` with status `cancelled`.',
    '6. The server sends `ping` every `heartbeat_ms`; the client answers `pong` (either side may ping).',
    '',
    '**Delivery after reconnects.** A client keeps each `command_result` until its `command_ack` arrives and resends',
    'it after reconnecting. The server may resend a `command_call` with the same `call_id` after a restart; the client',
    'must not run it twice but resend its stored result.',
    '',
    '## Task statuses',
    '',
    '| status | meaning |',
    '| --- | --- |',
    ...TASK_STATUSES.map((s) => `| \`${s}\` | ${STATUS_MEANING[s]} |`),
    '',
    `Model-written tool statuses (\`tools_update\`): ${TOOL_STATUSES.map((s) => `\`${s}\``).join(' → ')}.`,
    '',
    '## Messages',
    '',
    '| type | direction | | purpose |',
    '| --- | --- | --- | --- |',
    ...MESSAGE_CATALOG.map(
      (m) =>
        `| [\`${m.type}\`](#${m.type}) | ${DIRECTION_LABEL[m.direction]} | ${m.extension ? 'extension' : 'spec'} | ${cell(firstSentence(m.description))} |`,
    ),
    '',
    'Extensions of the base framework spec beyond the messages marked *extension*:',
    '',
    ...FIELD_EXTENSIONS.map((e) => `- ${e}`),
    '',
  );
  for (const entry of MESSAGE_CATALOG) out.push(renderMessage(entry));
  out.push(
    '## Errors',
    '',
    'A rejected frame or failed request is answered with an `error` message. The parse functions',
    '(`parseClientMessage`, `parseServerMessage`) return `{ ok: false, error: { code, path, message, request_id?,',
    'call_id?, task_id? } }`, which `toErrorMessage` turns into that reply; `path` is a JSON path such as',
    '`$.commands[0].name` (`$` when the frame as a whole is at fault).',
    '',
    '| code | meaning |',
    '| --- | --- |',
    ...ERROR_CODES.map((c) => `| \`${c}\` | ${cell(ERROR_CODE_DESCRIPTIONS[c])} |`),
    '',
    '## Chunking',
    '',
    'A message whose JSON text exceeds the frame limit is split into `chunk` frames `{type, chunk_id, index, count,',
    'data}`: the `data` strings of indexes `0..count-1`, concatenated, are the original JSON text (split between',
    'characters, never inside a UTF-16 surrogate pair), and every chunk frame is itself within the limit. `chunk_id` is',
    'unique among the sender’s transfers in flight; chunks of different messages may interleave. The receiver',
    'drops a whole transfer on any inconsistency (`chunk_error`), when it grows past the reassembly limit',
    '(`message_too_large`), or after 60 s without a new chunk; later chunks of a dropped transfer are ignored. A',
    'reassembled message is parsed like a single frame and may not itself be a `chunk`.',
    '',
    'A `command_result` has its own limit, `welcome.max_tool_output_bytes` (the server’s',
    '`inputLimits.maxToolOutputBytes`). The server refuses a larger one (`message_too_large`, with its `call_id` when',
    'its start names one at the top level) and fails the call it answers at once with error code `output_too_large`',
    'and a `command_ack`, so the task goes on instead of waiting for the call’s timeout. A client that knows the limit',
    'cuts its result down before sending it (the Lua client shortens the longest strings, each ending with a note of',
    'what was cut, and adds `truncated: true` to an object result).',
    '',
  );
  return out.join('\n');
}

function firstSentence(text: string): string {
  const end = text.search(/\.(\s|$)/);
  return end === -1 ? text : text.slice(0, end + 1);
}
