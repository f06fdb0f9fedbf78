/**
 * The engine's `MinecraftActivityStore` in SQLite (schema version 11): a Minecraft instance's last `log` lines and
 * ended actions, kept so its activity page survives a restart. Reached through {@link SqliteStore.minecraftActivity};
 * writes go through the store's write queue (durable when resolved, group-committed with the task writes; a write may
 * run again inside a batch, so each is a pure function of the database).
 */
import type { McActionRecord, McActivityLimits, McLogRecord, MinecraftActivityStore } from '@ccagent/engine';
import { and, asc, desc, eq, sql } from 'drizzle-orm';
import type { BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import * as schema from './schema.js';

/** How the tables reach the database: the store's reads and queued port writes. @internal */
export interface MinecraftActivityAccess {
  orm: BetterSQLite3Database<typeof schema>;
  write<T>(run: () => T): Promise<T>;
  read<T>(run: () => T): Promise<T>;
}

const logs = schema.minecraftLogs;
const actions = schema.minecraftActions;

function toAction(r: typeof actions.$inferSelect): McActionRecord {
  const a: McActionRecord = {
    instanceId: r.instanceId,
    actionId: r.actionId,
    type: r.type,
    taskId: r.taskId,
    startedAt: r.startedAt,
    endedAt: r.endedAt,
    ok: r.ok,
  };
  if (r.code !== null) a.code = r.code;
  if (r.error !== null) a.error = r.error;
  if (r.result !== null) a.result = r.result;
  return a;
}

/** Minecraft activity of one SQLite file. */
export class SqliteMinecraftActivity implements MinecraftActivityStore {
  /** @internal Use {@link SqliteStore.minecraftActivity}. */
  constructor(private readonly a: MinecraftActivityAccess) {}

  appendMinecraftLogs(lines: McLogRecord[], keep: number): Promise<void> {
    if (lines.length === 0) return Promise.resolve();
    return this.a.write(() => {
      const orm = this.a.orm;
      // At most 4 parameters a row; SQLite allows 32,766 in one statement.
      for (let i = 0; i < lines.length; i += 500) {
        orm
          .insert(logs)
          .values(lines.slice(i, i + 500))
          .onConflictDoNothing()
          .run();
      }
      for (const id of new Set(lines.map((l) => l.instanceId))) {
        orm.run(sql`DELETE FROM ${logs} WHERE ${logs.instanceId} = ${id} AND ${logs.seq} <= (
          SELECT ${logs.seq} FROM ${logs} WHERE ${logs.instanceId} = ${id}
          ORDER BY ${logs.seq} DESC LIMIT 1 OFFSET ${keep})`);
      }
    });
  }

  saveMinecraftAction(r: McActionRecord, keep: number): Promise<void> {
    return this.a.write(() => {
      const row = {
        instanceId: r.instanceId,
        actionId: r.actionId,
        type: r.type,
        taskId: r.taskId,
        startedAt: r.startedAt,
        endedAt: r.endedAt,
        ok: r.ok,
        code: r.code ?? null,
        error: r.error ?? null,
        result: r.result ?? null,
      };
      const orm = this.a.orm;
      orm
        .insert(actions)
        .values(row)
        .onConflictDoUpdate({ target: [actions.instanceId, actions.actionId], set: row })
        .run();
      const id = r.instanceId;
      orm.run(sql`DELETE FROM ${actions} WHERE ${actions.instanceId} = ${id} AND ${actions.actionId} NOT IN (
        SELECT ${actions.actionId} FROM ${actions} WHERE ${actions.instanceId} = ${id}
        ORDER BY ${actions.startedAt} DESC, ${actions.actionId} DESC LIMIT ${keep})`);
    });
  }

  readMinecraftActivity(
    instanceId: string,
    limits: McActivityLimits,
  ): Promise<{ logs: McLogRecord[]; actions: McActionRecord[] }> {
    return this.a.read(() => {
      const orm = this.a.orm;
      const l = orm
        .select()
        .from(logs)
        .where(eq(logs.instanceId, instanceId))
        .orderBy(desc(logs.seq))
        .limit(limits.logs)
        .all()
        .reverse();
      const a = orm
        .select()
        .from(actions)
        .where(and(eq(actions.instanceId, instanceId)))
        .orderBy(desc(actions.startedAt), desc(actions.actionId))
        .limit(limits.actions)
        .all()
        .reverse()
        .map(toAction);
      return { logs: l, actions: a };
    });
  }

  lastMinecraftLogSeqs(): Promise<Map<string, number>> {
    return this.a.read(() => {
      const rows = this.a.orm
        .select({ id: logs.instanceId, seq: sql<number>`max(${logs.seq})` })
        .from(logs)
        .groupBy(logs.instanceId)
        .orderBy(asc(logs.instanceId))
        .all();
      return new Map(rows.map((r) => [r.id, r.seq]));
    });
  }
}
