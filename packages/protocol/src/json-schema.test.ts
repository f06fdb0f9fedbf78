import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import {
  MESSAGE_CATALOG,
  ProtocolError,
  messageJsonSchema,
  parseClientMessage,
  parseServerMessage,
  protocolJsonSchema,
} from './index.js';

// A real JSON Schema validator checks that the exported schemas say what the zod parsers do.
const ajv = new Ajv2020({ strict: false, allErrors: true });
const validators = new Map(MESSAGE_CATALOG.map((m) => [m.type, ajv.compile(messageJsonSchema(m.type))]));
const validate = (value: { type: string; [key: string]: unknown }) => {
  const v = validators.get(value.type);
  if (v === undefined) throw new Error(`no validator for ${value.type}`);
  return v(value);
};

describe('JSON Schema export', () => {
  it.each(MESSAGE_CATALOG)('the $type schema accepts every catalog example', (m) => {
    for (const example of m.examples)
      expect(validate(example as { type: string }), JSON.stringify(example)).toBe(true);
  });

  it('tolerates unknown extra fields like the parser does', () => {
    expect(validate({ type: 'cancel_task', task_id: 't', later_field: 1 })).toBe(true);
  });

  // Field-level rejections the parser makes; the JSON Schema must reject them too.
  const rejected: Array<Record<string, unknown> & { type: string }> = [
    { type: 'create_task', task_kind: 'a', client_id: 'c', prompt: 'p', allowed_commands: [] },
    {
      type: 'create_task',
      request_id: '',
      task_kind: 'a',
      client_id: 'c',
      prompt: 'p',
      allowed_commands: [],
    },
    {
      type: 'create_task',
      request_id: 'r',
      task_kind: 'a',
      client_id: 'c',
      prompt: 'p',
      allowed_commands: [1],
    },
    { type: 'command_result', task_id: 't', call_id: 'c', ok: true },
    { type: 'command_result', task_id: 't', call_id: 'c', ok: false },
    { type: 'command_result', task_id: 't', call_id: 'c', ok: false, error: 42 },
    { type: 'hello', client_id: 'c', protocol_version: 1.5, commands: [] },
    { type: 'tools_update', tools: [{ name: 'a', status: 'live', version: 1 }] },
    { type: 'tools_update', tools: [{ name: 'a', status: 'draft', version: 0 }] },
    { type: 'task_update', task_id: 't', status: 'running', progress: 1.5 },
    { type: 'task_update', task_id: 't', status: 'paused' },
    { type: 'command_call', task_id: 't', call_id: 'c', command: 'x', args: [] },
    { type: 'task_failed', task_id: 't', error: { message: 'x' } },
    { type: 'error', message: 'x' },
  ];

  it.each(rejected)('rejects what the parser rejects: %j', (value) => {
    const raw = JSON.stringify(value);
    const parsed =
      MESSAGE_CATALOG.find((m) => m.type === value.type)?.direction === 'server_to_client'
        ? parseServerMessage(raw)
        : parseClientMessage(raw);
    expect(parsed.ok).toBe(false);
    expect(validate(value)).toBe(false);
  });

  it('bundles every message into one document whose client/server unions accept only their side', () => {
    const doc = protocolJsonSchema();
    const anyMessage = ajv.compile(doc);
    const defs = doc['$defs'] as Record<string, unknown>;
    const client = ajv.compile({ $ref: `${String(doc['$id'])}#/$defs/client_message` });
    const server = ajv.compile({ $ref: `${String(doc['$id'])}#/$defs/server_message` });
    for (const m of MESSAGE_CATALOG) {
      expect(defs[m.type], m.type).toBeDefined();
      const example = m.examples[0];
      expect(anyMessage(example), m.type).toBe(true);
      expect(client(example), `client ${m.type}`).toBe(m.direction !== 'server_to_client');
      expect(server(example), `server ${m.type}`).toBe(m.direction !== 'client_to_server');
    }
    expect(anyMessage({ type: 'launch_missiles' })).toBe(false);
  });

  it('returns a copy, so a caller mutating it cannot corrupt later calls', () => {
    const a = messageJsonSchema('ping');
    a['type'] = 'array';
    expect(messageJsonSchema('ping')['type']).toBe('object');
  });

  it('throws ProtocolError(unknown_type) for a type that does not exist', () => {
    expect(() => messageJsonSchema('nope')).toThrow(ProtocolError);
    try {
      messageJsonSchema('nope');
    } catch (e) {
      expect((e as ProtocolError).code).toBe('unknown_type');
    }
  });
});
