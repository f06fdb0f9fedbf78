import type { ScheduleStore } from '@ccagent/engine';
import { runScheduleStoreContract } from '@ccagent/engine/testing';
import pg from 'pg';
import { afterAll, beforeAll, describe } from 'vitest';
import { openPostgresStore, type PostgresStore } from './postgres-store.js';
import { createTestDatabase, TEST_PG_URL } from '../test/support/test-database.js';

// The suite the in-memory and SQLite ScheduleStores pass, against a real PostgreSQL database (one per file, the
// schedule tables emptied before each test); "close and open" closes the store's pool and opens a new one.
describe.skipIf(TEST_PG_URL === undefined)('PostgresStore.schedules', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  runScheduleStoreContract('PostgresStore.schedules', async () => {
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    try {
      // the first open migrates; later tests start from empty tables
      await c.query(`SELECT 1 FROM "schedules" LIMIT 0`).then(
        () => c.query('TRUNCATE "schedules", "schedule_firings"'),
        () => undefined,
      );
    } finally {
      await c.end();
    }
    const stores = new Map<ScheduleStore, PostgresStore>();
    return {
      open: async () => {
        const store = await openPostgresStore({ url: db.url });
        stores.set(store.schedules, store);
        return store.schedules;
      },
      close: async (s: ScheduleStore) => {
        await stores.get(s)?.close();
        stores.delete(s);
      },
    };
  });
});
