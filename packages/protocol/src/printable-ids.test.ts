/**
 * Identifiers that computers choose are printable at the protocol edge: a client id, command or tool name, request or
 * chunk id holding ESC, CR, a bidi override or a space is refused with an `invalid_field` error naming the field and
 * the allowed characters, on the WebSocket and on the HTTP bodies that carry such ids.
 */
import { describe, expect, it } from 'vitest';
import {
  CreateTaskBodySchema,
  EnrollBodySchema,
  ID_CHARSET_MESSAGE,
  MinecraftTaskBodySchema,
  PairBodySchema,
  PairRequestBodySchema,
  parseClientMessage,
} from './index.js';

const HOSTILE = [
  'pc-1\u001b[31mRED',
  'pc-1\r\u001b[2Kapproved',
  'pc\u001b]0;pwned\u0007',
  'pc\u009b2J',
  'pc\u202e1-cp',
  'pc\u200b1',
  'my turtle',
  'pc\n2',
  'Küche',
];

const hello = (over: Record<string, unknown>) =>
  JSON.stringify({ type: 'hello', client_id: 'pc-1', protocol_version: 1, commands: [], ...over });

describe('ids at the WebSocket edge', () => {
  it.each(HOSTILE)(
    'refuses the client id %j with invalid_field at $.client_id (guards against a terminal obeying it)',
    (bad) => {
      const r = parseClientMessage(hello({ client_id: bad }));
      expect(r.ok).toBe(false);
      if (r.ok) return;
      expect(r.error.code).toBe('invalid_field');
      expect(r.error.path).toBe('$.client_id');
      expect(r.error.message).toContain(ID_CHARSET_MESSAGE);
    },
  );

  it('refuses hostile command names, tool names, request ids, chunk ids, event names, task kinds and ping ids', () => {
    const bad = 'x\u001b[2J';
    const cases: [string, string][] = [
      [hello({ commands: [{ name: bad }] }), '$.commands[0].name'],
      [hello({ tools: [{ name: bad, status: 'active', version: 1 }] }), '$.tools[0].name'],
      [
        JSON.stringify({ type: 'tools_update', tools: [{ name: bad, status: 'draft', version: 1 }] }),
        '$.tools[0].name',
      ],
      [
        JSON.stringify({
          type: 'create_task',
          request_id: bad,
          task_kind: 'agent',
          client_id: 'pc-1',
          prompt: 'p',
          allowed_commands: [],
        }),
        '$.request_id',
      ],
      [
        JSON.stringify({
          type: 'create_task',
          request_id: 'r-1',
          task_kind: 'agent',
          client_id: 'pc-1',
          prompt: 'p',
          allowed_commands: ['fs.list', bad],
        }),
        '$.allowed_commands[1]',
      ],
      [
        JSON.stringify({
          type: 'create_task',
          request_id: 'r-1',
          task_kind: bad,
          client_id: 'pc-1',
          prompt: 'p',
          allowed_commands: [],
        }),
        '$.task_kind',
      ],
      [JSON.stringify({ type: 'task_event', task_id: 't-1', name: bad }), '$.name'],
      [JSON.stringify({ type: 'ping', id: bad }), '$.id'],
      [JSON.stringify({ type: 'chunk', chunk_id: bad, index: 0, total: 2, data: '{' }), '$.chunk_id'],
    ];
    for (const [raw, path] of cases) {
      const r = parseClientMessage(raw);
      expect(r.ok, raw).toBe(false);
      if (r.ok) continue;
      expect({ code: r.error.code, path: r.error.path }, raw).toEqual({ code: 'invalid_field', path });
      expect(r.error.message).toContain(ID_CHARSET_MESSAGE);
    }
  });

  it('accepts the ids ccagent and the Lua client make', () => {
    const r = parseClientMessage(
      hello({
        client_id: 'computer-12',
        commands: [{ name: 'fs.list' }, { name: 'turtle_forward' }],
        tools: [{ name: 'mine-row', status: 'active', version: 2 }],
      }),
    );
    expect(r.ok).toBe(true);
    expect(
      parseClientMessage(
        JSON.stringify({
          type: 'create_task',
          request_id: 'req-computer-12-1732700000000-3',
          task_kind: 'general_agent',
          client_id: 'computer-12',
          prompt: 'anything \u001b goes in a prompt: it is text, shown inert',
          allowed_commands: ['fs.list'],
        }),
      ).ok,
    ).toBe(true);
    expect(parseClientMessage(hello({ client_id: 'x'.repeat(201) })).ok).toBe(false);
  });
});

describe('ids in HTTP bodies', () => {
  it('refuses hostile client ids in pairing, enrollment and task creation, and hostile instance ids', () => {
    const bad = 'pc\u001b[31m';
    expect(PairRequestBodySchema.safeParse({ client_id: bad }).success).toBe(false);
    expect(PairBodySchema.safeParse({ code: 'ABCDE-FGHJK', client_id: bad }).success).toBe(false);
    expect(EnrollBodySchema.safeParse({ client_id: bad }).success).toBe(false);
    expect(CreateTaskBodySchema.safeParse({ task_kind: 'k', prompt: 'p', client_id: bad }).success).toBe(
      false,
    );
    expect(CreateTaskBodySchema.safeParse({ task_kind: 'k', prompt: 'p', request_id: 'a b' }).success).toBe(
      false,
    );
    expect(MinecraftTaskBodySchema.safeParse({ instance_id: bad, prompt: 'p', model: 'm' }).success).toBe(
      false,
    );
    const r = PairRequestBodySchema.safeParse({ client_id: 'pc 1' });
    expect(r.error?.issues[0]?.message).toBe(ID_CHARSET_MESSAGE);
    expect(PairRequestBodySchema.safeParse({ client_id: 'pc-1' }).success).toBe(true);
  });
});
