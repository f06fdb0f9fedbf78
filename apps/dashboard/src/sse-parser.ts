/**
 * An incremental parser of the `text/event-stream` format (the subset the orchestrator sends: `id`, `event`, `data`,
 * `retry` fields and `:` comments). Fed decoded text chunks as they arrive; a record split across chunks is held
 * until its blank line.
 */

/** One dispatched record. */
export interface SseRecord {
  id: string | undefined;
  event: string;
  data: string;
}

/** See the module comment. */
export class SseParser {
  private buf = '';
  private id: string | undefined;
  private event = '';
  private data: string[] = [];
  /** The last `retry:` value (ms), if the server sent one. */
  retryMs: number | undefined;

  /** Feed text; returns the records completed by it. */
  push(text: string): SseRecord[] {
    this.buf += text;
    const out: SseRecord[] = [];
    let nl: number;
    while ((nl = this.nextLineEnd()) >= 0) {
      let line = this.buf.slice(0, nl);
      const skip = this.buf[nl] === '\r' && this.buf[nl + 1] === '\n' ? 2 : 1;
      this.buf = this.buf.slice(nl + skip);
      if (line.endsWith('\r')) line = line.slice(0, -1);
      if (line === '') {
        if (this.data.length > 0) {
          out.push({ id: this.id, event: this.event || 'message', data: this.data.join('\n') });
        }
        this.event = '';
        this.data = [];
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'data') this.data.push(value);
      else if (field === 'event') this.event = value;
      else if (field === 'id') this.id = value;
      else if (field === 'retry' && /^\d+$/.test(value)) this.retryMs = Number(value);
    }
    return out;
  }

  /** The id of the last record seen (what a reconnect sends as `Last-Event-ID`). */
  get lastEventId(): string | undefined {
    return this.id;
  }

  private nextLineEnd(): number {
    const n = this.buf.indexOf('\n');
    const r = this.buf.indexOf('\r');
    if (r >= 0 && (n < 0 || r < n)) {
      // A lone CR at the end of the buffer may be half of CRLF: wait for more.
      if (r === this.buf.length - 1) return -1;
      return r;
    }
    return n;
  }
}
