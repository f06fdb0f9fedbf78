/**
 * The live connection to `GET /api/events`. Uses `fetch` with a streamed body rather than `EventSource`, because
 * `EventSource` cannot send the `Authorization` header and the token must never go in a URL. Reconnects after a
 * drop with `Last-Event-ID`; when the server cannot replay (it restarted, or this page fell behind) it sends
 * `resync` and every view refetches what it shows. Records are typed by `@ccagent/protocol`'s event schemas (types
 * only, see wire.ts); one of a kind this page does not know (a newer server) is skipped.
 */
import type { HttpEvent, HttpEventType } from '@ccagent/protocol';
import { HTTP_EVENT_TYPES } from '@ccagent/protocol/constants';
import { authHeaders } from './api.js';
import { SseParser } from './sse-parser.js';

/** A record from the stream: its kind (`type`), its JSON `data` of that kind's shape, and its id. */
export type LiveEvent = HttpEvent & { id: string | undefined };

const KNOWN: ReadonlySet<string> = new Set<HttpEventType>(HTTP_EVENT_TYPES);

/** The task a record is about (`id` of a `task` record, `task_id` of the others), if any. */
export function eventTaskId(e: LiveEvent): string | undefined {
  if (e.type === 'task') return e.data.id;
  return 'task_id' in e.data ? (e.data.task_id ?? undefined) : undefined;
}

/** State of the connection, for the indicator in the header. */
export type LiveState = 'connecting' | 'live' | 'reconnecting' | 'unauthorized';

type Listener = (e: LiveEvent) => void;

/** One stream shared by every view of the page. */
export class LiveEvents {
  private readonly listeners = new Set<Listener>();
  private readonly stateListeners = new Set<(s: LiveState) => void>();
  private abort: AbortController | undefined;
  private lastEventId: string | undefined;
  private retryMs = 1000;
  private stopped = true;
  private timer: ReturnType<typeof setTimeout> | undefined;
  state: LiveState = 'connecting';

  /** Receive every record (`resync` included). Returns the unsubscribe function. */
  on(l: Listener): () => void {
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  }

  /** Follow the connection state. */
  onState(l: (s: LiveState) => void): () => void {
    this.stateListeners.add(l);
    return () => this.stateListeners.delete(l);
  }

  /** Open the stream (again, e.g. after logging in). */
  start(): void {
    this.stop();
    this.stopped = false;
    void this.run();
  }

  /** Close the stream. */
  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.abort?.abort();
    this.abort = undefined;
  }

  private setState(s: LiveState): void {
    if (this.state === s) return;
    this.state = s;
    for (const l of this.stateListeners) l(s);
  }

  private emit(e: LiveEvent): void {
    for (const l of this.listeners) {
      try {
        l(e);
      } catch (err) {
        // One view failing must not stop the others from updating.
        setTimeout(() => {
          throw err;
        });
      }
    }
  }

  private async run(): Promise<void> {
    const ctl = new AbortController();
    this.abort = ctl;
    const parser = new SseParser();
    try {
      const headers: Record<string, string> = { accept: 'text/event-stream', ...authHeaders() };
      if (this.lastEventId !== undefined) headers['last-event-id'] = this.lastEventId;
      const res = await fetch('/api/events', { headers, signal: ctl.signal, cache: 'no-store' });
      if (res.status === 401) {
        this.setState('unauthorized');
        return;
      }
      if (!res.ok || !res.body) throw new Error(`events: HTTP ${res.status}`);
      this.setState('live');
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        for (const r of parser.push(value)) {
          if (r.id !== undefined) this.lastEventId = r.id;
          if (!KNOWN.has(r.event)) continue;
          let data: unknown;
          try {
            data = JSON.parse(r.data);
          } catch {
            continue;
          }
          if (typeof data !== 'object' || data === null || Array.isArray(data)) continue;
          this.emit({ id: r.id, type: r.event, data } as LiveEvent);
        }
      }
      if (parser.retryMs !== undefined) this.retryMs = parser.retryMs;
    } catch {
      // Dropped or refused: fall through to the retry below.
    }
    if (this.stopped || ctl.signal.aborted) return;
    this.setState('reconnecting');
    this.timer = setTimeout(() => {
      if (!this.stopped) void this.run();
    }, this.retryMs);
  }
}

/** The page's stream. */
export const live = new LiveEvents();
