/**
 * The push side of the HTTP API: `GET /api/events` (Server-Sent Events). The hub turns engine and client events into
 * small SSE records (`task`, `step`, `question`, `call`, `client`, `tool`; their shapes are `@ccagent/protocol`'s
 * `HTTP_EVENT_SCHEMAS`), numbers them, keeps the most recent ones
 * for resuming with `Last-Event-ID`, and writes them to every subscriber whose filter matches.
 *
 * A subscriber never slows the engine: publishing only appends to a bounded per-subscriber queue (engine listeners
 * stay synchronous and O(subscribers)); a subscriber whose socket does not keep up past {@link SUBSCRIBER_QUEUE_MAX}
 * records or {@link SUBSCRIBER_QUEUE_BYTES} has its queue dropped and gets one `resync` record once it drains: it
 * refetches what it shows over the REST routes. A resume from an id the hub no longer holds (too old, or from an
 * earlier server process) also gets `resync`.
 *
 * Replay is kept in two rings: {@link REPLAY_BUFFER_SIZE} records for tasks, clients and tools, and
 * {@link MC_REPLAY_BUFFER_SIZE} for the Minecraft records (`mc_*`), so a busy instance cannot push task records out of
 * the replay. Ids are one sequence over both; a resume replays what both hold after the id, in id order. When only the
 * Minecraft ring lost records after the id, a reader that receives them gets its replay and then
 * `resync` (`minecraft_gap`); a reader filtered to tasks just gets its replay. A record's SSE frame is written once,
 * the first time it is sent (never when nobody reads), and publishing costs O(1) plus O(subscribers).
 */
import type { ServerResponse } from 'node:http';
import type { Engine, StoredStep, Task } from '@ccagent/engine';
import {
  STEP_EVENT_MAX_CHARS,
  type HttpEventData,
  type HttpEventType,
  type HttpStepEvent,
  type HttpTaskEvent,
} from '@ccagent/protocol';
import type { ClientPersistence, KnownClient, KnownTool, ToolInfo } from '../client-persistence.js';
import type { ReplyStream } from '../reply-stream.js';
import { liveStepSummaryToWire } from '../wire.js';

/** Records kept for resuming (`Last-Event-ID`): tasks, steps, questions, calls, clients, tools, replies. */
export const REPLAY_BUFFER_SIZE = 4096;
/** Minecraft records (`mc_instance`, `mc_log`, `mc_action`) kept for resuming, apart from the others. */
export const MC_REPLAY_BUFFER_SIZE = 1024;
/** Records queued for one subscriber whose socket is full, before it is told to resync instead. */
export const SUBSCRIBER_QUEUE_MAX = 1024;
/** Bytes queued for one subscriber whose socket is full, before it is told to resync instead. */
export const SUBSCRIBER_QUEUE_BYTES = 1024 * 1024;
/** Longest prompt text carried by a `task` record (the full task is one `GET /api/tasks/:id` away). */
export const PROMPT_PREVIEW_CHARS = 200;
/** Interval of the `: ping` comment that keeps idle connections (and proxies) open (ms). */
export const HEARTBEAT_MS = 15_000;

/** A published record; its id is `<epoch>-<n>` (the epoch changes with every server process). */
interface HubRecord {
  n: number;
  type: HttpEventType;
  taskId: string | undefined;
  data: unknown;
  /** Its SSE frame, written the first time it is sent. */
  text: string | undefined;
}

/** A fixed-size ring of records in id order: O(1) to add, a binary search to find where a resume starts. */
export class ReplayRing<T extends { n: number }> {
  private readonly items: (T | undefined)[];
  private start = 0;
  private size = 0;
  /** The highest `n` pushed out (0: none yet). */
  evicted = 0;

  constructor(readonly capacity: number) {
    this.items = new Array<T | undefined>(capacity);
  }

  get length(): number {
    return this.size;
  }

  push(rec: T): void {
    if (this.size < this.capacity) {
      this.items[(this.start + this.size) % this.capacity] = rec;
      this.size += 1;
      return;
    }
    this.evicted = (this.items[this.start] as T).n;
    this.items[this.start] = rec;
    this.start = (this.start + 1) % this.capacity;
  }

  private at(i: number): T {
    return this.items[(this.start + i) % this.capacity] as T;
  }

  /** The records with `n` greater than `after`, oldest first. */
  after(after: number): T[] {
    let lo = 0;
    let hi = this.size;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.at(mid).n <= after) lo = mid + 1;
      else hi = mid;
    }
    const out: T[] = [];
    for (let i = lo; i < this.size; i++) out.push(this.at(i));
    return out;
  }
}

/** What one subscriber asked for. */
export interface SubscribeOptions {
  /** Only records of these tasks (client and tool records are not sent then). Empty or absent: everything. */
  taskIds?: readonly string[];
  /** Resume after this id (the `Last-Event-ID` header or `last_event_id` query parameter). */
  lastEventId?: string;
}

interface Subscriber {
  res: ServerResponse;
  taskIds: ReadonlySet<string> | undefined;
  queue: string[];
  queuedBytes: number;
  blocked: boolean;
  /** Its queue overflowed: send `resync` once the socket drains, and nothing else before. */
  overflowed: boolean;
}

/** A task as the `task` record carries it: the list's columns, the prompt cut to {@link PROMPT_PREVIEW_CHARS}. */
export function taskSummary(t: Task): HttpTaskEvent {
  const prompt = t.prompt.length > PROMPT_PREVIEW_CHARS ? t.prompt.slice(0, PROMPT_PREVIEW_CHARS) : t.prompt;
  const out: HttpTaskEvent = {
    id: t.id,
    kind: t.kind,
    status: t.status,
    client_id: t.clientId,
    prompt,
    prompt_truncated: prompt.length < t.prompt.length,
    counters: { steps: t.counters.steps, tool_calls: t.counters.toolCalls, questions: t.counters.questions },
    created_at: t.createdAt,
    updated_at: t.updatedAt,
  };
  if (t.progress !== undefined) out.progress = t.progress;
  if (t.progressMessage !== undefined) out.progress_message = t.progressMessage;
  if (t.error !== undefined) out.error = { code: t.error.code, message: t.error.message };
  return out;
}

/**
 * A `step` record: the timeline row's short form (no `input_chars`) when its JSON is at most
 * {@link STEP_EVENT_MAX_CHARS}, else only the record's numbers (the page reads it).
 */
export function stepSummary(taskId: string, s: StoredStep): HttpStepEvent {
  const out: HttpStepEvent = { task_id: taskId, ...liveStepSummaryToWire(s), summary: true };
  if (JSON.stringify(out).length <= STEP_EVENT_MAX_CHARS) return out;
  return { task_id: taskId, seq: s.seq, step: s.step, kind: s.kind, at: s.at };
}

/** See the module comment. One hub per orchestrator; `close()` ends every stream. */
export class EventHub {
  private readonly epoch: string;
  private n = 0;
  private readonly buffer = new ReplayRing<HubRecord>(REPLAY_BUFFER_SIZE);
  private readonly mcBuffer = new ReplayRing<HubRecord>(MC_REPLAY_BUFFER_SIZE);
  private readonly subscribers = new Set<Subscriber>();
  private readonly unsubscribe: (() => void)[] = [];
  private readonly heartbeat: NodeJS.Timeout;

  /** `startedAt` (ms) names this process's epoch, so ids from an earlier process are never mistaken for ours. */
  constructor(startedAt: number, heartbeatMs = HEARTBEAT_MS) {
    this.epoch = Math.floor(startedAt).toString(36);
    this.heartbeat = setInterval(() => this.ping(), heartbeatMs);
    this.heartbeat.unref();
  }

  /** Bytes waiting in the fullest subscriber queue (bounded by {@link SUBSCRIBER_QUEUE_BYTES}). */
  get maxQueuedBytes(): number {
    let max = 0;
    for (const s of this.subscribers) max = Math.max(max, s.queuedBytes);
    return max;
  }

  /** Subscribers connected now. */
  get subscriberCount(): number {
    return this.subscribers.size;
  }

  /** Publish the engine's committed changes (each listener only enqueues; nothing here waits). */
  attach(engine: Engine): void {
    const task = ({ task: t }: { task: Task }): void => this.publish('task', taskSummary(t), t.id);
    this.unsubscribe.push(
      engine.on('taskCreated', task),
      engine.on('taskUpdated', task),
      engine.on('taskCompleted', task),
      engine.on('taskFailed', task),
      engine.on('taskCancelled', task),
      engine.on('stepLogged', ({ taskId, step }) => this.publish('step', stepSummary(taskId, step), taskId)),
      engine.on('questionAsked', ({ task: t, question: q }) =>
        this.publish(
          'question',
          { task_id: t.id, question_id: q.questionId, question: q.question, answered: false },
          t.id,
        ),
      ),
      engine.on('questionAnswered', ({ task: t, question: q }) =>
        this.publish('question', { task_id: t.id, question_id: q.questionId, answered: true }, t.id),
      ),
      engine.on('commandDispatched', ({ task: t, call }) =>
        this.publish(
          'call',
          { task_id: t.id, call_id: call.callId, command: call.command, status: call.status },
          t.id,
        ),
      ),
      engine.on('commandResolved', ({ task: t, call, outcome }) =>
        this.publish(
          'call',
          { task_id: t.id, call_id: call.callId, command: call.command, status: call.status, ok: outcome.ok },
          t.id,
        ),
      ),
    );
  }

  /** Publish chat replies as they are written (`delta` records: `{task_id, step, delta}`). */
  attachReplies(stream: ReplyStream): void {
    this.unsubscribe.push(
      stream.on(({ task, step, delta }) => this.publish('delta', { task_id: task.id, step, delta }, task.id)),
    );
  }

  /** Wrap a client store so that every acknowledged change is also published (`client` and `tool` records). */
  observeClients(inner: ClientPersistence): ClientPersistence {
    return {
      clientSeen: async (input) => {
        await inner.clientSeen(input);
        this.publish('client', {
          client_id: input.clientId,
          connected: true,
          commands: input.commands.map((c) => c.name),
          at: input.at,
        });
      },
      clientDisconnected: async (clientId, at) => {
        await inner.clientDisconnected(clientId, at);
        this.publish('client', { client_id: clientId, connected: false, at });
      },
      replaceTools: async (clientId: string, tools: ToolInfo[], at: number) => {
        await inner.replaceTools(clientId, tools, at);
        this.publish('tool', {
          client_id: clientId,
          tools: tools.map((t) => ({ name: t.name, status: t.status, version: t.version })),
          at,
        });
      },
      listClients: (): Promise<KnownClient[]> => inner.listClients(),
      listTools: (filter): Promise<KnownTool[]> => inner.listTools(filter),
    };
  }

  /** Number, buffer and fan out one record. `taskId` makes it visible to per-task subscribers. */
  publish<K extends HttpEventType>(type: K, data: HttpEventData<K>, taskId?: string): void {
    this.n += 1;
    const rec: HubRecord = { n: this.n, type, taskId, data, text: undefined };
    (isMinecraft(type) ? this.mcBuffer : this.buffer).push(rec);
    for (const s of this.subscribers) if (matches(s, rec)) this.send(s, this.text(rec));
  }

  /** A record's frame, written once. */
  private text(rec: HubRecord): string {
    rec.text ??= `id: ${this.epoch}-${rec.n}\nevent: ${rec.type}\ndata: ${JSON.stringify(rec.data)}\n\n`;
    return rec.text;
  }

  /**
   * Turn `res` into an event stream: headers, a `hello` record (`{id}` of the newest record, so a client can tell
   * what it has), then either the records after `lastEventId` or, when those are no longer held, `resync`.
   */
  subscribe(res: ServerResponse, o: SubscribeOptions = {}): void {
    const taskIds = o.taskIds && o.taskIds.length > 0 ? new Set(o.taskIds) : undefined;
    const s: Subscriber = {
      res,
      taskIds,
      queue: [],
      queuedBytes: 0,
      blocked: false,
      overflowed: false,
    };
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    res.socket?.setNoDelay(true);
    this.subscribers.add(s);
    const drop = (): void => {
      this.subscribers.delete(s);
    };
    res.on('close', drop);
    res.on('drain', () => this.flush(s));
    // Reconnecting browsers wait this long (ms) before the next try.
    this.send(s, `retry: 1000\n\n`);
    if (o.lastEventId !== undefined && o.lastEventId !== '') {
      const replay = this.after(o.lastEventId);
      if (replay === undefined) this.send(s, frame(this.lastId(), 'resync', { reason: 'unknown_event_id' }));
      else {
        for (const rec of replay.records) if (matches(s, rec)) this.send(s, this.text(rec));
        // Minecraft records after the id were pushed out: a reader of them refetches (task readers never get them).
        if (replay.minecraftGap && s.taskIds === undefined)
          this.send(s, frame(this.lastId(), 'resync', { reason: 'minecraft_gap' }));
      }
    } else {
      this.send(s, frame(this.lastId(), 'hello', { epoch: this.epoch }));
    }
  }

  /** End every stream and stop listening to the engine. */
  close(): void {
    clearInterval(this.heartbeat);
    for (const u of this.unsubscribe.splice(0)) u();
    for (const s of this.subscribers) s.res.end();
    this.subscribers.clear();
  }

  private lastId(): string {
    return `${this.epoch}-${this.n}`;
  }

  /**
   * Records after `id` in id order, or undefined when the hub cannot tell (another epoch, or task records after it
   * fell out of the buffer); `minecraftGap` when Minecraft records after it fell out of theirs.
   */
  private after(id: string): { records: HubRecord[]; minecraftGap: boolean } | undefined {
    const m = /^([0-9a-z]+)-(\d+)$/.exec(id);
    if (!m || m[1] !== this.epoch) return undefined;
    const n = Number(m[2]);
    if (n > this.n) return undefined;
    // Everything after n is still held only when nothing after n was pushed out.
    if (this.buffer.evicted > n) return undefined;
    const main = this.buffer.after(n);
    const mc = this.mcBuffer.after(n);
    const records: HubRecord[] = [];
    let i = 0;
    let j = 0;
    while (i < main.length || j < mc.length) {
      if (j >= mc.length || (i < main.length && main[i]!.n < mc[j]!.n)) records.push(main[i++]!);
      else records.push(mc[j++]!);
    }
    return { records, minecraftGap: this.mcBuffer.evicted > n };
  }

  private send(s: Subscriber, text: string): void {
    if (s.overflowed) return;
    if (s.blocked) {
      s.queue.push(text);
      s.queuedBytes += text.length;
      if (s.queue.length > SUBSCRIBER_QUEUE_MAX || s.queuedBytes > SUBSCRIBER_QUEUE_BYTES) {
        s.queue = [];
        s.queuedBytes = 0;
        s.overflowed = true;
      }
      return;
    }
    if (!s.res.write(text)) s.blocked = true;
  }

  private flush(s: Subscriber): void {
    s.blocked = false;
    if (s.overflowed) {
      s.overflowed = false;
      if (!s.res.write(frame(this.lastId(), 'resync', { reason: 'slow_consumer' }))) {
        s.blocked = true;
        return;
      }
    }
    while (s.queue.length > 0) {
      const text = s.queue.shift() as string;
      s.queuedBytes -= text.length;
      if (!s.res.write(text)) {
        s.blocked = true;
        return;
      }
    }
  }

  private ping(): void {
    for (const s of this.subscribers) if (!s.blocked && !s.overflowed) s.res.write(': ping\n\n');
  }
}

function isMinecraft(type: HttpEventType): boolean {
  return type === 'mc_instance' || type === 'mc_log' || type === 'mc_action';
}

function matches(s: Subscriber, rec: HubRecord): boolean {
  if (rec.type === 'resync' || rec.type === 'hello') return true;
  if (s.taskIds === undefined) return true;
  return rec.taskId !== undefined && s.taskIds.has(rec.taskId);
}

/** One SSE record. JSON never contains a raw newline, so `data:` is one line. */
function frame<K extends HttpEventType>(id: string, type: K, data: HttpEventData<K>): string {
  return `id: ${id}\nevent: ${type}\ndata: ${JSON.stringify(data)}\n\n`;
}
