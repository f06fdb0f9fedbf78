/**
 * The schedule runner: fires durable schedules on the engine's clock. Each pass reads the schedules, and for each one
 * due records its firing (`ScheduleStore.claimFiring`, durable before anything is done, refused when already
 * recorded) and then acts — creates the template's task through `TaskOperations` with an id derived from (schedule,
 * due time), or posts an event to the task it names (by id, or by agent name resolved at the firing) — and records
 * how that ended. On start it first finishes the
 * firings a previous process recorded but did not finish (it died in between); both actions are idempotent per
 * firing, so a firing acts once. Between passes it sleeps until the earliest next occurrence (at most `maxSleepMs`,
 * so schedules added by another process and clock jumps are seen).
 *
 * Only one process may run it per database: on PostgreSQL that is the leader (the store's writes are fenced by the
 * leader lease, so a deposed leader's claim is refused); on SQLite the file's single writer.
 */
import type { Clock, Logger, TimerHandle } from './ports.js';
import { dueFiring, nextOccurrence, type Schedule, type ScheduleStore } from './schedules.js';
import type { TaskOperations } from './task-operations.js';
import type { JsonValue } from './types.js';
import type { TaskSettings } from '@ccagent/protocol';

/** Options of {@link ScheduleRunner}. */
export interface ScheduleRunnerOptions {
  store: ScheduleStore;
  /** Creates tasks (kind rules, operator maximums, idempotent ids) and posts events. */
  tasks: Pick<TaskOperations, 'create' | 'event' | 'resolveAgent' | 'canAccess'>;
  /** Reads a task's history (was this firing's event already posted?). */
  history: (taskId: string) => Promise<ReadonlyArray<{ type: string; data?: JsonValue }>>;
  clock: Clock;
  logger?: Logger;
  /** An occurrence at most this late (ms) is fired as usual; a later one is "missed" (default 60 s). */
  graceMs?: number;
  /** Longest sleep between passes (ms, default 60 s). */
  maxSleepMs?: number;
  /** Told after each firing is finished (metrics, the dashboard's live list). */
  onFired?: (event: { schedule: Schedule; dueAt: number; status: string; taskId?: string }) => void;
}

/** Request-id namespace of the tasks schedules create (their ids derive from it, the schedule and the due time). */
export const SCHEDULE_REQUEST_NAMESPACE = 'schedule';

/** The `request_id` of the task a firing creates: the same firing always names the same task. */
export function firingRequestId(scheduleId: string, dueAt: number): string {
  return `${scheduleId}@${dueAt}`;
}

const silent: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

/** See the module comment. */
export class ScheduleRunner {
  private timer: TimerHandle | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private state: 'idle' | 'started' | 'stopped' = 'idle';
  private readonly logger: Logger;
  private readonly graceMs: number;
  private readonly maxSleepMs: number;

  constructor(private readonly o: ScheduleRunnerOptions) {
    this.logger = o.logger ?? silent;
    this.graceMs = o.graceMs ?? 60_000;
    this.maxSleepMs = o.maxSleepMs ?? 60_000;
  }

  /** Finish the firings a previous process left pending, then fire what is due and keep firing. */
  async start(): Promise<void> {
    if (this.state !== 'idle') return;
    this.state = 'started';
    const pending = await this.o.store.listFirings({ status: 'pending', limit: 1000 });
    for (const f of pending.reverse()) {
      const s = await this.o.store.getSchedule(f.scheduleId);
      if (s) await this.act(s, f.dueAt, true);
    }
    await this.pass();
  }

  /** Stop firing; resolves once a pass in progress has ended. */
  async stop(): Promise<void> {
    this.state = 'stopped';
    if (this.timer !== undefined) this.o.clock.clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** Resolves once no pass is running (tests on a manual clock wait for a pass a timer started). */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  /** Look at the schedules now (one was added, resumed or removed); a pass in progress is followed by another. */
  refresh(): Promise<void> {
    return this.pass();
  }

  private pass(): Promise<void> {
    if (this.state !== 'started') return Promise.resolve();
    if (this.running) {
      this.again = true;
      return this.running;
    }
    const run = (async () => {
      try {
        do {
          this.again = false;
          await this.fireDue();
        } while (this.again && this.state === 'started');
      } catch (err) {
        this.logger.error({ err }, 'schedules: a pass failed; trying again later');
      } finally {
        this.running = undefined;
      }
      await this.arm();
    })();
    this.running = run;
    return run;
  }

  private async fireDue(): Promise<void> {
    const schedules = await this.o.store.listSchedules();
    for (const s of schedules) {
      if (this.state !== 'started') return;
      const due = dueFiring(s, this.o.clock.now(), this.graceMs);
      if (!due) continue;
      const note =
        due.occurrences > 1
          ? `${due.occurrences - 1} earlier occurrence(s) missed while no server ran (policy ${s.missed})`
          : undefined;
      const claimed = await this.o.store.claimFiring(
        s.id,
        due.dueAt,
        this.o.clock.now(),
        due.fire ? 'pending' : 'skipped',
        due.fire ? note : (note ?? 'missed while no server ran (policy skip)'),
      );
      if (!claimed || !due.fire) continue;
      await this.act(s, due.dueAt, false);
    }
  }

  /** Do what a recorded firing does, and record how it ended (`recovering`: a previous process may have done it). */
  private async act(s: Schedule, dueAt: number, recovering: boolean): Promise<void> {
    let outcome: { status: 'done' | 'failed'; taskId?: string; error?: string };
    try {
      outcome = await this.perform(s, dueAt, recovering);
    } catch (err) {
      // A storage failure leaves it pending: the next start finishes it.
      this.logger.error({ err, schedule_id: s.id }, 'schedules: a firing could not be finished');
      return;
    }
    await this.o.store.finishFiring(s.id, dueAt, outcome);
    this.logger.info(
      {
        schedule_id: s.id,
        due_at: new Date(dueAt).toISOString(),
        status: outcome.status,
        task_id: outcome.taskId,
      },
      'schedules: fired',
    );
    this.o.onFired?.({
      schedule: s,
      dueAt,
      status: outcome.status,
      ...(outcome.taskId !== undefined ? { taskId: outcome.taskId } : {}),
    });
  }

  private async perform(
    s: Schedule,
    dueAt: number,
    recovering: boolean,
  ): Promise<{ status: 'done' | 'failed'; taskId?: string; error?: string }> {
    const a = s.action;
    if (a.type === 'create_task') {
      const t = a.template;
      const r = await this.o.tasks.create({
        kind: t.kind,
        prompt: t.prompt,
        clientId: t.clientId ?? null,
        ...(t.context !== undefined ? { context: t.context } : {}),
        ...(t.allowedCommands !== undefined ? { allowedCommands: t.allowedCommands } : {}),
        ...(t.settings !== undefined ? { settings: t.settings as TaskSettings } : {}),
        requestId: firingRequestId(s.id, dueAt),
        requestNamespace: SCHEDULE_REQUEST_NAMESPACE,
      });
      if (!r.ok) {
        if (r.error.code === 'unavailable') throw new Error(r.error.message);
        return { status: 'failed', error: `${r.error.code}: ${r.error.message}` };
      }
      return { status: 'done', taskId: r.value.task.id };
    }
    const firing = firingRequestId(s.id, dueAt);
    let taskId = a.taskId;
    if (a.agent !== undefined) {
      const client = a.agentClientId;
      const found = await this.o.tasks.resolveAgent(
        a.agent,
        client === undefined ? () => true : (t) => this.o.tasks.canAccess(t, client, 'act'),
      );
      if (!found.ok) return { status: 'failed', error: `agent "${a.agent}": ${found.message}` };
      taskId = found.task.id;
    }
    if (taskId === undefined) return { status: 'failed', error: 'the schedule names no task and no agent' };
    if (recovering) {
      const history = await this.o.history(taskId);
      const posted = history.some(
        (h) =>
          h.type === 'event' &&
          h.data !== null &&
          typeof h.data === 'object' &&
          !Array.isArray(h.data) &&
          h.data['schedule_firing'] === firing,
      );
      if (posted) return { status: 'done', taskId };
    }
    const base = a.data !== null && typeof a.data === 'object' && !Array.isArray(a.data) ? a.data : {};
    const data: JsonValue = {
      ...(a.data === undefined || base === a.data ? {} : { value: a.data }),
      ...base,
      schedule_id: s.id,
      due_at: new Date(dueAt).toISOString(),
      schedule_firing: firing,
    };
    const r = await this.o.tasks.event(taskId, a.name, data);
    if (!r.ok) {
      if (r.error.code === 'unavailable') throw new Error(r.error.message);
      return { status: 'failed', taskId, error: `${r.error.code}: ${r.error.message}` };
    }
    return { status: 'done', taskId };
  }

  /** Sleep until the earliest next occurrence (at most `maxSleepMs`). */
  private async arm(): Promise<void> {
    if (this.state !== 'started') return;
    let wait = this.maxSleepMs;
    try {
      const now = this.o.clock.now();
      for (const s of await this.o.store.listSchedules()) {
        if (s.paused) continue;
        const next = nextOccurrence(s.spec, s.lastDueAt ?? s.createdAt, s.createdAt);
        if (next !== undefined) wait = Math.min(wait, Math.max(0, next - now));
      }
    } catch (err) {
      this.logger.warn({ err }, 'schedules: cannot read the schedules; trying again later');
    }
    if (this.state !== 'started') return;
    if (this.timer !== undefined) this.o.clock.clearTimeout(this.timer);
    this.timer = this.o.clock.setTimeout(() => {
      this.timer = undefined;
      void this.pass();
    }, wait);
  }
}
