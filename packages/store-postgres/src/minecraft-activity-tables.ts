/**
 * The engine's `MinecraftActivityStore` in PostgreSQL (schema version 7): the same operations and answers as the
 * SQLite store's `SqliteMinecraftActivity` (one contract suite runs against both). Writes go through the store's write
 * queue: durable when resolved, and fenced by the leader lease, so only the active process records activity. A write
 * may run twice (the queue re-runs a batch with savepoints after one write failed), so each is a pure function of the
 * database.
 */
import type { McActionRecord, McActivityLimits, McLogRecord, MinecraftActivityStore } from '@ccagent/engine';
import type pg from 'pg';
import type { PgScheduleAccess } from './schedule-tables.js';

type Row = Record<string, unknown>;

const num = (v: unknown): number => Number(v);

function toAction(r: Row): McActionRecord {
  const a: McActionRecord = {
    instanceId: r['instance_id'] as string,
    actionId: r['action_id'] as string,
    type: r['type'] as string,
    taskId: r['task_id'] as string | null,
    startedAt: num(r['started_at']),
    endedAt: num(r['ended_at']),
    ok: r['ok'] === true,
  };
  if (r['code'] !== null) a.code = r['code'] as string;
  if (r['error'] !== null) a.error = r['error'] as string;
  if (r['result'] !== null) a.result = r['result'] as string;
  return a;
}

/** Minecraft activity of one PostgreSQL database. */
export class PgMinecraftActivity implements MinecraftActivityStore {
  /** @internal Use `PostgresStore.minecraftActivity`. */
  constructor(private readonly a: PgScheduleAccess) {}

  appendMinecraftLogs(lines: McLogRecord[], keep: number): Promise<void> {
    if (lines.length === 0) return Promise.resolve();
    return this.a.write(async (c) => {
      // One statement a batch: the rows as arrays (unnest), whatever their number.
      await c.query(
        `INSERT INTO "minecraft_logs" ("instance_id", "seq", "at", "message")
         SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::text[])
         ON CONFLICT DO NOTHING`,
        [
          lines.map((l) => l.instanceId),
          lines.map((l) => l.seq),
          lines.map((l) => l.at),
          lines.map((l) => l.message),
        ],
      );
      await c.query(
        `DELETE FROM "minecraft_logs" m USING (
           SELECT "instance_id", "seq" FROM (
             SELECT "instance_id", "seq",
                    row_number() OVER (PARTITION BY "instance_id" ORDER BY "seq" DESC) AS n
             FROM "minecraft_logs" WHERE "instance_id" = ANY($1::text[])) r
           WHERE r.n > $2) old
         WHERE m."instance_id" = old."instance_id" AND m."seq" = old."seq"`,
        [[...new Set(lines.map((l) => l.instanceId))], keep],
      );
    });
  }

  saveMinecraftAction(r: McActionRecord, keep: number): Promise<void> {
    return this.a.write(async (c) => {
      await c.query(
        `INSERT INTO "minecraft_actions" ("instance_id", "action_id", "type", "task_id", "started_at", "ended_at",
           "ok", "code", "error", "result")
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
         ON CONFLICT ("instance_id", "action_id") DO UPDATE SET "type" = EXCLUDED."type",
           "task_id" = EXCLUDED."task_id", "started_at" = EXCLUDED."started_at", "ended_at" = EXCLUDED."ended_at",
           "ok" = EXCLUDED."ok", "code" = EXCLUDED."code", "error" = EXCLUDED."error", "result" = EXCLUDED."result"`,
        [
          r.instanceId,
          r.actionId,
          r.type,
          r.taskId,
          r.startedAt,
          r.endedAt,
          r.ok,
          r.code ?? null,
          r.error ?? null,
          r.result ?? null,
        ],
      );
      await c.query(
        `DELETE FROM "minecraft_actions" WHERE "instance_id" = $1 AND "action_id" NOT IN (
           SELECT "action_id" FROM "minecraft_actions" WHERE "instance_id" = $1
           ORDER BY "started_at" DESC, "action_id" DESC LIMIT $2)`,
        [r.instanceId, keep],
      );
    });
  }

  readMinecraftActivity(
    instanceId: string,
    limits: McActivityLimits,
  ): Promise<{ logs: McLogRecord[]; actions: McActionRecord[] }> {
    return this.a.read(async (db: pg.Pool) => {
      const l = await db.query<Row>(
        `SELECT "instance_id", "seq", "at", "message" FROM "minecraft_logs" WHERE "instance_id" = $1
         ORDER BY "seq" DESC LIMIT $2`,
        [instanceId, limits.logs],
      );
      const a = await db.query<Row>(
        `SELECT * FROM "minecraft_actions" WHERE "instance_id" = $1
         ORDER BY "started_at" DESC, "action_id" DESC LIMIT $2`,
        [instanceId, limits.actions],
      );
      return {
        logs: l.rows.reverse().map((r) => ({
          instanceId: r['instance_id'] as string,
          seq: num(r['seq']),
          at: num(r['at']),
          message: r['message'] as string,
        })),
        actions: a.rows.reverse().map(toAction),
      };
    });
  }

  lastMinecraftLogSeqs(): Promise<Map<string, number>> {
    return this.a.read(async (db: pg.Pool) => {
      const r = await db.query<Row>(
        'SELECT "instance_id", max("seq") AS "seq" FROM "minecraft_logs" GROUP BY "instance_id"',
      );
      return new Map(r.rows.map((x) => [x['instance_id'] as string, num(x['seq'])]));
    });
  }
}
