/**
 * Streamed replies of chat tasks: the pieces of text a model writes arrive here (one call per streamed chunk, many a
 * second) and leave as deltas at most once per `intervalMs` per task (default 100 ms: ≤ 10 a second), to the
 * WebSocket subscribers (`task_update.delta`) and the `GET /api/events` stream (`delta` records). Reasoning blocks
 * (`<think>…</think>` in the content) are not sent. A model call's last piece is sent as soon as the call's record is
 * in the step log (before the decision that ends the step is announced), so a reader sees the whole reply before
 * `task_completed`; the step log's model record holds the full text.
 */
import type { Clock, Engine, Task, TimerHandle } from '@ccagent/engine';

/** One delta: text of task `task`'s reply in step `step` since the previous delta. */
export interface ReplyDelta {
  task: Task;
  step: number;
  delta: string;
}

/** Default shortest interval between two deltas of one task (ms). */
export const DELTA_INTERVAL_MS = 100;

const OPEN_TAGS = ['<think>', '<thinking>'];
const CLOSE_TAGS = ['</think>', '</thinking>'];

interface Pending {
  task: Task;
  step: number;
  text: string;
  /** End of the text held back: it may be the start of a tag. */
  carry: string;
  inThink: boolean;
  lastSentAt: number;
  timer: TimerHandle | undefined;
}

/** The longest end of `text` that is the start of one of `tags` (held back until the next piece says). */
function partialTag(text: string, tags: readonly string[]): number {
  const lower = text.toLowerCase();
  const longest = Math.max(...tags.map((t) => t.length)) - 1;
  for (let k = Math.min(longest, lower.length); k > 0; k--) {
    const end = lower.slice(-k);
    if (tags.some((t) => t.startsWith(end))) return k;
  }
  return 0;
}

/** See the module comment. One per orchestrator. */
export class ReplyStream {
  private readonly pending = new Map<string, Pending>();
  private readonly listeners = new Set<(d: ReplyDelta) => void>();

  constructor(
    private readonly clock: Clock,
    private readonly intervalMs = DELTA_INTERVAL_MS,
  ) {}

  /** Receive every delta. Returns the unsubscribe function. */
  on(listener: (d: ReplyDelta) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Send what is pending when a task's model record is logged, and forget a task that ended. */
  attach(engine: Engine): () => void {
    const offs = [
      engine.on('stepLogged', ({ taskId }) => this.end(taskId)),
      engine.on('taskCompleted', ({ task }) => this.end(task.id)),
      engine.on('taskFailed', ({ task }) => this.end(task.id)),
      engine.on('taskCancelled', ({ task }) => this.end(task.id)),
    ];
    return () => {
      for (const off of offs) off();
    };
  }

  /** A piece of the reply `task` is getting in step `step`. */
  push(task: Task, step: number, text: string): void {
    let p = this.pending.get(task.id);
    if (p && p.step !== step) {
      this.end(task.id);
      p = undefined;
    }
    if (!p) {
      p = { task, step, text: '', carry: '', inThink: false, lastSentAt: -Infinity, timer: undefined };
      this.pending.set(task.id, p);
    }
    p.text += this.visible(p, text);
    if (p.text === '' || p.timer !== undefined) return;
    const wait = p.lastSentAt + this.intervalMs - this.clock.now();
    if (wait <= 0) {
      this.send(p);
      return;
    }
    const held = p;
    p.timer = this.clock.setTimeout(() => {
      held.timer = undefined;
      this.send(held);
    }, wait);
  }

  /** Send what is pending for the task now (the model call ended) and forget it. */
  end(taskId: string): void {
    const p = this.pending.get(taskId);
    if (!p) return;
    this.pending.delete(taskId);
    if (p.timer !== undefined) this.clock.clearTimeout(p.timer);
    if (!p.inThink) p.text += p.carry;
    this.send(p);
  }

  /** Stop every timer (nothing more is sent). */
  close(): void {
    for (const p of this.pending.values()) if (p.timer !== undefined) this.clock.clearTimeout(p.timer);
    this.pending.clear();
    this.listeners.clear();
  }

  private send(p: Pending): void {
    if (p.text === '') return;
    const d: ReplyDelta = { task: p.task, step: p.step, delta: p.text };
    p.text = '';
    p.lastSentAt = this.clock.now();
    for (const l of this.listeners) l(d);
  }

  /** The part of `piece` outside reasoning blocks (a tag split across pieces is held back until complete). */
  private visible(p: Pending, piece: string): string {
    let buf = p.carry + piece;
    p.carry = '';
    let out = '';
    for (;;) {
      const tags = p.inThink ? CLOSE_TAGS : OPEN_TAGS;
      const lower = buf.toLowerCase();
      let at = -1;
      let len = 0;
      for (const t of tags) {
        const i = lower.indexOf(t);
        if (i >= 0 && (at < 0 || i < at)) {
          at = i;
          len = t.length;
        }
      }
      if (at >= 0) {
        if (!p.inThink) out += buf.slice(0, at);
        buf = buf.slice(at + len);
        p.inThink = !p.inThink;
        continue;
      }
      const k = partialTag(buf, tags);
      p.carry = buf.slice(buf.length - k);
      if (!p.inThink) out += buf.slice(0, buf.length - k);
      return out;
    }
  }
}
