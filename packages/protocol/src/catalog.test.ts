import { describe, expect, it } from 'vitest';
import {
  CLIENT_MESSAGE_TYPES,
  ClientMessageSchema,
  MESSAGE_CATALOG,
  SERVER_MESSAGE_TYPES,
  ServerMessageSchema,
  parseClientMessage,
  parseServerMessage,
} from './index.js';

const unionTypes = (schema: typeof ClientMessageSchema | typeof ServerMessageSchema) =>
  schema.options.map((o) => o.shape.type.value as string).sort();

describe('message catalog', () => {
  it('lists each type once and gives each at least one example', () => {
    const types = MESSAGE_CATALOG.map((m) => m.type);
    expect(new Set(types).size).toBe(types.length);
    for (const m of MESSAGE_CATALOG) expect(m.examples.length, m.type).toBeGreaterThan(0);
  });

  it('agrees with the zod unions on who sends what (guards against a message parsed but undocumented)', () => {
    expect([...CLIENT_MESSAGE_TYPES].sort()).toEqual(unionTypes(ClientMessageSchema));
    expect([...SERVER_MESSAGE_TYPES].sort()).toEqual(unionTypes(ServerMessageSchema));
  });

  it('covers every message of the base spec and the documented extensions', () => {
    const spec = ['create_task', 'command_result', 'cancel_task', 'ping', 'task_created', 'task_update'];
    const spec2 = ['task_completed', 'task_failed', 'command_call', 'error'];
    const ext = ['hello', 'welcome', 'pong', 'ask_user', 'user_answer', 'subscribe', 'unsubscribe', 'chunk'];
    const ext2 = [
      'command_ack',
      'tools_update',
      'command_cancel',
      'task_message',
      'task_event',
      'screen_frame',
      'screen_switch',
    ];
    const byType = new Map(MESSAGE_CATALOG.map((m) => [m.type, m]));
    for (const t of [...spec, ...spec2]) expect(byType.get(t)?.extension, t).toBe(false);
    for (const t of [...ext, ...ext2]) expect(byType.get(t)?.extension, t).toBe(true);
    expect(byType.size).toBe(spec.length + spec2.length + ext.length + ext2.length);
  });

  const examples = MESSAGE_CATALOG.flatMap((m) => m.examples.map((example, i) => ({ m, example, i })));

  it.each(examples)('$m.type example $i parses on every receiving side, unchanged', ({ m, example }) => {
    const raw = JSON.stringify(example);
    if (m.direction !== 'server_to_client')
      expect(parseClientMessage(raw)).toEqual({ ok: true, value: example });
    if (m.direction !== 'client_to_server')
      expect(parseServerMessage(raw)).toEqual({ ok: true, value: example });
  });

  it.each(MESSAGE_CATALOG.filter((m) => m.direction !== 'both'))(
    '$type is refused by the side that only sends it',
    (m) => {
      const raw = JSON.stringify(m.examples[0]);
      const r = m.direction === 'client_to_server' ? parseServerMessage(raw) : parseClientMessage(raw);
      expect(r).toMatchObject({ ok: false, error: { code: 'unknown_type' } });
    },
  );
});
