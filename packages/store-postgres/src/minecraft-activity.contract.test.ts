import type { MinecraftActivityStore } from '@ccagent/engine';
import { runMinecraftActivityStoreContract } from '@ccagent/engine/testing';
import pg from 'pg';
import { afterAll, beforeAll, describe } from 'vitest';
import { openPostgresStore, type PostgresStore } from './postgres-store.js';
import { createTestDatabase, TEST_PG_URL } from '../test/support/test-database.js';

// The suite the SQLite store passes, against a real PostgreSQL database (one per file, the tables emptied before each
// test); "close and open" closes the store's pool and opens a new one.
describe.skipIf(TEST_PG_URL === undefined)('PostgresStore.minecraftActivity', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  runMinecraftActivityStoreContract('PostgresStore.minecraftActivity', async () => {
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    try {
      // the first open migrates; later tests start from empty tables
      await c.query(`SELECT 1 FROM "minecraft_logs" LIMIT 0`).then(
        () => c.query('TRUNCATE "minecraft_logs", "minecraft_actions"'),
        () => undefined,
      );
    } finally {
      await c.end();
    }
    const stores = new Map<MinecraftActivityStore, PostgresStore>();
    return {
      open: async () => {
        const store = await openPostgresStore({ url: db.url });
        stores.set(store.minecraftActivity, store);
        return store.minecraftActivity;
      },
      close: async (s: MinecraftActivityStore) => {
        await stores.get(s)?.close();
        stores.delete(s);
      },
    };
  });
});
