/**
 * Push for `tasks follow --url`: a subscription to the orchestrator's `GET /api/events?task=<id>` (Server-Sent
 * Events) that wakes the follower as soon as the server commits something of the task, instead of it sleeping a poll
 * interval. The follower still reads what changed with the same paged request as before; the stream only says when.
 * A server without the route (an older orchestrator) gives no watch, and the follower polls as it always did; a
 * dropped stream (a restarting server) makes `wait` sleep the poll interval while it reconnects with `Last-Event-ID`.
 * A stream that says nothing within `firstRecordMs` (10 s by default; the server sends a `hello` record at once) is taken for one a
 * buffering proxy holds back — it would deliver the response headers or the records only when the never-ending
 * stream ends — so the watch gives up and the follower polls.
 * A `delta` record is parsed with `@ccagent/protocol`'s event schemas (`parseHttpEvent`); with `summaries`, so is a
 * `step` record: one that carries the record's short form (`summary: true`) is kept for the follower to paint without
 * reading (`take`); the others only wake.
 */
import { parseHttpEvent, type HttpStepEvent } from '@ccagent/protocol';

/** How long the stream may take to deliver its first record (the server's `hello`) before the follower polls. */
export const FIRST_RECORD_MS = 10_000;

/** Options of {@link openTaskWatch}. */
export interface TaskWatchOptions {
  /** See {@link FIRST_RECORD_MS}. */
  firstRecordMs?: number;
  /** A chat task's streamed reply (`delta` records); they do not wake the follower. */
  onDelta?: DeltaListener;
  /** Keep the short form a `step` record carries for {@link TaskWatch.take} (the follower paints it, no read). */
  summaries?: boolean;
}

/** What {@link TaskWatch.take} hands over: the pushed step summaries, and whether the follower must read. */
export interface Pushed {
  /** The `step` records that carried their short form, in the order they came. */
  steps: HttpStepEvent[];
  /**
   * Something came that only a read shows (a task, question, call … record, a step without its short form, a
   * reconnect), or nothing came at all (the wait timed out: a read in case a wake-up was lost).
   */
  read: boolean;
}

/** See the module comment. */
export interface TaskWatch {
  /** Resolve when a record of the task arrives (or one already arrived since the last call), or after `maxMs`. */
  wait(maxMs: number): Promise<void>;
  /** False once the watch gave up (the route went away, or a proxy holds the stream back): poll instead. */
  readonly pushing: boolean;
  /** With `summaries`: what came since the last call (see {@link Pushed}); resets it. */
  take(): Pushed;
  /** Close the stream. */
  close(): void;
}

/** A chat task's reply as it is written: a `delta` record of the event stream. */
export type DeltaListener = (delta: { step: number; text: string }) => void;

/**
 * Open a watch of `taskId` at `base`; undefined when the server has no event stream. `options.onDelta` gets a chat
 * task's streamed reply (`delta` records); they do not wake the follower (the text is in the step log once the call
 * ends).
 */
export async function openTaskWatch(
  base: URL,
  taskId: string,
  token: string | undefined,
  options: TaskWatchOptions = {},
): Promise<TaskWatch | undefined> {
  const firstRecordMs = options.firstRecordMs ?? FIRST_RECORD_MS;
  const onDelta = options.onDelta;
  const url = new URL(`/api/events?task=${encodeURIComponent(taskId)}`, base);
  let lastEventId: string | undefined;
  let pending = false;
  let steps: HttpStepEvent[] = [];
  let mustRead = false;
  let live = false;
  let closed = false;
  let wake: (() => void) | undefined;
  let ctl: AbortController | undefined;

  /** `held`: nothing came within `firstRecordMs` (no headers, or headers but no record): a buffering proxy. */
  const connect = async (): Promise<'ok' | 'absent' | 'failed' | 'held'> => {
    const c = new AbortController();
    ctl = c;
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      c.abort();
    }, firstRecordMs);
    try {
      let res: Response;
      try {
        res = await fetch(url, {
          headers: {
            accept: 'text/event-stream',
            ...(token ? { authorization: `Bearer ${token}` } : {}),
            ...(lastEventId !== undefined ? { 'last-event-id': lastEventId } : {}),
          },
          signal: c.signal,
        });
      } catch {
        return timedOut ? 'held' : 'failed';
      }
      if (res.status === 404 || res.status === 405) {
        await res.body?.cancel();
        return 'absent';
      }
      if (!res.ok || !res.body) {
        await res.body?.cancel();
        return 'failed';
      }
      const first = new Promise<boolean>((resolve) => void read(res.body!, resolve));
      if (!(await first)) return timedOut ? 'held' : 'failed';
      live = true;
      return 'ok';
    } finally {
      clearTimeout(timer);
    }
  };

  /** Read records until the stream ends; `opened(true)` on the first one, `opened(false)` if it ends before. */
  const read = async (body: ReadableStream<Uint8Array>, opened: (ok: boolean) => void): Promise<void> => {
    let first = true;
    const reader = body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = '';
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value;
        let end: number;
        while ((end = buf.indexOf('\n\n')) >= 0) {
          const record = buf.slice(0, end);
          buf = buf.slice(end + 2);
          if (first) {
            first = false;
            opened(true);
          }
          const id = /^id: (.*)$/m.exec(record)?.[1];
          if (id !== undefined) lastEventId = id;
          const event = /^event: (.*)$/m.exec(record)?.[1];
          if (event === undefined || event === 'hello') continue;
          if (event === 'delta') {
            // The only record whose content this client reads; one it cannot parse is skipped (the step log has the text).
            const parsed = onDelta && parseHttpEvent(event, /^data: (.*)$/m.exec(record)?.[1] ?? '');
            if (parsed?.ok && parsed.value.type === 'delta')
              onDelta?.({ step: parsed.value.data.step, text: parsed.value.data.delta });
            continue;
          }
          if (event === 'step' && options.summaries && !mustRead) {
            // Its short form, when the record carries it: painted without a read. Once a read is due, the read
            // brings the records after it too (they are kept in order).
            const parsed = parseHttpEvent(event, /^data: (.*)$/m.exec(record)?.[1] ?? '');
            if (parsed.ok && parsed.value.type === 'step' && parsed.value.data.summary === true) {
              steps.push(parsed.value.data);
              pending = true;
              wake?.();
              continue;
            }
          }
          // Any other record of the task (a kind this client does not know, too) only says that something changed:
          // it wakes the follower, which reads what changed over the REST routes.
          mustRead = true;
          pending = true;
          wake?.();
        }
      }
    } catch {
      // Dropped: the next wait reconnects.
    }
    if (first) {
      opened(false);
      return;
    }
    live = false;
    // Whatever happened while it was down is read by the follower's next request.
    mustRead = true;
    pending = true;
    wake?.();
  };

  const first = await connect();
  if (first === 'absent' || first === 'held') {
    ctl?.abort();
    return undefined;
  }

  return {
    get pushing(): boolean {
      return !closed;
    },
    async wait(maxMs: number): Promise<void> {
      if (closed) return;
      if (!live) {
        // Down: poll at the follower's pace while trying to get the stream back.
        const r = await connect();
        if (r === 'absent' || r === 'held') {
          ctl?.abort();
          closed = true;
          return;
        }
        if (r !== 'ok') {
          await new Promise((resolve) => setTimeout(resolve, maxMs));
          return;
        }
      }
      if (pending) {
        pending = false;
        return;
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, maxMs);
        function done(): void {
          clearTimeout(timer);
          wake = undefined;
          resolve();
        }
        wake = done;
      });
      pending = false;
    },
    take(): Pushed {
      const out = { steps, read: mustRead || steps.length === 0 };
      steps = [];
      mustRead = false;
      return out;
    },
    close(): void {
      closed = true;
      ctl?.abort();
    },
  };
}
