/**
 * The shared contract suite of the `MinecraftActivityStore` port, run by every implementation (SQLite in
 * `@ccagent/store`, PostgreSQL in `@ccagent/store-postgres`): lines and actions round-trip exactly (hostile text
 * included), each instance keeps only its last N, a line stored twice is kept once, an action's record is replaced by
 * a later save, and everything survives closing and opening the store.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { McActionRecord, McLogRecord, MinecraftActivityStore } from '../minecraft-activity-store.js';

/**
 * Opens the store under test. `open` gives a fresh empty store the first time and the same data on every later call
 * (a restart); `close` closes what `open` returned; `cleanup` runs after each test.
 */
export type MinecraftActivityStoreFactory = () => Promise<{
  open: () => Promise<MinecraftActivityStore>;
  close: (store: MinecraftActivityStore) => Promise<void>;
  cleanup?: () => Promise<void> | void;
}>;

const HOSTILE =
  '<script>alert(1)</script> \u001b[31mred\u001b[0m "quotes" \'single\' \\ back ✓ — 🚀 %s $1 \r\n';

const line = (instanceId: string, seq: number, message = `line ${seq}`): McLogRecord => ({
  instanceId,
  seq,
  at: 1_000 + seq,
  message,
});

const action = (instanceId: string, n: number, over: Partial<McActionRecord> = {}): McActionRecord => ({
  instanceId,
  actionId: `a${n}`,
  type: 'goto',
  taskId: null,
  startedAt: 10_000 + n * 10,
  endedAt: 10_005 + n * 10,
  ok: true,
  ...over,
});

export function runMinecraftActivityStoreContract(
  label: string,
  factory: MinecraftActivityStoreFactory,
): void {
  describe(`MinecraftActivityStore contract: ${label}`, () => {
    let env: Awaited<ReturnType<MinecraftActivityStoreFactory>>;
    let store: MinecraftActivityStore;
    beforeEach(async () => {
      env = await factory();
      store = await env.open();
    });
    afterEach(async () => {
      await env.close(store);
      await env.cleanup?.();
    });
    const limits = { logs: 1_000, actions: 1_000 };

    it('starts empty', async () => {
      expect(await store.readMinecraftActivity('mc-1', limits)).toEqual({ logs: [], actions: [] });
      expect(await store.lastMinecraftLogSeqs()).toEqual(new Map());
    });

    it('keeps lines and actions exactly as written (hostile text is data), per instance, across a restart', async () => {
      await store.appendMinecraftLogs(
        [line('mc-1', 1, HOSTILE), line('mc-2', 1, 'other'), line('mc-1', 2, "'); DROP TABLE x; --")],
        10,
      );
      const failed = action('mc-1', 1, {
        taskId: 't-1',
        ok: false,
        code: 'action_failed',
        error: HOSTILE,
        type: '<b>place</b>',
      });
      const done = action('mc-1', 2, { result: '{"placed":true,"html":"<img src=x onerror=alert(1)>"}' });
      await store.saveMinecraftAction(failed, 10);
      await store.saveMinecraftAction(done, 10);
      await store.saveMinecraftAction(action('mc-2', 1), 10);
      await env.close(store);
      store = await env.open();
      expect(await store.readMinecraftActivity('mc-1', limits)).toEqual({
        logs: [line('mc-1', 1, HOSTILE), line('mc-1', 2, "'); DROP TABLE x; --")],
        actions: [failed, done],
      });
      expect(await store.readMinecraftActivity('mc-2', limits)).toEqual({
        logs: [line('mc-2', 1, 'other')],
        actions: [action('mc-2', 1)],
      });
      expect(await store.lastMinecraftLogSeqs()).toEqual(
        new Map([
          ['mc-1', 2],
          ['mc-2', 1],
        ]),
      );
    });

    it('keeps only the last `keep` lines of each instance written to, by seq; a line written twice is kept once', async () => {
      await store.appendMinecraftLogs([line('other', 1)], 5);
      for (let start = 1; start <= 30; start += 10) {
        const batch = Array.from({ length: 10 }, (_, i) => line('mc-1', start + i));
        await store.appendMinecraftLogs(batch, 5);
      }
      await store.appendMinecraftLogs([line('mc-1', 30, 'again')], 5);
      const got = await store.readMinecraftActivity('mc-1', limits);
      expect(got.logs.map((l) => l.seq)).toEqual([26, 27, 28, 29, 30]);
      expect(got.logs[4]?.message).toBe('line 30');
      expect((await store.readMinecraftActivity('other', limits)).logs).toEqual([line('other', 1)]);
      // A read asks for fewer than are kept: the latest ones.
      expect(
        (await store.readMinecraftActivity('mc-1', { logs: 2, actions: 1 })).logs.map((l) => l.seq),
      ).toEqual([29, 30]);
      expect((await store.lastMinecraftLogSeqs()).get('mc-1')).toBe(30);
    });

    it('keeps the last `keep` actions by start time; a later save of an action replaces it', async () => {
      for (let n = 1; n <= 8; n++) await store.saveMinecraftAction(action('mc-1', n), 3);
      await store.saveMinecraftAction(action('mc-1', 8, { ok: false, code: 'stopped', error: 'stop' }), 3);
      const got = await store.readMinecraftActivity('mc-1', limits);
      expect(got.actions.map((a) => a.actionId)).toEqual(['a6', 'a7', 'a8']);
      expect(got.actions[2]).toEqual(action('mc-1', 8, { ok: false, code: 'stopped', error: 'stop' }));
      expect(
        (await store.readMinecraftActivity('mc-1', { logs: 1, actions: 2 })).actions.map((a) => a.actionId),
      ).toEqual(['a7', 'a8']);
    });

    it('an empty batch writes nothing and succeeds', async () => {
      await store.appendMinecraftLogs([], 5);
      expect(await store.readMinecraftActivity('mc-1', limits)).toEqual({ logs: [], actions: [] });
    });
  });
}
