/**
 * `ScheduleStore` in memory: for tests and for library users without a database. Passes the same contract suite as
 * the SQLite and PostgreSQL stores (`@ccagent/engine/testing`'s `scheduleStoreContract`).
 */
import { EngineError } from './engine-error.js';
import type { FiringQuery, Schedule, ScheduleFiring, ScheduleStore } from './schedules.js';

const copy = <T>(v: T): T => structuredClone(v);

/** See the module comment. */
export class InMemoryScheduleStore implements ScheduleStore {
  private readonly schedules = new Map<string, Schedule>();
  private readonly firings = new Map<string, ScheduleFiring>();
  private order = 0;
  private readonly seq = new Map<string, number>();

  insertSchedule(schedule: Schedule): Promise<void> {
    if (this.schedules.has(schedule.id)) {
      return Promise.reject(new EngineError('invalid_input', `schedule ${schedule.id} exists`));
    }
    this.schedules.set(schedule.id, copy(schedule));
    return Promise.resolve();
  }

  getSchedule(id: string): Promise<Schedule | undefined> {
    const s = this.schedules.get(id);
    return Promise.resolve(s ? copy(s) : undefined);
  }

  listSchedules(): Promise<Schedule[]> {
    return Promise.resolve(
      [...this.schedules.values()]
        .sort((a, b) => a.createdAt - b.createdAt || a.id.localeCompare(b.id))
        .map(copy),
    );
  }

  setPaused(id: string, paused: boolean, at: number): Promise<Schedule | undefined> {
    const s = this.schedules.get(id);
    if (!s) return Promise.resolve(undefined);
    s.paused = paused;
    s.updatedAt = at;
    return Promise.resolve(copy(s));
  }

  advanceSchedule(id: string, dueAt: number, at: number): Promise<Schedule | undefined> {
    const s = this.schedules.get(id);
    if (!s) return Promise.resolve(undefined);
    if (s.lastDueAt === undefined || s.lastDueAt < dueAt) s.lastDueAt = dueAt;
    s.updatedAt = at;
    return Promise.resolve(copy(s));
  }

  deleteSchedule(id: string): Promise<boolean> {
    const had = this.schedules.delete(id);
    for (const [k, f] of this.firings) if (f.scheduleId === id) this.firings.delete(k);
    return Promise.resolve(had);
  }

  claimFiring(
    id: string,
    dueAt: number,
    at: number,
    status: 'pending' | 'skipped',
    note?: string,
  ): Promise<boolean> {
    const s = this.schedules.get(id);
    const key = `${id}\u0000${dueAt}`;
    if (!s || s.paused || (s.lastDueAt !== undefined && s.lastDueAt >= dueAt) || this.firings.has(key)) {
      return Promise.resolve(false);
    }
    s.lastDueAt = dueAt;
    s.updatedAt = at;
    const f: ScheduleFiring = { scheduleId: id, dueAt, firedAt: at, status };
    if (note !== undefined) f.error = note;
    this.firings.set(key, f);
    this.seq.set(key, ++this.order);
    return Promise.resolve(true);
  }

  finishFiring(
    id: string,
    dueAt: number,
    outcome: { status: 'done' | 'failed'; taskId?: string; error?: string },
  ): Promise<void> {
    const f = this.firings.get(`${id}\u0000${dueAt}`);
    if (f) {
      f.status = outcome.status;
      if (outcome.taskId !== undefined) f.taskId = outcome.taskId;
      if (outcome.error !== undefined) f.error = outcome.error;
    }
    return Promise.resolve();
  }

  listFirings(query: FiringQuery = {}): Promise<ScheduleFiring[]> {
    const limit = Math.min(1000, Math.max(1, query.limit ?? 100));
    const rows = [...this.firings.values()]
      .filter(
        (f) =>
          (query.scheduleId === undefined || f.scheduleId === query.scheduleId) &&
          (query.status === undefined || f.status === query.status),
      )
      .sort((a, b) => b.dueAt - a.dueAt || b.scheduleId.localeCompare(a.scheduleId))
      .slice(0, limit);
    return Promise.resolve(rows.map(copy));
  }
}
