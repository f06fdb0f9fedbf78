/**
 * The shared contract suite of the `ScheduleStore` port, run by every implementation (in memory here, SQLite in
 * `@ccagent/store`, PostgreSQL in `@ccagent/store-postgres`). Besides the store's own operations it runs a simulated
 * week of an hourly schedule through the real `ScheduleRunner` and `TaskOperations` on a manual clock, with the
 * store closed and opened again in the middle (and a firing recorded but not acted on before that "crash"), and
 * checks every hour got exactly one task.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../clock.js';
import { Engine } from '../engine.js';
import { InMemoryTaskStore } from '../in-memory-task-store.js';
import { ScheduleRunner } from '../schedule-runner.js';
import type { Schedule, ScheduleStore } from '../schedules.js';
import { TaskOperations } from '../task-operations.js';
import type { TaskKindCatalogue } from '../task-kinds.js';

/**
 * Opens the store under test. `open` gives a fresh empty store the first time and the same data on every later call
 * (a restart); `close` closes what `open` returned; `cleanup` runs after each test.
 */
export type ScheduleStoreFactory = () => Promise<{
  open: () => Promise<ScheduleStore>;
  close: (store: ScheduleStore) => Promise<void>;
  cleanup?: () => Promise<void> | void;
}>;

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** Monday 2026-11-02 00:00 UTC. */
const MONDAY = Date.UTC(2026, 10, 2);

function hourly(id: string, overrides: Partial<Schedule> = {}): Schedule {
  return {
    id,
    name: `every hour (${id})`,
    spec: { type: 'cron', expression: '0 * * * *', timezone: 'Europe/Berlin' },
    action: { type: 'create_task', template: { kind: 'demo', prompt: 'look at the farm', clientId: null } },
    missed: 'run_once',
    paused: false,
    createdBy: 'test',
    createdAt: MONDAY - 1000,
    updatedAt: MONDAY - 1000,
    ...overrides,
  };
}

const CATALOGUE: TaskKindCatalogue = {
  kinds: { demo: { strategy: 'demo', allowedCommands: [], budgets: {}, modelRoles: [] } },
  aliases: {},
  limits: {
    maxSteps: 100,
    maxToolCalls: 100,
    maxModelCalls: 100,
    maxPromptTokens: 1e9,
    maxOutputTokens: 1e9,
    maxDeadlineMs: 1e9,
    maxNumCtx: 1e6,
    maxTemperature: 2,
    models: [],
  },
  providers: [],
};

/** Register the contract suite for one implementation. */
export function runScheduleStoreContract(name: string, factory: ScheduleStoreFactory): void {
  describe(`ScheduleStore contract: ${name}`, () => {
    let made: Awaited<ReturnType<ScheduleStoreFactory>>;
    let store: ScheduleStore;
    let open: ScheduleStore[] = [];

    beforeEach(async () => {
      made = await factory();
      store = await made.open();
      open = [store];
    });
    afterEach(async () => {
      for (const s of open) await made.close(s);
      await made.cleanup?.();
    });

    it('round-trips every field of both kinds of spec and action (guards against lossy columns)', async () => {
      const a = hourly('a');
      const b = hourly('b', {
        spec: { type: 'interval', everyMs: 90_000, anchorAt: MONDAY },
        action: { type: 'post_event', taskId: 't-1', name: 'tick', data: { n: [1, 2], ok: true } },
        missed: 'skip',
        paused: true,
        createdAt: MONDAY,
        updatedAt: MONDAY + 5,
        lastDueAt: MONDAY + 90_000,
      });
      const { name: _n, createdBy: _c, ...bare } = hourly('c', { createdAt: MONDAY + 1 });
      await store.insertSchedule(a);
      await store.insertSchedule(b);
      await store.insertSchedule(bare);
      expect(await store.getSchedule('a')).toEqual(a);
      expect(await store.getSchedule('b')).toEqual(b);
      expect(await store.getSchedule('c')).toEqual(bare);
      expect(await store.getSchedule('nope')).toBeUndefined();
      expect((await store.listSchedules()).map((s) => s.id)).toEqual(['a', 'b', 'c']);
    });

    it('refuses a second schedule with the same id and keeps the first', async () => {
      await store.insertSchedule(hourly('a'));
      await expect(store.insertSchedule(hourly('a', { name: 'other' }))).rejects.toThrow();
      expect((await store.getSchedule('a'))?.name).toBe('every hour (a)');
    });

    it('records a firing once: concurrent claims of one (schedule, due time) give exactly one true (guards against a double firing)', async () => {
      await store.insertSchedule(hourly('a'));
      const due = MONDAY + HOUR;
      const claims = await Promise.all(
        [1, 2, 3, 4, 5].map((i) => store.claimFiring('a', due, due + i, 'pending')),
      );
      expect(claims.filter(Boolean)).toHaveLength(1);
      expect(await store.claimFiring('a', due, due + 9, 'pending')).toBe(false);
      // an earlier occurrence than the last recorded one is refused too
      expect(await store.claimFiring('a', due - HOUR, due + 9, 'pending')).toBe(false);
      expect((await store.getSchedule('a'))?.lastDueAt).toBe(due);
      const f = await store.listFirings({ scheduleId: 'a' });
      expect(f).toEqual([
        { scheduleId: 'a', dueAt: due, firedAt: expect.any(Number) as number, status: 'pending' },
      ]);
    });

    it('does not record firings of a paused, or deleted, schedule', async () => {
      await store.insertSchedule(hourly('a'));
      expect((await store.setPaused('a', true, MONDAY))?.paused).toBe(true);
      expect(await store.claimFiring('a', MONDAY + HOUR, MONDAY + HOUR, 'pending')).toBe(false);
      expect((await store.setPaused('a', false, MONDAY + 1))?.paused).toBe(false);
      expect(await store.claimFiring('a', MONDAY + HOUR, MONDAY + HOUR, 'pending')).toBe(true);
      expect(await store.deleteSchedule('a')).toBe(true);
      expect(await store.deleteSchedule('a')).toBe(false);
      expect(await store.claimFiring('a', MONDAY + 2 * HOUR, MONDAY + 2 * HOUR, 'pending')).toBe(false);
      expect(await store.listFirings({ scheduleId: 'a' })).toEqual([]);
      expect(await store.setPaused('a', true, MONDAY)).toBeUndefined();
    });

    it('finishes firings, records skips with their note, filters and pages newest first', async () => {
      await store.insertSchedule(hourly('a'));
      await store.insertSchedule(hourly('b'));
      await store.claimFiring('a', MONDAY + HOUR, MONDAY + HOUR, 'pending');
      await store.claimFiring('a', MONDAY + 2 * HOUR, MONDAY + 2 * HOUR, 'skipped', '3 missed');
      await store.claimFiring('b', MONDAY + HOUR, MONDAY + HOUR, 'pending');
      await store.finishFiring('a', MONDAY + HOUR, { status: 'done', taskId: 'task-1' });
      await store.finishFiring('b', MONDAY + HOUR, { status: 'failed', error: 'forbidden: no' });
      const a = await store.listFirings({ scheduleId: 'a' });
      expect(a.map((f) => [f.dueAt, f.status, f.taskId, f.error])).toEqual([
        [MONDAY + 2 * HOUR, 'skipped', undefined, '3 missed'],
        [MONDAY + HOUR, 'done', 'task-1', undefined],
      ]);
      expect((await store.listFirings({ status: 'failed' })).map((f) => f.scheduleId)).toEqual(['b']);
      expect(await store.listFirings({ limit: 1 })).toHaveLength(1);
      expect(await store.listFirings({ status: 'pending' })).toEqual([]);
    });

    it('moves lastDueAt forward only', async () => {
      await store.insertSchedule(hourly('a'));
      expect((await store.advanceSchedule('a', MONDAY + 5 * HOUR, MONDAY))?.lastDueAt).toBe(
        MONDAY + 5 * HOUR,
      );
      expect((await store.advanceSchedule('a', MONDAY + HOUR, MONDAY))?.lastDueAt).toBe(MONDAY + 5 * HOUR);
      expect(await store.claimFiring('a', MONDAY + 3 * HOUR, MONDAY, 'pending')).toBe(false);
      expect(await store.advanceSchedule('nope', MONDAY, MONDAY)).toBeUndefined();
    });

    it('keeps schedules, firings and lastDueAt across a close and open (guards against state only in memory)', async () => {
      await store.insertSchedule(hourly('a'));
      await store.claimFiring('a', MONDAY + HOUR, MONDAY + HOUR, 'pending');
      await made.close(store);
      open = [];
      store = await made.open();
      open = [store];
      expect((await store.getSchedule('a'))?.lastDueAt).toBe(MONDAY + HOUR);
      expect(await store.listFirings({ status: 'pending' })).toHaveLength(1);
      expect(await store.claimFiring('a', MONDAY + HOUR, MONDAY + HOUR, 'pending')).toBe(false);
    });

    it('a simulated week of an hourly schedule with a crash in the middle fires exactly once per hour (guards against double and lost firings)', async () => {
      const clock = new ManualClock(MONDAY - 1000);
      const tasks = new InMemoryTaskStore();
      const engine = new Engine({
        store: tasks,
        strategies: { demo: { decide: () => Promise.resolve({ type: 'complete', result: 'ok' }) } },
        clock,
        tickIntervalMs: 0,
      });
      await engine.start();
      const ops = new TaskOperations({ engine, store: tasks, kinds: CATALOGUE, clock });
      let hang = false;
      const runner = (s: ScheduleStore) =>
        new ScheduleRunner({
          store: s,
          clock,
          // no pass between occurrences: the week takes 168 passes, not one a minute
          maxSleepMs: DAY,
          history: (id) => engine.getHistory(id),
          tasks: {
            // The first process "dies" inside one firing: recorded, its task never created.
            create: (req) => (hang ? new Promise(() => {}) : ops.create(req)),
            event: (id, n, d) => ops.event(id, n, d),
            resolveAgent: (a, scope) => ops.resolveAgent(a, scope),
            canAccess: (t, c, i) => ops.canAccess(t, c, i),
          },
        });
      await store.insertSchedule(hourly('farm'));
      const first = runner(store);
      await first.start();
      // a store on a real socket answers after the manual clock's flush: wait for each pass the timer started
      const hour = async (r: ScheduleRunner) => {
        await clock.advance(HOUR);
        await r.idle();
      };
      for (let h = 0; h < 84; h++) await hour(first);
      hang = true;
      await clock.advance(HOUR); // the 85th firing is recorded, then the process dies
      for (let i = 0; i < 500 && (await store.listFirings({ status: 'pending' })).length === 0; i++) {
        await new Promise((r) => setTimeout(r, 5));
      }
      expect(await store.listFirings({ status: 'pending' })).toHaveLength(1);
      hang = false;
      void first.stop(); // never resolves: its pass hangs in the firing, as a killed process would
      await made.close(store);
      store = await made.open();
      open = [store];
      await clock.advance(10 * 60_000); // down for ten minutes, then a new process
      const second = runner(store);
      await second.start();
      // 82 more hours: the clock ends 10 minutes past the 168th occurrence (Monday 00:00 … Sunday 23:00)
      for (let h = 85; h < 7 * 24 - 1; h++) await hour(second);
      await second.stop();
      await engine.stop();

      const week = Array.from({ length: 7 * 24 }, (_, i) => MONDAY + i * HOUR);
      const created = await tasks.listTasks({ kind: 'demo' });
      expect(created).toHaveLength(week.length);
      expect(created.map((t) => t.metadata['request_id']).sort()).toEqual(
        week.map((d) => `farm@${d}`).sort(),
      );
      expect(created.every((t) => t.status === 'completed')).toBe(true);
      const firings = await store.listFirings({ scheduleId: 'farm', limit: 1000 });
      expect(firings.map((f) => f.dueAt).sort((a, b) => a - b)).toEqual(week);
      expect(firings.every((f) => f.status === 'done')).toBe(true);
      // each task was made in its own hour (at its due time, or — on a store answering over a socket, while the manual
      // clock moved on — within that hour; the interrupted one and the one due while no process ran, 10 minutes on)
      for (const t of created) {
        const due = Number(String(t.metadata['request_id']).split('@')[1]);
        expect(t.createdAt).toBeGreaterThanOrEqual(due);
        expect(t.createdAt).toBeLessThanOrEqual(due + HOUR + 10 * 60_000);
      }
      expect(clock.now()).toBeLessThan(MONDAY + 7 * DAY);
    });
  });
}
