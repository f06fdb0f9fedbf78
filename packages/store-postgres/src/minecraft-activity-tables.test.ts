import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LeaderLease } from './lease.js';
import { openPostgresStore } from './postgres-store.js';
import { createTestDatabase, TEST_PG_URL } from '../test/support/test-database.js';

describe.skipIf(TEST_PG_URL === undefined)('Minecraft activity on PostgreSQL, fenced', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('a store fenced by a lease it does not hold writes no line and no action (only the active process records activity)', async () => {
    const store = await openPostgresStore({ url: db.url });
    await store.minecraftActivity.appendMinecraftLogs(
      [{ instanceId: 'mc-1', seq: 1, at: 1, message: 'before' }],
      10,
    );
    const lease = await LeaderLease.open({ url: db.url, holder: 'not-the-leader', ttlMs: 60_000 });
    try {
      store.fenceWith(lease);
      const logErr = await store.minecraftActivity
        .appendMinecraftLogs([{ instanceId: 'mc-1', seq: 2, at: 2, message: 'standby' }], 10)
        .catch((e: unknown) => e);
      expect((logErr as Error).message).toMatch(/lease/);
      const actErr = await store.minecraftActivity
        .saveMinecraftAction(
          {
            instanceId: 'mc-1',
            actionId: 'a1',
            type: 'goto',
            taskId: null,
            startedAt: 1,
            endedAt: 2,
            ok: true,
          },
          10,
        )
        .catch((e: unknown) => e);
      expect((actErr as Error).message).toMatch(/lease/);
      expect(await store.minecraftActivity.readMinecraftActivity('mc-1', { logs: 10, actions: 10 })).toEqual({
        logs: [{ instanceId: 'mc-1', seq: 1, at: 1, message: 'before' }],
        actions: [],
      });
    } finally {
      await lease.close();
      await store.close();
    }
  });
});
