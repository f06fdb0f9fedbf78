import { describe, expect, it } from 'vitest';
import { dueFiring, nextOccurrence, scheduleSpecProblem, type Schedule } from './schedules.js';

const HOUR = 3_600_000;
const T0 = Date.UTC(2026, 10, 2); // Monday 00:00 UTC

const daily = (missed: Schedule['missed'], lastDueAt?: number): Schedule => ({
  id: 's',
  spec: { type: 'cron', expression: '0 7 * * *', timezone: 'Europe/Berlin' },
  action: { type: 'post_event', taskId: 't', name: 'morning' },
  missed,
  paused: false,
  createdAt: T0,
  updatedAt: T0,
  ...(lastDueAt !== undefined ? { lastDueAt } : {}),
});

describe('schedule specs', () => {
  it('reads cron expressions in their time zone, across a daylight-saving change (guards against UTC-only times)', () => {
    const spec = { type: 'cron' as const, expression: '0 7 * * *', timezone: 'Europe/Berlin' };
    // 07:00 in Berlin is 05:00 UTC in summer time and 06:00 UTC in winter time (the change: 2026-10-25)
    expect(new Date(nextOccurrence(spec, Date.UTC(2026, 9, 24, 12), 0) ?? 0).toISOString()).toBe(
      '2026-10-25T06:00:00.000Z',
    );
    expect(new Date(nextOccurrence(spec, Date.UTC(2026, 9, 23, 12), 0) ?? 0).toISOString()).toBe(
      '2026-10-24T05:00:00.000Z',
    );
  });

  it('counts intervals from their anchor', () => {
    const spec = { type: 'interval' as const, everyMs: 10 * 60_000 };
    expect(nextOccurrence(spec, T0, T0)).toBe(T0 + 600_000);
    expect(nextOccurrence(spec, T0 + 600_000, T0)).toBe(T0 + 1_200_000);
    expect(nextOccurrence({ ...spec, anchorAt: T0 + 5 }, T0, T0)).toBe(T0 + 5);
  });

  it('names the field of a bad spec', () => {
    expect(scheduleSpecProblem({ type: 'cron', expression: '61 * * * *', timezone: 'UTC' })?.path).toBe(
      'cron',
    );
    expect(scheduleSpecProblem({ type: 'cron', expression: 'every day', timezone: 'UTC' })?.path).toBe(
      'cron',
    );
    expect(
      scheduleSpecProblem({ type: 'cron', expression: '0 7 * * *', timezone: 'Mars/Olympus' })?.path,
    ).toBe('timezone');
    expect(scheduleSpecProblem({ type: 'interval', everyMs: 10 })?.path).toBe('every_ms');
    expect(scheduleSpecProblem({ type: 'interval', everyMs: 1.5e3 + 0.5 })?.path).toBe('every_ms');
    expect(
      scheduleSpecProblem({ type: 'cron', expression: '*/5 * * * *', timezone: 'Asia/Tokyo' }),
    ).toBeUndefined();
  });
});

describe('dueFiring: the missed-firing policy', () => {
  const seven = Date.UTC(2026, 10, 2, 6); // Monday 07:00 in Berlin (winter time)
  it('fires an occurrence that is due now, once', () => {
    expect(dueFiring(daily('skip'), seven + 1000, 60_000)).toEqual({
      dueAt: seven,
      fire: true,
      occurrences: 1,
    });
    expect(dueFiring(daily('skip', seven), seven + 1000, 60_000)).toBeUndefined();
    expect(dueFiring(daily('skip'), seven - 1, 60_000)).toBeUndefined();
    expect(dueFiring({ ...daily('skip'), paused: true }, seven + 1000, 60_000)).toBeUndefined();
  });

  it('after three days down: run_once fires the latest once, skip records it without firing', () => {
    const back = seven + 3 * 24 * HOUR + 2 * HOUR; // Thursday 09:00 Berlin
    expect(dueFiring(daily('run_once', seven - 24 * HOUR), back, 60_000)).toEqual({
      dueAt: seven + 3 * 24 * HOUR,
      fire: true,
      occurrences: 4,
    });
    expect(dueFiring(daily('skip', seven - 24 * HOUR), back, 60_000)).toEqual({
      dueAt: seven + 3 * 24 * HOUR,
      fire: false,
      occurrences: 4,
    });
  });

  it('a skip schedule records the missed occurrence and still fires the one within the grace after it', () => {
    const s = daily('skip', seven - 48 * HOUR);
    expect(dueFiring(s, seven + 30_000, 60_000)).toEqual({
      dueAt: seven - 24 * HOUR,
      fire: false,
      occurrences: 1,
    });
    expect(dueFiring({ ...s, lastDueAt: seven - 24 * HOUR }, seven + 30_000, 60_000)).toEqual({
      dueAt: seven,
      fire: true,
      occurrences: 1,
    });
  });

  it('fires each occurrence within the grace by itself: a takeover of a few seconds drops none (guards against merging them into the latest)', () => {
    const every = (missed: Schedule['missed'], lastDueAt: number): Schedule => ({
      ...daily(missed, lastDueAt),
      spec: { type: 'interval', everyMs: 1000 },
    });
    // fired up to T0+5 s, then no leader for 4.5 s: 6, 7, 8 and 9 s are due, each at most 60 s late
    const now = T0 + 9_500;
    const fired: number[] = [];
    let s = every('skip', T0 + 5000);
    for (let d = dueFiring(s, now, 60_000); d; d = dueFiring(s, now, 60_000)) {
      expect(d).toMatchObject({ fire: true, occurrences: 1 });
      fired.push(d.dueAt - T0);
      s = { ...s, lastDueAt: d.dueAt };
    }
    expect(fired).toEqual([6000, 7000, 8000, 9000]);
  });

  it('after a downtime longer than the grace: one record for the missed occurrences, then the on-time ones', () => {
    const s: Schedule = { ...daily('run_once', T0), spec: { type: 'interval', everyMs: 10_000 } };
    // down from T0 to T0+100 s: 10..40 s are more than 60 s late (one record, run once), 50..100 s are on time
    const seen: Array<[number, boolean, number]> = [];
    let cur = s;
    for (let d = dueFiring(cur, T0 + 100_000, 60_000); d; d = dueFiring(cur, T0 + 100_000, 60_000)) {
      seen.push([(d.dueAt - T0) / 1000, d.fire, d.occurrences]);
      cur = { ...cur, lastDueAt: d.dueAt };
    }
    expect(seen).toEqual([
      [30, true, 3],
      [40, true, 1],
      [50, true, 1],
      [60, true, 1],
      [70, true, 1],
      [80, true, 1],
      [90, true, 1],
      [100, true, 1],
    ]);
  });
});
