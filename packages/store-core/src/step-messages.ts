/**
 * Packing of model inputs in the step log (schema version 5). A model call repeats nearly all of the previous call's
 * messages, so each message is stored once in `step_messages`, keyed by the SHA-256 of its JSON text, and so are runs
 * of message hashes ("chunks"): the step keeps its input with `messages` replaced by the hashes of its chunks
 * (`steps.input_packed`). Chunks end where a message's hash says so (content-defined, about 1 message in 16, at most
 * {@link MAX_CHUNK} long), so two prompts sharing a run of messages share its chunks even when the run starts at
 * another index (the native loop's window moves its first turn every few calls): a model step writes its new
 * messages, the chunk(s) at its end, and one hash per chunk, instead of the whole prompt or one hash per message.
 *
 * The round trip is exact: the packed text is `JSON.stringify` of the input with only `messages` changed (the same key
 * in the same place), each message body is `JSON.stringify` of the message, and reading parses the packed text and
 * puts each parsed message back in order, so the value read is the one the whole input's JSON text would have given,
 * and its `JSON.stringify` is that text.
 */
import { createHash } from 'node:crypto';
import type { JsonValue } from '@ccagent/engine';
import { StoreError } from './store-error.js';

/**
 * Smallest total JSON text of an input's messages (characters) worth packing. Below it the hashes and the rows of
 * new messages and chunks cost about what they save; such inputs are stored whole.
 */
export const PACK_MIN_MESSAGES_CHARS = 1024;

/** Longest chunk (messages): a run without a content-defined end is cut here. */
export const MAX_CHUNK = 64;

/** A row to store in `step_messages`: a hash and the JSON text it is the hash of (a message, or a chunk). */
export interface StepMessage {
  hash: string;
  body: string;
}

/** An input as the step row stores it packed, and the rows it references (distinct: messages, then chunks). */
export interface PackedInput {
  packed: string;
  messages: StepMessage[];
}

/** SHA-256 of a JSON text, base64url (43 characters). */
export function messageHash(body: string): string {
  return createHash('sha256').update(body).digest('base64url');
}

/** Most characters of message text {@link MessageHashMemo} keeps (about the last few prompts of a long task). */
export const HASH_MEMO_CHARS = 2 * 1024 * 1024;

/**
 * The hashes of the messages hashed last, by their JSON text: a model call's prompt repeats the previous one's
 * messages, so most of its messages are looked up here instead of hashed again. Bounded by total text
 * ({@link HASH_MEMO_CHARS}); the oldest entries go first.
 */
export class MessageHashMemo {
  private readonly hashes = new Map<string, string>();
  private chars = 0;

  constructor(private readonly capChars = HASH_MEMO_CHARS) {}

  /** The hash of `body` ({@link messageHash}), remembered. */
  readonly hash = (body: string): string => {
    let h = this.hashes.get(body);
    if (h !== undefined) return h;
    h = messageHash(body);
    if (body.length <= this.capChars) {
      this.hashes.set(body, h);
      this.chars += body.length;
      for (const old of this.hashes.keys()) {
        if (this.chars <= this.capChars) break;
        this.hashes.delete(old);
        this.chars -= old.length;
      }
    }
    return h;
  };

  /** Messages remembered (for tests). */
  get size(): number {
    return this.hashes.size;
  }
}

/** Whether a chunk ends after the message of this hash: 4 of the 64 base64url digits, about 1 message in 16. */
function endsChunk(hash: string): boolean {
  const c = hash.charCodeAt(0);
  return c >= 65 && c <= 68; // 'A'..'D'
}

/**
 * The packed form of a model input, or `undefined` when it is stored whole: not an object with a non-empty
 * `messages` array, a message that has no JSON text (`undefined` in the array), or messages totalling fewer than
 * {@link PACK_MIN_MESSAGES_CHARS} characters.
 */
export function packStepInput(
  input: JsonValue | undefined,
  hashOf: (body: string) => string = messageHash,
): PackedInput | undefined {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) return undefined;
  const list = input.messages;
  if (!Array.isArray(list) || list.length === 0) return undefined;
  const bodies: string[] = new Array<string>(list.length);
  let total = 0;
  for (let i = 0; i < list.length; i++) {
    const body = JSON.stringify(list[i]) as string | undefined;
    if (typeof body !== 'string') return undefined;
    bodies[i] = body;
    total += body.length;
  }
  if (total < PACK_MIN_MESSAGES_CHARS) return undefined;
  const rows: StepMessage[] = [];
  const seen = new Set<string>();
  const add = (hash: string, body: string) => {
    if (!seen.has(hash)) {
      seen.add(hash);
      rows.push({ hash, body });
    }
  };
  const chunks: string[] = [];
  let run: string[] = [];
  const endRun = () => {
    const body = JSON.stringify(run);
    const hash = hashOf(body);
    chunks.push(hash);
    add(hash, body);
    run = [];
  };
  for (let i = 0; i < bodies.length; i++) {
    const body = bodies[i] as string;
    const hash = hashOf(body);
    add(hash, body);
    run.push(hash);
    if (endsChunk(hash) || run.length === MAX_CHUNK) endRun();
  }
  if (run.length > 0) endRun();
  return { packed: JSON.stringify({ ...input, messages: chunks }), messages: rows };
}

/** The chunk hashes a packed input references (in order, repeats included). */
export function packedHashes(packed: string): string[] {
  return (JSON.parse(packed) as { messages: string[] }).messages;
}

/** The message hashes of a chunk's JSON text. */
export function chunkHashes(body: string): string[] {
  return JSON.parse(body) as string[];
}

/**
 * The model input of a packed step: the packed text parsed, with its chunk hashes replaced by the messages they list,
 * each parsed from `bodies` (hash → JSON text of every chunk and message the step references). Each message is parsed
 * on its own (steps never share message objects). A hash missing from `bodies` means the file lost a row:
 * `StoreError('sqlite_error')` naming the step, rather than a wrong input.
 */
export function unpackStepInput(
  packed: string,
  bodies: ReadonlyMap<string, string>,
  where: { taskId: string; seq: number },
): JsonValue {
  const value = JSON.parse(packed) as { messages: JsonValue[] };
  const body = (hash: string): string => {
    const text = bodies.get(hash);
    if (text === undefined) {
      throw new StoreError(
        'sqlite_error',
        `step ${where.seq} of task ${where.taskId} references model-input message ${hash}, ` +
          'which is missing from step_messages (the database file was changed by hand or is damaged)',
        { details: { taskId: where.taskId, seq: where.seq, hash } },
      );
    }
    return text;
  };
  const messages: JsonValue[] = [];
  for (const chunk of value.messages as string[]) {
    for (const hash of chunkHashes(body(chunk))) messages.push(JSON.parse(body(hash)) as JsonValue);
  }
  value.messages = messages;
  return value as unknown as JsonValue;
}
