/**
 * Push for `tasks follow --url`: a subscription to the orchestrator's `GET /api/events?task=<id>` (Server-Sent
 * Events) that wakes the follower as soon as the server commits something of the task, instead of it sleeping a poll
 * interval. The follower still reads what changed with the same paged request as before; the stream only says when.
 * A server without the route (an older orchestrator) gives no watch, and the follower polls as it always did; a
 * dropped stream (a restarting server) makes `wait` sleep the poll interval while it reconnects with `Last-Event-ID`.
 */

/** See the module comment. */
export interface TaskWatch {
  /** Resolve when a record of the task arrives (or one already arrived since the last call), or after `maxMs`. */
  wait(maxMs: number): Promise<void>;
  /** Close the stream. */
  close(): void;
}

/** Open a watch of `taskId` at `base`; undefined when the server has no event stream. */
export async function openTaskWatch(
  base: URL,
  taskId: string,
  token: string | undefined,
): Promise<TaskWatch | undefined> {
  const url = new URL(`/api/events?task=${encodeURIComponent(taskId)}`, base);
  let lastEventId: string | undefined;
  let pending = false;
  let live = false;
  let closed = false;
  let wake: (() => void) | undefined;
  let ctl: AbortController | undefined;

  const connect = async (): Promise<'ok' | 'absent' | 'failed'> => {
    ctl = new AbortController();
    let res: Response;
    try {
      res = await fetch(url, {
        headers: {
          accept: 'text/event-stream',
          ...(token ? { authorization: `Bearer ${token}` } : {}),
          ...(lastEventId !== undefined ? { 'last-event-id': lastEventId } : {}),
        },
        signal: ctl.signal,
      });
    } catch {
      return 'failed';
    }
    if (res.status === 404 || res.status === 405) {
      await res.body?.cancel();
      return 'absent';
    }
    if (!res.ok || !res.body) {
      await res.body?.cancel();
      return 'failed';
    }
    live = true;
    void read(res.body);
    return 'ok';
  };

  const read = async (body: ReadableStream<Uint8Array>): Promise<void> => {
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
          const id = /^id: (.*)$/m.exec(record)?.[1];
          if (id !== undefined) lastEventId = id;
          const event = /^event: (.*)$/m.exec(record)?.[1];
          if (event === undefined || event === 'hello') continue;
          pending = true;
          wake?.();
        }
      }
    } catch {
      // Dropped: the next wait reconnects.
    }
    live = false;
    // Whatever happened while it was down is read by the follower's next request.
    pending = true;
    wake?.();
  };

  const first = await connect();
  if (first === 'absent') return undefined;

  return {
    async wait(maxMs: number): Promise<void> {
      if (closed) return;
      if (!live) {
        // Down: poll at the follower's pace while trying to get the stream back.
        const r = await connect();
        if (r === 'absent') {
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
    close(): void {
      closed = true;
      ctl?.abort();
    },
  };
}
