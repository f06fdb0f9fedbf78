/**
 * The engine's `ScheduleStore` in PostgreSQL (schema version 3): the same operations and answers as the SQLite
 * store's `SqliteScheduleTables` (one contract suite runs against both). Writes go through the store's write queue:
 * durable when resolved, and fenced by the leader lease, so a process that lost the lease records no firing — with
 * two orchestrators on one database only the leader fires. A write may run twice (the queue re-runs a batch with
 * savepoints after one write failed), so each is a pure function of the database.
 */
import {
  EngineError,
  type FiringQuery,
  type FiringStatus,
  type MissedPolicy,
  type Schedule,
  type ScheduleAction,
  type ScheduleFiring,
  type ScheduleSpec,
  type ScheduleStore,
} from '@ccagent/engine';
import type pg from 'pg';

/** How the tables reach the database: the store's reads and queued (fenced) port writes. @internal */
export interface PgScheduleAccess {
  read<T>(run: (db: pg.Pool) => Promise<T>): Promise<T>;
  write<T>(run: (c: pg.ClientBase) => Promise<T>): Promise<T>;
}

type Row = Record<string, unknown>;

const SCHEDULE_COLS = `"id", "name", "spec", "action", "missed", "paused", "created_by", "created_at", "updated_at",
  "last_due_at"`;
const FIRING_COLS = `"schedule_id", "due_at", "fired_at", "status", "task_id", "error"`;

const num = (v: unknown): number => Number(v);

function toSchedule(r: Row): Schedule {
  const s: Schedule = {
    id: r['id'] as string,
    spec: JSON.parse(r['spec'] as string) as ScheduleSpec,
    action: JSON.parse(r['action'] as string) as ScheduleAction,
    missed: r['missed'] as MissedPolicy,
    paused: r['paused'] === true,
    createdAt: num(r['created_at']),
    updatedAt: num(r['updated_at']),
  };
  if (r['name'] !== null) s.name = r['name'] as string;
  if (r['created_by'] !== null) s.createdBy = r['created_by'] as string;
  if (r['last_due_at'] !== null) s.lastDueAt = num(r['last_due_at']);
  return s;
}

function toFiring(r: Row): ScheduleFiring {
  const f: ScheduleFiring = {
    scheduleId: r['schedule_id'] as string,
    dueAt: num(r['due_at']),
    firedAt: num(r['fired_at']),
    status: r['status'] as FiringStatus,
  };
  if (r['task_id'] !== null) f.taskId = r['task_id'] as string;
  if (r['error'] !== null) f.error = r['error'] as string;
  return f;
}

/** Schedules and firings of one PostgreSQL database. */
export class PgScheduleTables implements ScheduleStore {
  /** @internal Use `PostgresStore.schedules`. */
  constructor(private readonly a: PgScheduleAccess) {}

  insertSchedule(s: Schedule): Promise<void> {
    return this.a.write(async (db) => {
      const r = await db.query(
        `INSERT INTO "schedules" (${SCHEDULE_COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
         ON CONFLICT ("id") DO NOTHING`,
        [
          s.id,
          s.name ?? null,
          JSON.stringify(s.spec),
          JSON.stringify(s.action),
          s.missed,
          s.paused,
          s.createdBy ?? null,
          s.createdAt,
          s.updatedAt,
          s.lastDueAt ?? null,
        ],
      );
      if (r.rowCount === 0) {
        throw new EngineError('invalid_input', `schedule ${s.id} exists`, { details: { id: s.id } });
      }
    });
  }

  getSchedule(id: string): Promise<Schedule | undefined> {
    return this.a.read(async (db) => {
      const r = await db.query<Row>(`SELECT ${SCHEDULE_COLS} FROM "schedules" WHERE "id" = $1`, [id]);
      return r.rows[0] ? toSchedule(r.rows[0]) : undefined;
    });
  }

  listSchedules(): Promise<Schedule[]> {
    return this.a.read(async (db) =>
      (await db.query<Row>(`SELECT ${SCHEDULE_COLS} FROM "schedules" ORDER BY "created_at", "id"`)).rows.map(
        toSchedule,
      ),
    );
  }

  setPaused(id: string, paused: boolean, at: number): Promise<Schedule | undefined> {
    return this.a.write(async (db) => {
      const r = await db.query<Row>(
        `UPDATE "schedules" SET "paused" = $2, "updated_at" = $3 WHERE "id" = $1 RETURNING ${SCHEDULE_COLS}`,
        [id, paused, at],
      );
      return r.rows[0] ? toSchedule(r.rows[0]) : undefined;
    });
  }

  advanceSchedule(id: string, dueAt: number, at: number): Promise<Schedule | undefined> {
    return this.a.write(async (db) => {
      const r = await db.query<Row>(
        `UPDATE "schedules" SET "last_due_at" = GREATEST(COALESCE("last_due_at", $2), $2), "updated_at" = $3
         WHERE "id" = $1 RETURNING ${SCHEDULE_COLS}`,
        [id, dueAt, at],
      );
      return r.rows[0] ? toSchedule(r.rows[0]) : undefined;
    });
  }

  deleteSchedule(id: string): Promise<boolean> {
    return this.a.write(async (db) => {
      await db.query(`DELETE FROM "schedule_firings" WHERE "schedule_id" = $1`, [id]);
      const r = await db.query(`DELETE FROM "schedules" WHERE "id" = $1`, [id]);
      return (r.rowCount ?? 0) > 0;
    });
  }

  claimFiring(
    id: string,
    dueAt: number,
    at: number,
    status: 'pending' | 'skipped',
    note?: string,
  ): Promise<boolean> {
    return this.a.write(async (db) => {
      // The schedule row's update is the claim: it locks the row, so a concurrent claim of the same due time waits
      // and then finds last_due_at already there.
      const moved = await db.query(
        `UPDATE "schedules" SET "last_due_at" = $2, "updated_at" = $3
         WHERE "id" = $1 AND NOT "paused" AND ("last_due_at" IS NULL OR "last_due_at" < $2)`,
        [id, dueAt, at],
      );
      if ((moved.rowCount ?? 0) === 0) return false;
      const r = await db.query(
        `INSERT INTO "schedule_firings" (${FIRING_COLS}) VALUES ($1, $2, $3, $4, NULL, $5)
         ON CONFLICT DO NOTHING`,
        [id, dueAt, at, status, note ?? null],
      );
      return (r.rowCount ?? 0) > 0;
    });
  }

  finishFiring(
    id: string,
    dueAt: number,
    outcome: { status: 'done' | 'failed'; taskId?: string; error?: string },
  ): Promise<void> {
    return this.a.write(async (db) => {
      await db.query(
        `UPDATE "schedule_firings" SET "status" = $3, "task_id" = COALESCE($4, "task_id"),
         "error" = COALESCE($5, "error") WHERE "schedule_id" = $1 AND "due_at" = $2`,
        [id, dueAt, outcome.status, outcome.taskId ?? null, outcome.error ?? null],
      );
    });
  }

  listFirings(query: FiringQuery = {}): Promise<ScheduleFiring[]> {
    return this.a.read(async (db) => {
      const conds: string[] = [];
      const params: unknown[] = [];
      if (query.scheduleId !== undefined) {
        params.push(query.scheduleId);
        conds.push(`"schedule_id" = $${params.length}`);
      }
      if (query.status !== undefined) {
        params.push(query.status);
        conds.push(`"status" = $${params.length}`);
      }
      params.push(Math.min(1000, Math.max(1, Math.floor(query.limit ?? 100))));
      const where = conds.length > 0 ? `WHERE ${conds.join(' AND ')}` : '';
      const r = await db.query<Row>(
        `SELECT ${FIRING_COLS} FROM "schedule_firings" ${where}
         ORDER BY "due_at" DESC, "schedule_id" DESC LIMIT $${params.length}`,
        params,
      );
      return r.rows.map(toFiring);
    });
  }
}
