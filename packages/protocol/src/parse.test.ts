/**
 * Tests of the protocol edge: every message type, every error code and path, limits. Size (over 500 lines):
 * one table-driven suite per parser, kept together so a new message is added in one place.
 */
import { describe, expect, it } from 'vitest';
import {
  CommandResultSchema,
  DEFAULT_MAX_MESSAGE_BYTES,
  ERROR_CODES,
  parseClientMessage,
  parseServerMessage,
  toErrorMessage,
  type ProtocolErrorCode,
  type ProtocolIssue,
  type ProtocolResult,
} from './index.js';

type Side = 'server' | 'client';
interface BadCase {
  /** What is wrong, in words. */
  name: string;
  /** Which side receives it: `server` uses parseClientMessage, `client` parseServerMessage. */
  side: Side;
  raw: string;
  code: ProtocolErrorCode;
  path: string;
  /** Ids the error must echo. */
  ids?: Partial<Pick<ProtocolIssue, 'request_id' | 'call_id' | 'task_id'>>;
  maxBytes?: number;
}

const j = (v: unknown) => JSON.stringify(v);
const createTask = {
  type: 'create_task',
  request_id: 'req-1',
  task_kind: 'agent',
  client_id: 'pc-1',
  prompt: 'Dig.',
  allowed_commands: ['fs.list'],
};
const without = <T extends object>(o: T, key: keyof T) => {
  const copy = { ...o };
  delete copy[key];
  return copy;
};
const hello = { type: 'hello', client_id: 'pc-1', protocol_version: 1, commands: [{ name: 'fs.list' }] };
const tool = { name: 'count_logs', status: 'active', version: 1 };
const result = { type: 'command_result', task_id: 't-1', call_id: 'c-1', ok: true, result: {} };
const chunk = { type: 'chunk', chunk_id: 'm-1', index: 0, count: 2, data: '{"type"' };
const taskUpdate = { type: 'task_update', task_id: 't-1', status: 'running' };
const welcome = {
  type: 'welcome',
  client_id: 'pc-1',
  server_version: '0.1.0',
  protocol_version: 1,
  heartbeat_ms: 15000,
  max_message_bytes: 131072,
};
const ids = { task_id: 't-1', call_id: 'c-1' };

// Each entry is a distinct way a frame can be wrong; each asserts its specific code and path.
const BAD: BadCase[] = [
  // Not JSON at all.
  { name: 'empty frame', side: 'server', raw: '', code: 'invalid_json', path: '$' },
  { name: 'whitespace only', side: 'server', raw: '  \n ', code: 'invalid_json', path: '$' },
  { name: 'truncated object', side: 'server', raw: '{"type":"ping"', code: 'invalid_json', path: '$' },
  { name: 'single-quoted JSON', side: 'server', raw: "{'type':'ping'}", code: 'invalid_json', path: '$' },
  { name: 'trailing comma', side: 'server', raw: '{"type":"ping",}', code: 'invalid_json', path: '$' },
  { name: 'byte order mark', side: 'server', raw: '\uFEFF{"type":"ping"}', code: 'invalid_json', path: '$' },
  {
    name: 'two messages in one frame',
    side: 'server',
    raw: '{"type":"ping"}{"type":"ping"}',
    code: 'invalid_json',
    path: '$',
  },
  {
    name: 'NaN literal',
    side: 'server',
    raw: '{"type":"task_update","progress":NaN}',
    code: 'invalid_json',
    path: '$',
  },
  { name: 'Lua-style nil', side: 'client', raw: '{"type":"ping","id":nil}', code: 'invalid_json', path: '$' },
  // JSON, but not an object.
  { name: 'null', side: 'server', raw: 'null', code: 'invalid_message', path: '$' },
  { name: 'array of messages', side: 'server', raw: '[{"type":"ping"}]', code: 'invalid_message', path: '$' },
  { name: 'bare string', side: 'server', raw: '"ping"', code: 'invalid_message', path: '$' },
  { name: 'number', side: 'client', raw: '42', code: 'invalid_message', path: '$' },
  // The discriminator.
  {
    name: 'no type',
    side: 'server',
    raw: '{"task_id":"t-1"}',
    code: 'missing_field',
    path: '$.type',
    ids: { task_id: 't-1' },
  },
  { name: 'numeric type', side: 'server', raw: '{"type":7}', code: 'invalid_field', path: '$.type' },
  { name: 'null type', side: 'client', raw: '{"type":null}', code: 'invalid_field', path: '$.type' },
  {
    name: 'unknown type',
    side: 'server',
    raw: j({ type: 'launch_missiles', request_id: 'r-9' }),
    code: 'unknown_type',
    path: '$.type',
    ids: { request_id: 'r-9' },
  },
  { name: 'empty type', side: 'server', raw: '{"type":""}', code: 'unknown_type', path: '$.type' },
  {
    name: 'type in wrong case',
    side: 'server',
    raw: '{"type":"PING"}',
    code: 'unknown_type',
    path: '$.type',
  },
  {
    name: 'server-only type sent by a client',
    side: 'server',
    raw: j({ type: 'task_created', request_id: 'r', task_id: 't', status: 'queued' }),
    code: 'unknown_type',
    path: '$.type',
    ids: { request_id: 'r', task_id: 't' },
  },
  {
    name: 'client-only type sent by the server',
    side: 'client',
    raw: j(createTask),
    code: 'unknown_type',
    path: '$.type',
    ids: { request_id: 'req-1' },
  },
  // create_task
  {
    name: 'create_task without request_id',
    side: 'server',
    raw: j(without(createTask, 'request_id')),
    code: 'missing_field',
    path: '$.request_id',
  },
  {
    name: 'create_task with an empty request_id',
    side: 'server',
    raw: j({ ...createTask, request_id: '' }),
    code: 'invalid_field',
    path: '$.request_id',
  },
  {
    name: 'create_task with a number among allowed_commands',
    side: 'server',
    raw: j({ ...createTask, allowed_commands: ['fs.list', 2] }),
    code: 'invalid_field',
    path: '$.allowed_commands[1]',
    ids: { request_id: 'req-1' },
  },
  {
    name: 'create_task with allowed_commands as a string',
    side: 'server',
    raw: j({ ...createTask, allowed_commands: 'fs.list' }),
    code: 'invalid_field',
    path: '$.allowed_commands',
    ids: { request_id: 'req-1' },
  },
  {
    name: 'create_task with a null prompt',
    side: 'server',
    raw: j({ ...createTask, prompt: null }),
    code: 'invalid_field',
    path: '$.prompt',
    ids: { request_id: 'req-1' },
  },
  {
    name: 'create_task without allowed_commands',
    side: 'server',
    raw: j(without(createTask, 'allowed_commands')),
    code: 'missing_field',
    path: '$.allowed_commands',
    ids: { request_id: 'req-1' },
  },
  // command_result
  {
    name: 'successful command_result without result',
    side: 'server',
    raw: j(without(result, 'result')),
    code: 'missing_field',
    path: '$.result',
    ids,
  },
  {
    name: 'failed command_result without error',
    side: 'server',
    raw: j({ ...without(result, 'result'), ok: false }),
    code: 'missing_field',
    path: '$.error',
    ids,
  },
  {
    name: 'command_result with ok as a string',
    side: 'server',
    raw: j({ ...result, ok: 'true' }),
    code: 'invalid_field',
    path: '$.ok',
    ids,
  },
  {
    name: 'command_result error of the wrong type',
    side: 'server',
    raw: j({ ...result, ok: false, error: 42 }),
    code: 'invalid_field',
    path: '$.error',
    ids,
  },
  {
    name: 'command_result error object without message',
    side: 'server',
    raw: j({ ...result, ok: false, error: { code: 'x' } }),
    code: 'missing_field',
    path: '$.error.message',
    ids,
  },
  {
    name: 'command_result with a numeric call_id',
    side: 'server',
    raw: j({ ...result, call_id: 7 }),
    code: 'invalid_field',
    path: '$.call_id',
    ids: { task_id: 't-1' },
  },
  {
    name: 'cancel_task with a numeric task_id',
    side: 'server',
    raw: '{"type":"cancel_task","task_id":42}',
    code: 'invalid_field',
    path: '$.task_id',
  },
  {
    name: 'subscribe without task_id',
    side: 'server',
    raw: '{"type":"subscribe","request_id":"r-2"}',
    code: 'missing_field',
    path: '$.task_id',
    ids: { request_id: 'r-2' },
  },
  {
    name: 'user_answer without text',
    side: 'server',
    raw: '{"type":"user_answer","task_id":"t-1","question_id":"q-1"}',
    code: 'missing_field',
    path: '$.text',
    ids: { task_id: 't-1' },
  },
  // hello
  {
    name: 'hello with a fractional protocol_version',
    side: 'server',
    raw: j({ ...hello, protocol_version: 1.5 }),
    code: 'invalid_field',
    path: '$.protocol_version',
  },
  {
    name: 'hello with protocol_version 0',
    side: 'server',
    raw: j({ ...hello, protocol_version: 0 }),
    code: 'invalid_field',
    path: '$.protocol_version',
  },
  {
    name: 'hello without commands',
    side: 'server',
    raw: j(without(hello, 'commands')),
    code: 'missing_field',
    path: '$.commands',
  },
  {
    name: 'hello command without a name',
    side: 'server',
    raw: j({ ...hello, commands: [{ description: 'x' }] }),
    code: 'missing_field',
    path: '$.commands[0].name',
  },
  {
    name: 'hello command with a string args_schema',
    side: 'server',
    raw: j({ ...hello, commands: [{ name: 'a', args_schema: 'object' }] }),
    code: 'invalid_field',
    path: '$.commands[0].args_schema',
  },
  {
    name: 'hello with tools as an object',
    side: 'server',
    raw: j({ ...hello, tools: {} }),
    code: 'invalid_field',
    path: '$.tools',
  },
  // tools_update
  {
    name: 'tools_update without tools',
    side: 'server',
    raw: '{"type":"tools_update"}',
    code: 'missing_field',
    path: '$.tools',
  },
  {
    name: 'tools_update with an unknown status',
    side: 'server',
    raw: j({ type: 'tools_update', tools: [{ ...tool, status: 'live' }] }),
    code: 'invalid_field',
    path: '$.tools[0].status',
  },
  {
    name: 'tools_update with version 0',
    side: 'server',
    raw: j({ type: 'tools_update', tools: [tool, { ...tool, version: 0 }] }),
    code: 'invalid_field',
    path: '$.tools[1].version',
  },
  {
    name: 'tools_update with an empty tool name',
    side: 'server',
    raw: j({ type: 'tools_update', tools: [{ ...tool, name: '' }] }),
    code: 'invalid_field',
    path: '$.tools[0].name',
  },
  {
    name: 'tools_update with a negative updated_at',
    side: 'server',
    raw: j({ type: 'tools_update', tools: [{ ...tool, updated_at: -1 }] }),
    code: 'invalid_field',
    path: '$.tools[0].updated_at',
  },
  {
    name: 'tools_update tool without version',
    side: 'server',
    raw: j({ type: 'tools_update', tools: [without(tool, 'version')] }),
    code: 'missing_field',
    path: '$.tools[0].version',
  },
  // chunk
  {
    name: 'chunk index equal to count',
    side: 'server',
    raw: j({ ...chunk, index: 2 }),
    code: 'invalid_field',
    path: '$.index',
  },
  {
    name: 'chunk with count 0',
    side: 'client',
    raw: j({ ...chunk, count: 0 }),
    code: 'invalid_field',
    path: '$.count',
  },
  {
    name: 'chunk with negative index',
    side: 'client',
    raw: j({ ...chunk, index: -1 }),
    code: 'invalid_field',
    path: '$.index',
  },
  {
    name: 'chunk with numeric data',
    side: 'server',
    raw: j({ ...chunk, data: 12 }),
    code: 'invalid_field',
    path: '$.data',
  },
  // server → client messages
  {
    name: 'task_update progress above 1',
    side: 'client',
    raw: j({ ...taskUpdate, progress: 1.5 }),
    code: 'invalid_field',
    path: '$.progress',
    ids: { task_id: 't-1' },
  },
  {
    name: 'task_update progress overflowing to Infinity',
    side: 'client',
    raw: '{"type":"task_update","task_id":"t-1","status":"running","progress":1e400}',
    code: 'invalid_field',
    path: '$.progress',
    ids: { task_id: 't-1' },
  },
  {
    name: 'task_update with an unknown status',
    side: 'client',
    raw: j({ ...taskUpdate, status: 'paused' }),
    code: 'invalid_field',
    path: '$.status',
    ids: { task_id: 't-1' },
  },
  {
    name: 'welcome without max_message_bytes',
    side: 'client',
    raw: j(without(welcome, 'max_message_bytes')),
    code: 'missing_field',
    path: '$.max_message_bytes',
  },
  {
    name: 'command_call with array args',
    side: 'client',
    raw: j({ type: 'command_call', task_id: 't-1', call_id: 'c-1', command: 'fs.list', args: [] }),
    code: 'invalid_field',
    path: '$.args',
    ids,
  },
  {
    name: 'task_failed error object without code',
    side: 'client',
    raw: j({ type: 'task_failed', task_id: 't-1', error: { message: 'x' } }),
    code: 'missing_field',
    path: '$.error.code',
    ids: { task_id: 't-1' },
  },
  {
    name: 'error message without code',
    side: 'client',
    raw: '{"type":"error","message":"boom"}',
    code: 'missing_field',
    path: '$.code',
  },
  {
    name: 'ping with a numeric id',
    side: 'client',
    raw: '{"type":"ping","id":5}',
    code: 'invalid_field',
    path: '$.id',
  },
  // Size and depth.
  {
    name: 'ASCII frame one byte over the default limit',
    side: 'server',
    raw: j({
      ...createTask,
      prompt: 'x'.repeat(DEFAULT_MAX_MESSAGE_BYTES - j(createTask).length + 'Dig.'.length + 1),
    }),
    code: 'message_too_large',
    path: '$',
  },
  {
    name: 'frame under the limit in UTF-16 units but over it in UTF-8 bytes',
    side: 'server',
    raw: j({ ...createTask, prompt: 'é'.repeat(70_000) }),
    code: 'message_too_large',
    path: '$',
  },
  {
    name: 'frame over a configured limit',
    side: 'client',
    raw: j({ type: 'ping', id: 'x'.repeat(100) }),
    code: 'message_too_large',
    path: '$',
    maxBytes: 100,
  },
  {
    name: 'context nested 70 levels deep',
    side: 'server',
    raw: j({ ...createTask, context: JSON.parse('['.repeat(70) + ']'.repeat(70)) as unknown }),
    code: 'nesting_too_deep',
    path: '$',
  },
  {
    name: '100 000 opening brackets',
    side: 'server',
    raw: '['.repeat(100_000),
    code: 'nesting_too_deep',
    path: '$',
  },
];

function parse(c: { side: Side; raw: string; maxBytes?: number }): ProtocolResult<unknown> {
  const opts = c.maxBytes === undefined ? {} : { maxBytes: c.maxBytes };
  return c.side === 'server' ? parseClientMessage(c.raw, opts) : parseServerMessage(c.raw, opts);
}

describe('malformed frames', () => {
  it('has at least 30 distinct malformed inputs (issue 3 acceptance)', () => {
    expect(BAD.length).toBeGreaterThanOrEqual(30);
    expect(new Set(BAD.map((c) => `${c.side}:${c.raw}:${c.maxBytes ?? ''}`)).size).toBe(BAD.length);
    expect(new Set(BAD.map((c) => c.name)).size).toBe(BAD.length);
  });

  it.each(BAD)('rejects $name with $code at $path', (c) => {
    const r = parse(c);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error.code).toBe(c.code);
    expect(r.error.path).toBe(c.path);
    expect(r.error.message.length).toBeGreaterThan(0);
    // Exactly the ids the frame carried as strings are echoed, so the sender can match the error to its request.
    expect({
      request_id: r.error.request_id,
      call_id: r.error.call_id,
      task_id: r.error.task_id,
    }).toEqual({ request_id: undefined, call_id: undefined, task_id: undefined, ...c.ids });
    // A field-level message names the field, so a person reading a log line knows what to fix.
    if (c.path !== '$' && c.code !== 'unknown_type') expect(r.error.message).toContain(c.path);
  });

  it('covers every error code the parser can produce (guards against an untested code path)', () => {
    const produced = new Set(BAD.map((c) => c.code));
    for (const code of [
      'invalid_json',
      'message_too_large',
      'nesting_too_deep',
      'invalid_message',
      'unknown_type',
      'missing_field',
      'invalid_field',
    ] as const) {
      expect(produced.has(code)).toBe(true);
    }
  });

  it('reports a non-text frame (e.g. a binary Buffer passed by mistake) as invalid_json instead of throwing', () => {
    const r = parseClientMessage(Buffer.from('{"type":"ping"}') as unknown as string);
    expect(r).toMatchObject({ ok: false, error: { code: 'invalid_json', path: '$' } });
  });

  it('does not echo an oversized id into the error (the error reply itself must stay small)', () => {
    const r = parseClientMessage(j({ type: 'nope', request_id: 'r'.repeat(300), task_id: 't-1' }));
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error).toMatchObject({ code: 'unknown_type', task_id: 't-1' });
    expect(r.error.request_id).toBeUndefined();
  });

  it('truncates a huge unknown type in the error message', () => {
    const r = parseClientMessage(j({ type: 'x'.repeat(10_000) }));
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error.message.length).toBeLessThan(200);
  });
});

describe('accepted frames', () => {
  it('accepts a frame of exactly the limit in UTF-8 bytes (guards an off-by-one at the boundary)', () => {
    const base = j({ ...createTask, prompt: '' });
    const raw = j({
      ...createTask,
      prompt: 'é'.repeat(50) + 'x'.repeat(DEFAULT_MAX_MESSAGE_BYTES - base.length - 100),
    });
    expect(Buffer.byteLength(raw)).toBe(DEFAULT_MAX_MESSAGE_BYTES);
    expect(parseClientMessage(raw).ok).toBe(true);
    expect(parseClientMessage(raw, { maxBytes: DEFAULT_MAX_MESSAGE_BYTES - 1 }).ok).toBe(false);
  });

  it('accepts nesting at exactly the limit and counts brackets inside strings as text', () => {
    // The message is level 1 and context level 2, so 63 nested arrays reach level 64.
    const deep = JSON.parse('['.repeat(63) + ']'.repeat(63)) as unknown;
    expect(parseClientMessage(j({ ...createTask, context: deep })).ok).toBe(true);
    expect(parseClientMessage(j({ ...createTask, context: [deep] }))).toMatchObject({
      ok: false,
      error: { code: 'nesting_too_deep' },
    });
    const prompt = `quote \\" then ${'['.repeat(500)} and {{{`;
    expect(parseClientMessage(j({ ...createTask, prompt })).ok).toBe(true);
  });

  it('tolerates unknown extra fields and drops them from the value (forward compatibility)', () => {
    const r = parseClientMessage(j({ ...createTask, future_field: { x: 1 } }));
    expect(r).toEqual({ ok: true, value: createTask });
  });

  it('keeps an explicit null result of a successful command (null is a valid result, not a missing one)', () => {
    const r = parseClientMessage(j({ ...result, result: null }));
    expect(r.ok && r.value.type === 'command_result' && 'result' in r.value && r.value.result === null).toBe(
      true,
    );
  });

  it('does not let a "__proto__" key in args change the prototype of the parsed value', () => {
    const raw =
      '{"type":"command_call","task_id":"t","call_id":"c","command":"x","args":{"__proto__":{"polluted":1},"a":1}}';
    const r = parseServerMessage(raw);
    expect(r.ok).toBe(true);
    if (!r.ok || r.value.type !== 'command_call') return;
    expect(Object.getPrototypeOf(r.value.args)).toBe(Object.prototype);
    expect((r.value.args as { polluted?: unknown }).polluted).toBeUndefined();
    expect(({} as { polluted?: unknown }).polluted).toBeUndefined();
    expect(r.value.args['a']).toBe(1);
  });

  it('accepts an error frame from a client (the Lua client reports chunk_error this way)', () => {
    expect(parseClientMessage('{"type":"error","code":"chunk_error","message":"bad chunk"}').ok).toBe(true);
  });
});

describe('toErrorMessage', () => {
  it('builds an error reply that the other side parses, carrying code, path and ids', () => {
    const r = parseClientMessage(j({ ...createTask, allowed_commands: ['a', 2] }));
    expect(r.ok).toBe(false);
    if (r.ok) return;
    const reply = toErrorMessage(r.error);
    expect(reply).toEqual({
      type: 'error',
      code: 'invalid_field',
      path: '$.allowed_commands[1]',
      request_id: 'req-1',
      message: r.error.message,
    });
    expect(parseServerMessage(JSON.stringify(reply))).toEqual({ ok: true, value: reply });
  });

  it('omits ids the rejected frame did not have (no "undefined" keys on the wire)', () => {
    const r = parseClientMessage('not json');
    expect(r.ok).toBe(false);
    if (!r.ok)
      expect(Object.keys(toErrorMessage(r.error)).sort()).toEqual(['code', 'message', 'path', 'type']);
  });
});

// Deterministic mutation fuzzing: whatever arrives, the parser returns a result with a known code, never throws.
describe('robustness', () => {
  it('never throws and always returns a known code for 3000 mutated frames', () => {
    let seed = 12345;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    const seeds = [j(createTask), j(hello), j(result), j(chunk), j(taskUpdate), j(welcome)];
    const alphabet = '{}[]":,0123456789.-eEtrufalsn\\ \u00e9\ud83d\ude00\ud800x';
    const known = new Set<string>(ERROR_CODES);
    for (let n = 0; n < 3000; n++) {
      let s = seeds[rand(seeds.length)] as string;
      for (let m = 0, k = 1 + rand(4); m < k; m++) {
        const at = rand(s.length + 1);
        const op = rand(3);
        const ch = alphabet[rand(alphabet.length)] as string;
        if (op === 0) s = s.slice(0, at) + ch + s.slice(at);
        else if (op === 1) s = s.slice(0, at) + s.slice(at + 1);
        else s = s.slice(0, at) + ch + s.slice(at + 1);
      }
      for (const parseFn of [parseClientMessage, parseServerMessage]) {
        const r = parseFn(s);
        if (!r.ok) expect(known.has(r.error.code), `${r.error.code} for ${s}`).toBe(true);
      }
    }
  });
});

describe('command_result fast path', () => {
  // parseFrame builds a successful command_result without zod (one per round trip); any other shape goes through
  // the schema. Both must give the same answer, key for key, or a handler would see a different message.
  const cases: Array<Record<string, unknown>> = [
    { type: 'command_result', task_id: 't', call_id: 'c', ok: true, result: { files: ['a', 'b'], n: 1 } },
    { type: 'command_result', task_id: 't', call_id: 'c', ok: true, result: null },
    { type: 'command_result', task_id: 't', call_id: 'c', ok: true, result: 'text', extra: 1, __proto__x: 2 },
    { call_id: 'c', ok: true, result: [1, [2]], task_id: 't', type: 'command_result' },
    { type: 'command_result', task_id: 't', call_id: 'c', ok: true, result: 0, error: 'both' },
    { type: 'command_result', task_id: 't', call_id: 'c', ok: true, result: 1, error: { message: 42 } },
    { type: 'command_result', task_id: 't', call_id: 'c', ok: true },
    { type: 'command_result', task_id: '', call_id: 'c', ok: true, result: 1 },
    { type: 'command_result', task_id: 't', call_id: '', ok: true, result: 1 },
    { type: 'command_result', task_id: 7, call_id: 'c', ok: true, result: 1 },
    { type: 'command_result', task_id: 't', call_id: 'c', ok: 'true', result: 1 },
    { type: 'command_result', task_id: 't', call_id: 'c', ok: false, error: 'no such file' },
    { type: 'command_result', task_id: 't', call_id: 'c', ok: false, result: 1 },
  ];
  it.each(cases.map((c, i) => [i, c] as const))(
    'case %i gives exactly what CommandResultSchema gives (guards against the fast path accepting, dropping or reordering anything the schema would not)',
    (_i, c) => {
      const got = parseClientMessage(JSON.stringify(c));
      const want = CommandResultSchema.safeParse(c);
      expect(got.ok).toBe(want.success);
      if (got.ok && want.success) {
        expect(got.value).toStrictEqual(want.data);
        expect(Object.keys(got.value)).toEqual(Object.keys(want.data));
      }
    },
  );
});
