import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { LeaderLease } from './lease.js';
import { openPostgresStore } from './postgres-store.js';
import { createTestDatabase, TEST_PG_URL } from '../test/support/test-database.js';

describe.skipIf(TEST_PG_URL === undefined)('the Minecraft settings document on PostgreSQL', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  it('is null until saved, replaced by each save, and read back by a store opened later (committed when the save resolves)', async () => {
    const first = await openPostgresStore({ url: db.url });
    try {
      expect(await first.minecraftSettings.load()).toBeNull();
      await first.minecraftSettings.save({ active: 'Bot', actions: {} });
      await first.minecraftSettings.save({ active: 'Alex', actions: { Alex: { deny: ['chat'] } } });
    } finally {
      await first.close();
    }
    const raw = new pg.Client({ connectionString: db.url });
    await raw.connect();
    try {
      const rows = await raw.query<{ key: string; value: string }>(
        'SELECT "key", "value" FROM minecraft_settings',
      );
      expect(rows.rows.map((r) => [r.key, JSON.parse(r.value) as unknown])).toEqual([
        ['seat', { active: 'Alex', actions: { Alex: { deny: ['chat'] } } }],
      ]);
    } finally {
      await raw.end();
    }
    const again = await openPostgresStore({ url: db.url });
    try {
      expect(await again.minecraftSettings.load()).toEqual({
        active: 'Alex',
        actions: { Alex: { deny: ['chat'] } },
      });
    } finally {
      await again.close();
    }
  });

  it('a save of a store fenced by a lease it does not hold is refused and changes nothing (only the leader writes)', async () => {
    const store = await openPostgresStore({ url: db.url });
    const lease = await LeaderLease.open({ url: db.url, holder: 'not-the-leader', ttlMs: 60_000 });
    try {
      store.fenceWith(lease);
      const err = await store.minecraftSettings
        .save({ active: 'Steve', actions: {} })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(Error);
      expect((err as Error).message).toMatch(/lease/);
      expect(await store.minecraftSettings.load()).toEqual({
        active: 'Alex',
        actions: { Alex: { deny: ['chat'] } },
      });
    } finally {
      await lease.close();
      await store.close();
    }
  });
});
