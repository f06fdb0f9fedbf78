/**
 * A generator of malformed and adversarial client messages for the orchestrator's WebSocket, each with the reply
 * the server must give: an `error` (with the exact code where the protocol fixes it), a `pong`, or a close of the
 * socket with one of a set of codes. Seeds are the protocol's own catalog examples; parse-level expectations come
 * from `@ccagent/protocol`'s parser (the one the server uses, applied to the exact text the server will receive),
 * semantic ones (forged ids of another client's tasks and calls) from the documented access rules.
 */
import {
  MAX_REASSEMBLED_BYTES,
  MESSAGE_CATALOG,
  parseClientMessage,
  splitIntoChunks,
} from '@ccagent/protocol';
import type { Rng } from './rng.js';

/** What a hostile message tries. */
export type HostileCategory =
  | 'invalid_json'
  | 'not_an_object'
  | 'mutated_field'
  | 'missing_field'
  | 'unknown_type'
  | 'server_only_type'
  | 'deep_nesting'
  | 'huge_string'
  | 'oversized_frame'
  | 'binary_frame'
  | 'unicode_garbage'
  | 'prototype_keys'
  | 'chunk_abuse'
  | 'forged_result'
  | 'forged_task_access'
  | 'forged_create'
  | 'second_hello'
  | 'ping'
  | 'close_before_hello'
  | 'frame_over_hard_cap'
  | 'invalid_utf8';

/** The reply the server owes a hostile message. */
export type Expectation =
  | { kind: 'error'; codes?: readonly string[] }
  | { kind: 'pong' }
  | {
      kind: 'close';
      codes: readonly number[];
      /** Send the frames on a fresh socket before any `hello` (otherwise after a valid `hello`). */
      beforeHello: boolean;
    };

/** One hostile message: the frames to send (usually one) and the reply expected after the last frame. */
export interface HostileMessage {
  category: HostileCategory;
  /** Strings go as text frames; Buffers as binary frames unless `buffersAsText` (raw bytes in a text frame). */
  frames: Array<string | Buffer>;
  buffersAsText?: boolean;
  expect: Expectation;
}

/** What the generator may aim at. */
export interface HostileTargets {
  /** The attacking client's own id (its connection said `hello` with it). */
  clientId: string;
  /** Another connected client, whose tasks and calls are forged. */
  victimClientId: string;
  victimTaskIds: readonly string[];
  /** call_ids currently pending for the victim (sent to it, not to the attacker). */
  victimCallIds: readonly string[];
  /** The server's `max_message_bytes`. */
  maxMessageBytes: number;
  /** Hard frame cap above which the socket is closed (1009): max(8 × maxMessageBytes, 1 MiB). */
  hardFrameCap: number;
}

const CLIENT_SEEDS = MESSAGE_CATALOG.filter((m) => m.direction !== 'server_to_client').flatMap((m) =>
  m.examples.map((e) => ({ type: m.type, example: e })),
);
const SERVER_ONLY = MESSAGE_CATALOG.filter((m) => m.direction === 'server_to_client').flatMap((m) =>
  m.examples.map((e) => e),
);

/** Weighted categories of the main stream (close-kind ones are rarer: each costs a connection). */
const WEIGHTS: ReadonlyArray<[HostileCategory, number]> = [
  ['invalid_json', 10],
  ['not_an_object', 4],
  ['mutated_field', 20],
  ['missing_field', 8],
  ['unknown_type', 5],
  ['server_only_type', 4],
  ['deep_nesting', 4],
  ['huge_string', 2],
  ['oversized_frame', 1],
  ['binary_frame', 2],
  ['unicode_garbage', 4],
  ['prototype_keys', 3],
  ['chunk_abuse', 6],
  ['forged_result', 8],
  ['forged_task_access', 8],
  ['forged_create', 3],
  ['second_hello', 2],
  ['ping', 2],
  ['close_before_hello', 0.6],
  ['frame_over_hard_cap', 0.1],
  ['invalid_utf8', 0.3],
];
const TOTAL_WEIGHT = WEIGHTS.reduce((s, [, w]) => s + w, 0);

/** What the server sees of a JS string sent as a text frame (lone surrogates become U+FFFD). */
function onTheWire(text: string): string {
  return Buffer.from(text, 'utf8').toString('utf8');
}

/** Expected reply to a text frame the server parses itself: the parser's error code. */
function parseExpectation(text: string, maxBytes: number): Expectation | undefined {
  const r = parseClientMessage(onTheWire(text), { maxBytes });
  return r.ok ? undefined : { kind: 'error', codes: [r.error.code] };
}

/** The parser's error, or a pong for a frame that turned out to be a valid `ping`; undefined for other valid ones. */
function replyTo(text: string, maxBytes: number): Expectation | undefined {
  const r = parseClientMessage(onTheWire(text), { maxBytes });
  if (!r.ok) return { kind: 'error', codes: [r.error.code] };
  return r.value.type === 'ping' ? { kind: 'pong' } : undefined;
}

function clone<T>(v: T): T {
  return JSON.parse(JSON.stringify(v)) as T;
}

/**
 * Create a generator. Every call returns a new message; all randomness comes from `rng`, so a seed replays a run.
 */
export function createHostileGenerator(rng: Rng, targets: HostileTargets): () => HostileMessage {
  let serial = 0;
  const uid = (p: string): string => `${p}-${(serial++).toString(36)}-${rng.int(0, 1e9).toString(36)}`;

  const wrongValue = (): unknown =>
    rng.pick<() => unknown>([
      () => null,
      () => rng.int(-1e9, 1e9),
      () => -0.5,
      () => 1e308,
      () => true,
      () => '',
      () => 'x'.repeat(rng.int(1, 300)),
      () => [],
      () => [1, 'a', null],
      () => ({}),
      () => ({ nested: { deeper: [1] } }),
      () => '\u0000\u0001\u001f',
      () => '🙂'.repeat(rng.int(1, 50)),
    ])();

  /** Mutate a catalog example until the parser rejects it (a valid mutant could do real work). */
  const mutant = (mode: 'mutated_field' | 'missing_field'): HostileMessage => {
    for (let tries = 0; tries < 20; tries++) {
      const seed = rng.pick(CLIENT_SEEDS);
      const obj = clone(seed.example) as Record<string, unknown>;
      const keys = Object.keys(obj).filter((k) => k !== 'type');
      if (keys.length === 0) continue;
      const key = rng.pick(keys);
      if (mode === 'missing_field') delete obj[key];
      else if (rng.next() < 0.2 && typeof obj[key] === 'object' && obj[key] !== null) {
        // Mutate one level down (e.g. commands[0].args_schema, error.message).
        const inner = obj[key] as Record<string, unknown>;
        const innerKeys = Object.keys(inner);
        if (innerKeys.length > 0) inner[rng.pick(innerKeys)] = wrongValue();
      } else obj[key] = wrongValue();
      const text = JSON.stringify(obj);
      const expect = parseExpectation(text, targets.maxMessageBytes);
      if (expect) return { category: mode, frames: [text], expect };
    }
    return invalidJson();
  };

  const invalidJson = (): HostileMessage => {
    for (;;) {
      const seed = JSON.stringify(rng.pick(CLIENT_SEEDS).example);
      const text = rng.pick<() => string>([
        () => seed.slice(0, rng.int(0, Math.max(0, seed.length - 1))),
        () => seed.replace(/"/, ''),
        () => `${seed}}`,
        () => `{"type":"ping",}`,
        () => '',
        () => ' ',
        () => 'undefined',
        () => 'NaN',
        () => "{'type':'ping'}",
        () => `{"type":"ping"}${'\u0000'}`,
        () => Array.from({ length: rng.int(1, 200) }, () => String.fromCharCode(rng.int(32, 126))).join(''),
      ])();
      // A truncation can still be valid JSON of some shape: the parser decides what the server must say.
      const expect = replyTo(text, targets.maxMessageBytes);
      if (expect) return { category: 'invalid_json', frames: [text], expect };
    }
  };

  const deepNesting = (): HostileMessage => {
    const depth = rng.pick([65, 100, 1000, 20_000, 60_000]);
    const open = rng.next() < 0.5 ? '['.repeat(depth) : '{"a":'.repeat(depth);
    const close = open.startsWith('[') ? ']'.repeat(depth) : '}'.repeat(depth);
    const text = `{"type":"ping","x":${open}1${close}}`;
    return {
      category: 'deep_nesting',
      frames: [text],
      expect: replyTo(text, targets.maxMessageBytes) ?? { kind: 'pong' },
    };
  };

  const hugeString = (): HostileMessage => {
    // Under the frame limit: parsed, then refused for what it asks (another client's task, an unknown call).
    const room = targets.maxMessageBytes - 600;
    const big = 'A'.repeat(rng.int(Math.floor(room / 2), room));
    if (rng.next() < 0.5) {
      return {
        category: 'huge_string',
        frames: [
          JSON.stringify({
            type: 'create_task',
            request_id: uid('big'),
            task_kind: 'general',
            client_id: targets.victimClientId,
            prompt: big,
            allowed_commands: [],
          }),
        ],
        expect: { kind: 'error', codes: ['forbidden'] },
      };
    }
    return {
      category: 'huge_string',
      frames: [
        JSON.stringify({
          type: 'command_result',
          task_id: uid('task'),
          call_id: uid('call'),
          ok: true,
          result: { output: big },
        }),
      ],
      expect: { kind: 'error', codes: ['unknown_call'] },
    };
  };

  const oversized = (): HostileMessage => {
    const size = rng.int(targets.maxMessageBytes + 1, Math.min(targets.hardFrameCap - 1, 512 * 1024));
    const text = JSON.stringify({ type: 'ping', pad: 'B'.repeat(size) });
    return {
      category: 'oversized_frame',
      frames: [text],
      expect: { kind: 'error', codes: ['message_too_large'] },
    };
  };

  const unicodeGarbage = (): HostileMessage => {
    const junk = rng.pick([
      '\ud800',
      '\udfff\ud800',
      '\ufeff',
      '\u202e',
      '\u0000',
      'é'.normalize('NFD'),
      '𝕏'.repeat(9),
    ]);
    const text = rng.pick<() => string>([
      () => `${junk}{"type":"ping"}`,
      () => `{"type":"ping${junk}"}`,
      () => JSON.stringify({ type: 'cancel_task', task_id: junk }),
      () => JSON.stringify({ type: 'subscribe', task_id: `${junk}${uid('t')}` }),
      () => `{"type":"create_task","request_id":"${junk}","task_kind":7}`,
    ])();
    const expect = parseExpectation(text, targets.maxMessageBytes);
    // Valid ones name tasks that do not exist.
    return {
      category: 'unicode_garbage',
      frames: [text],
      expect: expect ?? { kind: 'error', codes: ['not_found'] },
    };
  };

  const prototypeKeys = (): HostileMessage => {
    const text = rng.pick([
      '{"type":"ping","__proto__":{"polluted":true}}',
      '{"__proto__":{"type":"hello"},"type":"ping"}',
      '{"type":"ping","constructor":{"prototype":{"polluted":true}}}',
      '{"type":"__proto__"}',
      '{"type":"constructor"}',
      '{"type":"toString"}',
      `{"type":"subscribe","task_id":"__proto__"}`,
      `{"type":"cancel_task","task_id":"constructor"}`,
    ]);
    const expect = parseExpectation(text, targets.maxMessageBytes);
    return {
      category: 'prototype_keys',
      frames: [text],
      expect:
        expect ?? (text.includes('"ping"') ? { kind: 'pong' } : { kind: 'error', codes: ['not_found'] }),
    };
  };

  const chunkAbuse = (): HostileMessage => {
    const id = uid('ch');
    const inner = rng.pick<() => { text: string; expect: Expectation }>([
      () => ({ text: '{"type":"ping"}', expect: { kind: 'pong' } }),
      () => {
        const t = `{"type":"subscribe","task_id":${JSON.stringify(rng.pick(targets.victimTaskIds))}}`;
        return { text: t, expect: { kind: 'error', codes: ['forbidden'] } };
      },
      () => {
        const t = '{"type":"create_task"';
        return { text: t, expect: parseExpectation(t, MAX_REASSEMBLED_BYTES) as Expectation };
      },
      () => {
        const t = JSON.stringify({ type: 'chunk', chunk_id: 'x', index: 0, count: 1, data: '{}' });
        return { text: t, expect: { kind: 'error', codes: ['invalid_message'] } };
      },
    ])();
    const overhead = JSON.stringify({ type: 'chunk', chunk_id: id, index: 999, count: 999, data: '' }).length;
    const pieces = splitIntoChunks(inner.text, overhead + rng.int(12, 40), id);
    const variant = rng.int(0, 3);
    if (variant === 0 || pieces.length < 2) {
      // Well-formed chunking of a hostile message: the reply is the inner message's.
      return {
        category: 'chunk_abuse',
        frames: pieces.map((p) => JSON.stringify(p)),
        expect: inner.expect,
      };
    }
    const first = pieces[0] as unknown as Record<string, unknown>;
    if (variant === 1) {
      // The count changes mid-transfer.
      const bad = { ...first, index: 1, count: Number(first.count) + 1 };
      return {
        category: 'chunk_abuse',
        frames: [JSON.stringify(first), JSON.stringify(bad)],
        expect: { kind: 'error', codes: ['chunk_error'] },
      };
    }
    if (variant === 2) {
      // The same index twice.
      return {
        category: 'chunk_abuse',
        frames: [JSON.stringify(first), JSON.stringify(first)],
        expect: { kind: 'error', codes: ['chunk_error'] },
      };
    }
    // An index out of range, or a nonsense count: refused by the parser.
    const text = JSON.stringify({ ...first, index: rng.pick([-1, 5, 1.5]), count: rng.pick([0, 2, -3]) });
    return {
      category: 'chunk_abuse',
      frames: [text],
      expect: parseExpectation(text, targets.maxMessageBytes) ?? { kind: 'error', codes: ['chunk_error'] },
    };
  };

  const forgedResult = (): HostileMessage => {
    const useVictim = targets.victimCallIds.length > 0 && rng.next() < 0.6;
    const callId = useVictim ? rng.pick(targets.victimCallIds) : uid('call');
    const taskId = useVictim
      ? rng.next() < 0.8
        ? callId.split(':call:')[0]
        : rng.pick(targets.victimTaskIds)
      : rng.next() < 0.5
        ? rng.pick(targets.victimTaskIds)
        : uid('task');
    return {
      category: 'forged_result',
      frames: [
        JSON.stringify({
          type: 'command_result',
          task_id: taskId,
          call_id: callId,
          ok: true,
          result: { pwned: true },
        }),
      ],
      // A call sent to the victim: forbidden for anyone else; an unknown call: unknown_call.
      expect: {
        kind: 'error',
        codes: useVictim ? ['forbidden', 'unknown_call'] : ['unknown_call', 'forbidden'],
      },
    };
  };

  const forgedTaskAccess = (): HostileMessage => {
    const own = rng.next() < 0.75;
    const taskId = own ? rng.pick(targets.victimTaskIds) : uid('nosuch');
    const msg = rng.pick<() => Record<string, unknown>>([
      () => ({ type: 'cancel_task', task_id: taskId, request_id: uid('r') }),
      () => ({ type: 'subscribe', task_id: taskId, request_id: uid('r') }),
      () => ({ type: 'user_answer', task_id: taskId, question_id: uid('q'), text: 'rm -rf /' }),
    ])();
    return {
      category: 'forged_task_access',
      frames: [JSON.stringify(msg)],
      expect: { kind: 'error', codes: [own ? 'forbidden' : 'not_found'] },
    };
  };

  const forgedCreate = (): HostileMessage => {
    const valid = rng.next() < 0.6;
    return {
      category: 'forged_create',
      frames: [
        JSON.stringify({
          type: 'create_task',
          request_id: uid('req'),
          // For the victim (forbidden), or for itself with a kind that does not exist (invalid_field).
          client_id: valid ? targets.victimClientId : targets.clientId,
          task_kind: valid ? 'general' : `no_such_kind_${rng.int(0, 1e6)}`,
          prompt: 'do something to that computer',
          allowed_commands: [],
        }),
      ],
      expect: { kind: 'error', codes: [valid ? 'forbidden' : 'invalid_field'] },
    };
  };

  const secondHello = (): HostileMessage => {
    const otherId = rng.next() < 0.7;
    return {
      category: 'second_hello',
      frames: [
        JSON.stringify({
          type: 'hello',
          client_id: otherId ? targets.victimClientId : targets.clientId,
          protocol_version: otherId ? 1 : rng.pick([2, 99, 1_000_000]),
          commands: [],
        }),
      ],
      expect: { kind: 'error', codes: [otherId ? 'forbidden' : 'protocol_version'] },
    };
  };

  const closeBeforeHello = (): HostileMessage => {
    const pick = rng.int(0, 4);
    if (pick === 0) {
      return {
        category: 'close_before_hello',
        frames: [Buffer.from([0xde, 0xad, 0xbe, 0xef])],
        expect: { kind: 'close', codes: [4005], beforeHello: true },
      };
    }
    if (pick === 1) {
      // A valid message, but not hello.
      return {
        category: 'close_before_hello',
        frames: [JSON.stringify({ type: 'subscribe', task_id: rng.pick(targets.victimTaskIds) })],
        expect: { kind: 'close', codes: [4001], beforeHello: true },
      };
    }
    const m = mutant('mutated_field');
    return {
      category: 'close_before_hello',
      frames: m.frames,
      expect: { kind: 'close', codes: [4005, 4001], beforeHello: true },
    };
  };

  return () => {
    let r = rng.next() * TOTAL_WEIGHT;
    let category: HostileCategory = 'invalid_json';
    for (const [c, w] of WEIGHTS) {
      r -= w;
      if (r < 0) {
        category = c;
        break;
      }
    }
    switch (category) {
      case 'invalid_json':
        return invalidJson();
      case 'not_an_object': {
        const text = rng.pick(['1', '"hello"', 'null', 'true', '[]', '[{"type":"ping"}]', '-0', '1e999']);
        return {
          category,
          frames: [text],
          expect: parseExpectation(text, targets.maxMessageBytes) as Expectation,
        };
      }
      case 'mutated_field':
      case 'missing_field':
        return mutant(category);
      case 'unknown_type': {
        const type = rng.pick([
          '',
          'PING',
          'exec',
          'shell',
          'admin',
          'x'.repeat(500),
          'command_call ',
          'hello\u0000',
        ]);
        const text = JSON.stringify({ type, task_id: 't' });
        return {
          category,
          frames: [text],
          expect: parseExpectation(text, targets.maxMessageBytes) as Expectation,
        };
      }
      case 'server_only_type': {
        const text = JSON.stringify(rng.pick(SERVER_ONLY));
        return {
          category,
          frames: [text],
          expect: parseExpectation(text, targets.maxMessageBytes) as Expectation,
        };
      }
      case 'deep_nesting':
        return deepNesting();
      case 'huge_string':
        return hugeString();
      case 'oversized_frame':
        return oversized();
      case 'binary_frame':
        return {
          category,
          frames: [Buffer.from(JSON.stringify({ type: 'ping' }))],
          expect: { kind: 'error', codes: ['invalid_json'] },
        };
      case 'unicode_garbage':
        return unicodeGarbage();
      case 'prototype_keys':
        return prototypeKeys();
      case 'chunk_abuse':
        return chunkAbuse();
      case 'forged_result':
        return forgedResult();
      case 'forged_task_access':
        return forgedTaskAccess();
      case 'forged_create':
        return forgedCreate();
      case 'second_hello':
        return secondHello();
      case 'ping':
        return {
          category,
          frames: [JSON.stringify({ type: 'ping', id: uid('p') })],
          expect: { kind: 'pong' },
        };
      case 'close_before_hello':
        return closeBeforeHello();
      case 'frame_over_hard_cap':
        return {
          category,
          frames: [JSON.stringify({ type: 'ping', pad: 'C'.repeat(targets.hardFrameCap + 1024) })],
          expect: { kind: 'close', codes: [1009], beforeHello: false },
        };
      case 'invalid_utf8':
        return {
          category,
          // Sent as a TEXT frame by the driver: bytes that are not UTF-8.
          frames: [Buffer.from([0x7b, 0x22, 0xc3, 0x28, 0x22, 0x7d])],
          buffersAsText: true,
          expect: { kind: 'close', codes: [1007], beforeHello: false },
        };
    }
  };
}
