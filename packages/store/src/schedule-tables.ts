/**
 * The engine's `ScheduleStore` in SQLite (schema version 8): schedules and their firings, one row per (schedule,
 * due time). Reached through {@link SqliteStore.schedules}; writes go through the store's write queue (durable when
 * resolved; a write may run again inside a batch, so each is a pure function of the database).
 */
import {
  EngineError,
  type FiringQuery,
  type FiringStatus,
  type JsonValue,
  type MissedPolicy,
  type Schedule,
  type ScheduleAction,
  type ScheduleFiring,
  type ScheduleSpec,
  type ScheduleStore,
} from '@ccagent/engine';
import { and, asc, desc, eq, type SQL } from 'drizzle-orm';
import type { BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import * as schema from './schema.js';

/** How the tables reach the database: the store's reads and queued port writes. @internal */
export interface ScheduleTableAccess {
  orm: BetterSQLite3Database<typeof schema>;
  write<T>(run: () => T): Promise<T>;
  read<T>(run: () => T): Promise<T>;
}

type ScheduleRow = typeof schema.schedules.$inferSelect;
type FiringRow = typeof schema.scheduleFirings.$inferSelect;

/** A schedule row as the engine's `Schedule`. @internal */
export function rowToSchedule(r: {
  id: string;
  name: string | null;
  spec: string;
  action: string;
  missed: string;
  paused: number | boolean;
  createdBy: string | null;
  createdAt: number;
  updatedAt: number;
  lastDueAt: number | null;
}): Schedule {
  const s: Schedule = {
    id: r.id,
    spec: JSON.parse(r.spec) as ScheduleSpec,
    action: JSON.parse(r.action) as ScheduleAction,
    missed: r.missed as MissedPolicy,
    paused: r.paused === true || r.paused === 1,
    createdAt: Number(r.createdAt),
    updatedAt: Number(r.updatedAt),
  };
  if (r.name !== null) s.name = r.name;
  if (r.createdBy !== null) s.createdBy = r.createdBy;
  if (r.lastDueAt !== null) s.lastDueAt = Number(r.lastDueAt);
  return s;
}

/** A firing row as the engine's `ScheduleFiring`. @internal */
export function rowToFiring(r: {
  scheduleId: string;
  dueAt: number;
  firedAt: number;
  status: string;
  taskId: string | null;
  error: string | null;
}): ScheduleFiring {
  const f: ScheduleFiring = {
    scheduleId: r.scheduleId,
    dueAt: Number(r.dueAt),
    firedAt: Number(r.firedAt),
    status: r.status as FiringStatus,
  };
  if (r.taskId !== null) f.taskId = r.taskId;
  if (r.error !== null) f.error = r.error;
  return f;
}

const json = (v: JsonValue | ScheduleSpec | ScheduleAction): string => JSON.stringify(v);

/** Schedules and firings of one SQLite file. */
export class SqliteScheduleTables implements ScheduleStore {
  /** @internal Use {@link SqliteStore.schedules}. */
  constructor(private readonly a: ScheduleTableAccess) {}

  insertSchedule(s: Schedule): Promise<void> {
    return this.a.write(() => {
      const taken = this.a.orm
        .select({ id: schema.schedules.id })
        .from(schema.schedules)
        .where(eq(schema.schedules.id, s.id))
        .get();
      if (taken) throw new EngineError('invalid_input', `schedule ${s.id} exists`, { details: { id: s.id } });
      this.a.orm
        .insert(schema.schedules)
        .values({
          id: s.id,
          name: s.name ?? null,
          spec: json(s.spec),
          action: json(s.action),
          missed: s.missed,
          paused: s.paused ? 1 : 0,
          createdBy: s.createdBy ?? null,
          createdAt: s.createdAt,
          updatedAt: s.updatedAt,
          lastDueAt: s.lastDueAt ?? null,
        })
        .run();
    });
  }

  getSchedule(id: string): Promise<Schedule | undefined> {
    return this.a.read(() => {
      const r = this.a.orm.select().from(schema.schedules).where(eq(schema.schedules.id, id)).get();
      return r ? rowToSchedule(r) : undefined;
    });
  }

  listSchedules(): Promise<Schedule[]> {
    return this.a.read(() =>
      this.a.orm
        .select()
        .from(schema.schedules)
        .orderBy(asc(schema.schedules.createdAt), asc(schema.schedules.id))
        .all()
        .map(rowToSchedule),
    );
  }

  setPaused(id: string, paused: boolean, at: number): Promise<Schedule | undefined> {
    return this.a.write(() => {
      const r = this.a.orm
        .update(schema.schedules)
        .set({ paused: paused ? 1 : 0, updatedAt: at })
        .where(eq(schema.schedules.id, id))
        .returning()
        .get();
      return r ? rowToSchedule(r as ScheduleRow) : undefined;
    });
  }

  advanceSchedule(id: string, dueAt: number, at: number): Promise<Schedule | undefined> {
    return this.a.write(() => {
      const r = this.a.orm.select().from(schema.schedules).where(eq(schema.schedules.id, id)).get();
      if (!r) return undefined;
      const lastDueAt = r.lastDueAt === null || r.lastDueAt < dueAt ? dueAt : r.lastDueAt;
      this.a.orm
        .update(schema.schedules)
        .set({ lastDueAt, updatedAt: at })
        .where(eq(schema.schedules.id, id))
        .run();
      return rowToSchedule({ ...r, lastDueAt, updatedAt: at });
    });
  }

  deleteSchedule(id: string): Promise<boolean> {
    return this.a.write(() => {
      this.a.orm.delete(schema.scheduleFirings).where(eq(schema.scheduleFirings.scheduleId, id)).run();
      return this.a.orm.delete(schema.schedules).where(eq(schema.schedules.id, id)).run().changes > 0;
    });
  }

  claimFiring(
    id: string,
    dueAt: number,
    at: number,
    status: 'pending' | 'skipped',
    note?: string,
  ): Promise<boolean> {
    return this.a.write(() => {
      const s = this.a.orm.select().from(schema.schedules).where(eq(schema.schedules.id, id)).get();
      if (!s || s.paused !== 0 || (s.lastDueAt !== null && s.lastDueAt >= dueAt)) return false;
      const inserted = this.a.orm
        .insert(schema.scheduleFirings)
        .values({ scheduleId: id, dueAt, firedAt: at, status, taskId: null, error: note ?? null })
        .onConflictDoNothing()
        .run();
      if (inserted.changes === 0) return false;
      this.a.orm
        .update(schema.schedules)
        .set({ lastDueAt: dueAt, updatedAt: at })
        .where(eq(schema.schedules.id, id))
        .run();
      return true;
    });
  }

  finishFiring(
    id: string,
    dueAt: number,
    outcome: { status: 'done' | 'failed'; taskId?: string; error?: string },
  ): Promise<void> {
    return this.a.write(() => {
      const set: Partial<FiringRow> = { status: outcome.status };
      if (outcome.taskId !== undefined) set.taskId = outcome.taskId;
      if (outcome.error !== undefined) set.error = outcome.error;
      this.a.orm
        .update(schema.scheduleFirings)
        .set(set)
        .where(and(eq(schema.scheduleFirings.scheduleId, id), eq(schema.scheduleFirings.dueAt, dueAt)))
        .run();
    });
  }

  listFirings(query: FiringQuery = {}): Promise<ScheduleFiring[]> {
    return this.a.read(() => {
      const conds: SQL[] = [];
      if (query.scheduleId !== undefined) conds.push(eq(schema.scheduleFirings.scheduleId, query.scheduleId));
      if (query.status !== undefined) conds.push(eq(schema.scheduleFirings.status, query.status));
      const limit = Math.min(1000, Math.max(1, Math.floor(query.limit ?? 100)));
      return this.a.orm
        .select()
        .from(schema.scheduleFirings)
        .where(conds.length > 0 ? and(...conds) : undefined)
        .orderBy(desc(schema.scheduleFirings.dueAt), desc(schema.scheduleFirings.scheduleId))
        .limit(limit)
        .all()
        .map(rowToFiring);
    });
  }
}
