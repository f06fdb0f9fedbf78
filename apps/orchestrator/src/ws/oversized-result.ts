/**
 * A `command_result` refused for its size must not leave its call open until the tool timeout: the gateway finds the
 * call it answers from the start of its text (the whole message is never parsed, and a chunked one is dropped while
 * it is reassembled) and the call then fails at once with `output_too_large` (task-requests.ts).
 *
 * {@link topLevelIds} reads the ids among the top-level fields of a JSON object's leading text: nested fields (a
 * result that happens to contain a `call_id`) are skipped, and a text cut anywhere is fine. {@link ChunkHeads} keeps
 * the start of each chunked transfer in flight on a connection, so the ids are known when the transfer is refused.
 */

/** The ids a refused message's leading text names at its top level. */
export interface LeadingIds {
  type?: string;
  call_id?: string;
  task_id?: string;
}

/** Characters of a message's start that are scanned: ids and the type come first in every client's encoding. */
export const HEAD_CHARS = 4096;
/** Longest id read (the protocol's ids are far shorter; a longer value is not an id). */
const MAX_ID = 256;
const WANTED = new Set(['type', 'call_id', 'task_id']);

/** The top-level `type`, `call_id` and `task_id` string fields found in the leading text of a JSON object. */
export function topLevelIds(text: string): LeadingIds {
  const out: LeadingIds = {};
  const head = text.length > HEAD_CHARS ? text.slice(0, HEAD_CHARS) : text;
  let i = 0;
  while (i < head.length && /\s/.test(head[i]!)) i++;
  if (head[i] !== '{') return out;
  let depth = 0;
  // At depth 1: whether the next string is a key, and the key whose value comes next.
  let expectKey = true;
  let key: string | undefined;
  for (; i < head.length; i++) {
    const ch = head[i]!;
    if (ch === '"') {
      const end = stringEnd(head, i);
      if (end < 0) break; // cut inside a string
      if (depth === 1) {
        const value = head.slice(i + 1, end);
        if (expectKey) key = value;
        else if (key !== undefined && WANTED.has(key) && value.length <= MAX_ID && !value.includes('\\'))
          out[key as keyof LeadingIds] = value;
      }
      i = end;
    } else if (ch === '{' || ch === '[') {
      depth++;
      if (depth === 1) expectKey = true;
    } else if (ch === '}' || ch === ']') {
      depth--;
      if (depth <= 0) break;
    } else if (depth === 1 && ch === ':') {
      expectKey = false;
    } else if (depth === 1 && ch === ',') {
      expectKey = true;
      key = undefined;
    }
  }
  return out;
}

/** Index of the quote closing the string opened at `start`, or -1 when the text ends first. */
function stringEnd(text: string, start: number): number {
  for (let j = start + 1; j < text.length; j++) {
    const c = text[j];
    if (c === '\\') j++;
    else if (c === '"') return j;
  }
  return -1;
}

/** Transfers remembered per connection (the assembler holds at most 4 in flight; a few more cover dropped ones). */
const MAX_HEADS = 8;

/** The leading text of each chunked transfer in flight on one connection, by `chunk_id` (see the module comment). */
export class ChunkHeads {
  private readonly heads = new Map<string, string>();

  /** Remember the start of a transfer from its first chunk (index 0). */
  first(chunkId: string, data: string): void {
    if (this.heads.size >= MAX_HEADS) {
      const oldest = this.heads.keys().next().value;
      if (oldest !== undefined) this.heads.delete(oldest);
    }
    this.heads.set(chunkId, data.slice(0, HEAD_CHARS));
  }

  /** The transfer ended (reassembled or refused): its start, once, or undefined when it was not seen. */
  take(chunkId: string): string | undefined {
    const head = this.heads.get(chunkId);
    this.heads.delete(chunkId);
    return head;
  }
}
