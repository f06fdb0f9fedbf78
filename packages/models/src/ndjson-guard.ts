/**
 * A byte-stream filter for Ollama's NDJSON replies. The `ollama` client silently skips (and prints) lines it cannot
 * parse and turns an `{"error": …}` line into a plain `Error`; this guard, placed under the client, fails the stream
 * with a typed `ModelError` instead, so a corrupt reply is never mistaken for a complete one.
 */
import { describe, type CallTarget } from './call.js';
import { ModelError } from './model-error.js';

/** A TransformStream that passes valid NDJSON lines through and errors on a malformed line or an error object. */
export function ndjsonGuard(target: CallTarget): TransformStream<Uint8Array, Uint8Array> {
  const decoder = new TextDecoder('utf-8');
  const encoder = new TextEncoder();
  let buffer = '';
  const details = {
    provider: target.provider,
    ...(target.model !== undefined ? { model: target.model } : {}),
  };

  function check(line: string): ModelError | undefined {
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      const shown = line.length > 120 ? `${line.slice(0, 120)}…` : line;
      return new ModelError('bad_response', `${describe(target)} sent a malformed NDJSON line: ${shown}`, {
        ...details,
        cause: error,
      });
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      return new ModelError(
        'bad_response',
        `${describe(target)} sent an NDJSON line that is not an object`,
        details,
      );
    }
    const err = (value as Record<string, unknown>)['error'];
    if (err !== undefined) {
      return new ModelError(
        'server',
        `${describe(target)} failed mid-stream: ${typeof err === 'string' ? err : JSON.stringify(err)}`,
        details,
      );
    }
    return undefined;
  }

  function pass(lines: string[], controller: TransformStreamDefaultController<Uint8Array>): boolean {
    let out = '';
    for (const raw of lines) {
      const line = raw.trim();
      if (line === '') continue;
      const problem = check(line);
      if (problem) {
        if (out !== '') controller.enqueue(encoder.encode(out));
        controller.error(problem);
        return false;
      }
      out += `${line}\n`;
    }
    if (out !== '') controller.enqueue(encoder.encode(out));
    return true;
  }

  return new TransformStream<Uint8Array, Uint8Array>({
    transform(chunk, controller) {
      buffer += decoder.decode(chunk, { stream: true });
      const parts = buffer.split('\n');
      buffer = parts.pop() ?? '';
      pass(parts, controller);
    },
    flush(controller) {
      buffer += decoder.decode();
      const rest = buffer;
      buffer = '';
      pass([rest], controller);
    },
  });
}
