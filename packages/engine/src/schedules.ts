/**
 * Durable schedules: what a schedule is (a cron expression in a time zone, or a fixed interval), what each firing
 * does (create a task from a template, or post an event to a running task such as a resident agent), the policy for
 * firings missed while no server ran, and the storage port every store implements (`ScheduleStore`). The rules are
 * pure functions here; the {@link ScheduleRunner} (schedule-runner.ts) fires them.
 *
 * A firing is identified by (schedule, due time): the store records it durably — and moves the schedule's
 * `lastDueAt` past it — in one transaction before anything is done, and refuses a second record of it, so a firing
 * is acted on once whatever restarts or second processes happen; a firing recorded but not finished (the process
 * died in between) is finished on the next start, by an action that is itself idempotent per firing.
 */
import { Cron } from 'croner';
import type { JsonValue } from './types.js';

/** When a schedule fires: a cron expression (5 or 6 fields, croner's syntax) in an IANA time zone, or every `everyMs`. */
export type ScheduleSpec =
  | { type: 'cron'; expression: string; timezone: string }
  | {
      type: 'interval';
      /** Period in ms (at least {@link MIN_INTERVAL_MS}). */
      everyMs: number;
      /** Occurrences are `anchorAt + k * everyMs` (epoch ms); default the schedule's creation time. */
      anchorAt?: number;
    };

/** The task a firing creates: the fields of a create request (checked against the kinds when the schedule is added). */
export interface ScheduleTaskTemplate {
  kind: string;
  prompt: string;
  clientId?: string | null;
  context?: JsonValue;
  allowedCommands?: string[];
  /** Per-task settings, as `POST /api/tasks` takes them (snake_case). */
  settings?: JsonValue;
}

/** What each firing does. */
export type ScheduleAction =
  | { type: 'create_task'; template: ScheduleTaskTemplate }
  | {
      type: 'post_event';
      /** The task that gets the event: a running task, typically a resident agent (or `agent` instead). */
      taskId?: string;
      /**
       * Instead of `taskId`: the agent's name, resolved when the schedule fires among the tasks that have not ended
       * (`TaskOperations.resolveAgent`), so a restarted agent of that name gets the next firings. None or several is
       * a failed firing that says so.
       */
      agent?: string;
      /** With `agent`: only the agents this computer reaches (two computers may each run an agent of one name). */
      agentClientId?: string;
      /** Event name (`task_event`'s `name`). */
      name: string;
      /** Event payload; the firing adds `schedule_id` and `due_at` to it. */
      data?: JsonValue;
    };

/**
 * What happens to occurrences that passed while no server ran (more than the runner's grace late): `run_once` fires
 * the latest of them once (the earlier ones are skipped), `skip` fires none and waits for the next one.
 */
export type MissedPolicy = 'run_once' | 'skip';

/** Every missed-firing policy. */
export const MISSED_POLICIES: readonly MissedPolicy[] = ['run_once', 'skip'];

/** A stored schedule. Times are epoch ms. */
export interface Schedule {
  id: string;
  /** A person's name for it (shown in lists). */
  name?: string;
  spec: ScheduleSpec;
  action: ScheduleAction;
  missed: MissedPolicy;
  paused: boolean;
  /** Who added it (`operator:<id>`, `cli`). */
  createdBy?: string;
  createdAt: number;
  updatedAt: number;
  /** Due time of the last occurrence recorded (fired or skipped); occurrences after it are still to come. */
  lastDueAt?: number;
}

/** How a recorded firing ended: `pending` (recorded, its action not yet finished), `done`, `failed`, `skipped`. */
export type FiringStatus = 'pending' | 'done' | 'failed' | 'skipped';

/** One recorded firing of a schedule, unique per (scheduleId, dueAt). */
export interface ScheduleFiring {
  scheduleId: string;
  /** The occurrence's due time (epoch ms): the firing's identity within its schedule. */
  dueAt: number;
  /** When it was recorded. */
  firedAt: number;
  status: FiringStatus;
  /** The task created, or the task the event was posted to. */
  taskId?: string;
  /** Why it failed, or how many occurrences a skip covered. */
  error?: string;
}

/** Filter of {@link ScheduleStore.listFirings}: newest first. */
export interface FiringQuery {
  scheduleId?: string;
  status?: FiringStatus;
  /** 1..1000, default 100. */
  limit?: number;
}

/**
 * Storage of schedules and their firings, implemented by every store (SQLite, PostgreSQL, in memory) and checked by
 * one contract suite. Every write is durable when its promise resolves.
 */
export interface ScheduleStore {
  /** Store a new schedule; rejects with `EngineError('invalid_input')` when its id is taken. */
  insertSchedule(schedule: Schedule): Promise<void>;
  getSchedule(id: string): Promise<Schedule | undefined>;
  /** Every schedule, oldest first. */
  listSchedules(): Promise<Schedule[]>;
  /** Pause or resume; returns the schedule as stored, or undefined when there is none. */
  setPaused(id: string, paused: boolean, at: number): Promise<Schedule | undefined>;
  /**
   * Move a schedule's `lastDueAt` to `dueAt` without a firing (a schedule resumed after a pause starts from now);
   * only forward. Returns the schedule, or undefined when there is none.
   */
  advanceSchedule(id: string, dueAt: number, at: number): Promise<Schedule | undefined>;
  /** Delete a schedule and its firings; false when there was none. */
  deleteSchedule(id: string): Promise<boolean>;
  /**
   * Record the firing (`status` `pending`, or `skipped` with `note`) of schedule `id` due at `dueAt` and set the
   * schedule's `lastDueAt` to `dueAt`, in one transaction — only if the schedule exists, is not paused and its
   * `lastDueAt` is before `dueAt`. Resolves true when recorded, false when not (already recorded, by this process or
   * another; paused; deleted): then the caller must not act.
   */
  claimFiring(
    id: string,
    dueAt: number,
    at: number,
    status: 'pending' | 'skipped',
    note?: string,
  ): Promise<boolean>;
  /** Finish a pending firing: `done` or `failed`, with the task it made or the error. */
  finishFiring(
    id: string,
    dueAt: number,
    outcome: { status: 'done' | 'failed'; taskId?: string; error?: string },
  ): Promise<void>;
  /** Recorded firings, newest first. */
  listFirings(query?: FiringQuery): Promise<ScheduleFiring[]>;
}

/** Shortest interval of an interval schedule (ms). */
export const MIN_INTERVAL_MS = 1_000;

/** Why a schedule's spec is not usable: a message naming the field. */
export interface ScheduleSpecProblem {
  path: string;
  message: string;
}

/** Whether `tz` is an IANA time zone this runtime knows. */
export function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/** The problem with `spec`, or undefined when it can be scheduled (the cron expression parses, the zone exists). */
export function scheduleSpecProblem(spec: ScheduleSpec): ScheduleSpecProblem | undefined {
  if (spec.type === 'interval') {
    if (!Number.isSafeInteger(spec.everyMs) || spec.everyMs < MIN_INTERVAL_MS) {
      return { path: 'every_ms', message: `every_ms must be an integer of at least ${MIN_INTERVAL_MS}` };
    }
    return undefined;
  }
  if (!isTimeZone(spec.timezone)) {
    return {
      path: 'timezone',
      message: `unknown time zone "${spec.timezone}" (an IANA name such as Europe/Berlin)`,
    };
  }
  try {
    const c = new Cron(spec.expression, { timezone: spec.timezone, paused: true });
    if (c.nextRun(new Date(0)) === null && c.nextRun() === null) {
      return { path: 'cron', message: `cron expression "${spec.expression}" never fires` };
    }
  } catch (err) {
    return { path: 'cron', message: `cron expression "${spec.expression}": ${(err as Error).message}` };
  }
  return undefined;
}

/** The first occurrence of `spec` strictly after `after` (epoch ms), or undefined when there is none. */
export function nextOccurrence(spec: ScheduleSpec, after: number, createdAt: number): number | undefined {
  if (spec.type === 'interval') {
    const anchor = spec.anchorAt ?? createdAt;
    if (after < anchor) return anchor;
    return anchor + (Math.floor((after - anchor) / spec.everyMs) + 1) * spec.everyMs;
  }
  const next = new Cron(spec.expression, { timezone: spec.timezone, paused: true }).nextRun(new Date(after));
  return next === null ? undefined : next.getTime();
}

/** What is due of a schedule at `now`: the occurrence to record, whether to act on it, and how many it covers. */
export interface DueFiring {
  dueAt: number;
  /** False: record it `skipped` (the `skip` policy for occurrences missed while down). */
  fire: boolean;
  /** Occurrences it stands for (1, or more after a downtime: the earlier ones are not fired). */
  occurrences: number;
}

/** Most occurrences counted when catching up after a downtime (a per-second cron down for a month stops here). */
const MAX_CATCH_UP = 100_000;

/**
 * The firing due of `s` at `now`, or undefined when nothing is due (paused, or its next occurrence is later). The
 * earliest occurrence not yet recorded comes first: when it is at most `graceMs` late it is fired by itself, so the
 * occurrences due while a restart or a leader takeover lasted a few seconds each fire once, none merged into another.
 * Occurrences more than `graceMs` late (missed while no server ran) are recorded as one firing, the latest of them,
 * fired when the policy is `run_once`; the on-time ones after them come in the next calls.
 */
export function dueFiring(s: Schedule, now: number, graceMs: number): DueFiring | undefined {
  if (s.paused) return undefined;
  const from = s.lastDueAt ?? s.createdAt;
  const first = nextOccurrence(s.spec, from, s.createdAt);
  if (first === undefined || first > now) return undefined;
  if (now - first <= graceMs) return { dueAt: first, fire: true, occurrences: 1 };
  // Missed: every occurrence before `cutoff` is more than graceMs late.
  const cutoff = now - graceMs;
  let latest = first;
  let occurrences = 1;
  if (s.spec.type === 'interval') {
    const steps = Math.ceil((cutoff - first) / s.spec.everyMs) - 1;
    latest = first + steps * s.spec.everyMs;
    occurrences += steps;
  } else {
    for (;;) {
      const n = nextOccurrence(s.spec, latest, s.createdAt);
      if (n === undefined || n >= cutoff || occurrences >= MAX_CATCH_UP) break;
      latest = n;
      occurrences++;
    }
  }
  return { dueAt: latest, fire: s.missed === 'run_once', occurrences };
}
