/**
 * Durable schedules in the orchestrator: the engine's `ScheduleRunner` over the store's `ScheduleStore` (the
 * in-memory one for an embedded store without schedules), started after the engine and stopped before it, and the
 * operations the HTTP routes and the CLI use — add (checked: the spec parses, the kind exists, the event's task
 * exists; an agent's name is resolved at each firing), list with the next due time, pause, resume (from now:
 * occurrences while paused are not fired), remove. The wire mapping (snake_case) of schedules is here, its one place.
 */
import { randomUUID } from 'node:crypto';
import {
  isEngineError,
  nextOccurrence,
  resolveTaskKind,
  scheduleSpecProblem,
  ScheduleRunner,
  taskKindNames,
  type Clock,
  type Engine,
  type JsonValue,
  type Logger,
  type Schedule,
  type ScheduleFiring,
  type ScheduleSpec,
  type ScheduleStore,
  type TaskKindCatalogue,
  type TaskOperations,
} from '@ccagent/engine';
import type { z } from 'zod';
import type {
  CreateScheduleBodySchema,
  HttpScheduleEvent,
  HttpScheduleFiringSchema,
  HttpScheduleSchema,
} from '@ccagent/protocol';

/** A refused schedule operation (an HTTP status follows from the code). */
export interface ScheduleRefusal {
  code: 'invalid_field' | 'not_found' | 'duplicate';
  message: string;
  path?: string;
}

type Result<T> = { ok: true; value: T } | { ok: false; error: ScheduleRefusal };

/** Options of {@link ScheduleService}. */
export interface ScheduleServiceOptions {
  store: ScheduleStore;
  engine: Engine;
  tasks: TaskOperations;
  kinds: TaskKindCatalogue;
  clock: Clock;
  logger: Logger;
  /** Told of every change on disk and every finished firing (the live stream's `schedule` record). */
  onChange?: (e: HttpScheduleEvent) => void;
}

/** See the module comment. */
export class ScheduleService {
  private readonly runner: ScheduleRunner;

  constructor(private readonly o: ScheduleServiceOptions) {
    this.runner = new ScheduleRunner({
      store: o.store,
      tasks: o.tasks,
      history: (id) => o.engine.getHistory(id),
      clock: o.clock,
      logger: o.logger,
      onFired: ({ schedule, dueAt, status, taskId }) =>
        this.o.onChange?.({
          schedule_id: schedule.id,
          change: 'fired',
          at: o.clock.now(),
          due_at: dueAt,
          status,
          ...(taskId !== undefined ? { task_id: taskId } : {}),
        }),
    });
  }

  private changed(id: string, change: 'added' | 'paused' | 'resumed' | 'removed'): void {
    this.o.onChange?.({ schedule_id: id, change, at: this.o.clock.now() });
  }

  /** Finish firings a previous process left pending, then fire on time. */
  start(): Promise<void> {
    return this.runner.start();
  }

  stop(): Promise<void> {
    return this.runner.stop();
  }

  /** Every schedule and the latest firings, as the wire shows them. */
  async list(limit = 50): Promise<{
    schedules: Array<z.infer<typeof HttpScheduleSchema>>;
    firings: Array<z.infer<typeof HttpScheduleFiringSchema>>;
  }> {
    const [schedules, firings] = await Promise.all([
      this.o.store.listSchedules(),
      this.o.store.listFirings({ limit }),
    ]);
    return { schedules: schedules.map(scheduleToWire), firings: firings.map(firingToWire) };
  }

  /** Add a schedule from a parsed body, `by` its caller. */
  async add(
    b: z.infer<typeof CreateScheduleBodySchema>,
    by: string,
  ): Promise<Result<z.infer<typeof HttpScheduleSchema>>> {
    const refuse = (path: string, message: string, code: ScheduleRefusal['code'] = 'invalid_field') => ({
      ok: false as const,
      error: { code, message, path: `$.${path}` },
    });
    const spec: ScheduleSpec =
      b.cron !== undefined
        ? { type: 'cron', expression: b.cron, timezone: b.timezone ?? 'UTC' }
        : { type: 'interval', everyMs: b.every_ms ?? 0 };
    const problem = scheduleSpecProblem(spec);
    if (problem) return refuse(problem.path, problem.message);
    const now = this.o.clock.now();
    let action: Schedule['action'];
    if (b.task) {
      if (resolveTaskKind(this.o.kinds, b.task.task_kind) === undefined) {
        const known = taskKindNames(this.o.kinds).join(', ');
        return refuse('task.task_kind', `unknown task kind "${b.task.task_kind}"; known kinds: ${known}`);
      }
      action = {
        type: 'create_task',
        template: {
          kind: b.task.task_kind,
          prompt: b.task.prompt,
          clientId: b.task.client_id ?? null,
          ...(b.task.context !== undefined ? { context: b.task.context as JsonValue } : {}),
          ...(b.task.allowed_commands !== undefined ? { allowedCommands: b.task.allowed_commands } : {}),
          ...(b.task.settings !== undefined ? { settings: b.task.settings as JsonValue } : {}),
        },
      };
    } else {
      const e = b.event as NonNullable<typeof b.event>;
      if (e.task_id !== undefined && !(await this.o.engine.getTask(e.task_id))) {
        return refuse('event.task_id', `no task ${e.task_id}`);
      }
      // An agent's name is resolved at each firing: the agent may be started (or restarted) after the schedule.
      action = {
        type: 'post_event',
        ...(e.task_id !== undefined ? { taskId: e.task_id } : {}),
        ...(e.agent !== undefined ? { agent: e.agent } : {}),
        ...(e.client_id !== undefined ? { agentClientId: e.client_id } : {}),
        name: e.name,
        ...(e.data !== undefined ? { data: e.data as JsonValue } : {}),
      };
    }
    const s: Schedule = {
      id: b.id ?? randomUUID(),
      spec,
      action,
      missed: b.missed ?? 'run_once',
      paused: b.paused ?? false,
      createdBy: by,
      createdAt: now,
      updatedAt: now,
    };
    if (b.name !== undefined) s.name = b.name;
    try {
      await this.o.store.insertSchedule(s);
    } catch (err) {
      if (isEngineError(err, 'invalid_input')) return refuse('id', `schedule ${s.id} exists`, 'duplicate');
      throw err;
    }
    this.changed(s.id, 'added');
    await this.runner.refresh();
    return { ok: true, value: scheduleToWire(s) };
  }

  /** Pause (`true`) or resume a schedule; a resumed one starts from now. */
  async setPaused(id: string, paused: boolean): Promise<Result<z.infer<typeof HttpScheduleSchema>>> {
    const now = this.o.clock.now();
    if (!paused) {
      // Occurrences while it was paused are not "missed while down": they are skipped by moving past them.
      const before = await this.o.store.getSchedule(id);
      if (before?.paused) await this.o.store.advanceSchedule(id, now, now);
    }
    const s = await this.o.store.setPaused(id, paused, now);
    if (!s) return { ok: false, error: { code: 'not_found', message: `no schedule ${id}` } };
    this.changed(id, paused ? 'paused' : 'resumed');
    await this.runner.refresh();
    return { ok: true, value: scheduleToWire(s) };
  }

  /** Remove a schedule and its firings. */
  async remove(id: string): Promise<Result<string>> {
    if (!(await this.o.store.deleteSchedule(id))) {
      return { ok: false, error: { code: 'not_found', message: `no schedule ${id}` } };
    }
    this.changed(id, 'removed');
    await this.runner.refresh();
    return { ok: true, value: id };
  }
}

/** A schedule on the wire. */
export function scheduleToWire(s: Schedule): z.infer<typeof HttpScheduleSchema> {
  const out: z.infer<typeof HttpScheduleSchema> = {
    id: s.id,
    missed: s.missed,
    paused: s.paused,
    created_at: s.createdAt,
    updated_at: s.updatedAt,
  };
  if (s.name !== undefined) out.name = s.name;
  if (s.spec.type === 'cron') {
    out.cron = s.spec.expression;
    out.timezone = s.spec.timezone;
  } else out.every_ms = s.spec.everyMs;
  const a = s.action;
  if (a.type === 'create_task') {
    const t = a.template;
    out.task = {
      task_kind: t.kind,
      prompt: t.prompt,
      client_id: t.clientId ?? null,
      ...(t.context !== undefined ? { context: t.context } : {}),
      ...(t.allowedCommands !== undefined ? { allowed_commands: t.allowedCommands } : {}),
      ...(t.settings !== undefined ? { settings: t.settings } : {}),
    };
  } else {
    out.event = {
      ...(a.taskId !== undefined ? { task_id: a.taskId } : {}),
      ...(a.agent !== undefined ? { agent: a.agent } : {}),
      ...(a.agentClientId !== undefined ? { client_id: a.agentClientId } : {}),
      name: a.name,
      ...(a.data !== undefined ? { data: a.data } : {}),
    };
  }
  if (s.createdBy !== undefined) out.created_by = s.createdBy;
  if (s.lastDueAt !== undefined) out.last_due_at = s.lastDueAt;
  if (!s.paused) {
    const next = nextOccurrence(s.spec, s.lastDueAt ?? s.createdAt, s.createdAt);
    if (next !== undefined) out.next_due_at = next;
  }
  return out;
}

/** A firing on the wire. */
export function firingToWire(f: ScheduleFiring): z.infer<typeof HttpScheduleFiringSchema> {
  return {
    schedule_id: f.scheduleId,
    due_at: f.dueAt,
    fired_at: f.firedAt,
    status: f.status,
    ...(f.taskId !== undefined ? { task_id: f.taskId } : {}),
    ...(f.error !== undefined ? { error: f.error } : {}),
  };
}
