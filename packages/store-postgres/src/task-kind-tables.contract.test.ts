import type { TaskKindStore } from '@ccagent/engine';
import { runTaskKindStoreContract } from '@ccagent/engine/testing';
import pg from 'pg';
import { afterAll, beforeAll, describe } from 'vitest';
import { openPostgresStore, type PostgresStore } from './postgres-store.js';
import { createTestDatabase, TEST_PG_URL } from '../test/support/test-database.js';

// The suite the in-memory and SQLite TaskKindStores pass, against a real PostgreSQL database (one per file, the table
// emptied before each test); "close and open" closes the store's pool and opens a new one.
describe.skipIf(TEST_PG_URL === undefined)('PostgresStore.taskKinds', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  runTaskKindStoreContract('PostgresStore.taskKinds', async () => {
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    try {
      // the first open migrates; later tests start from an empty table
      await c.query(`SELECT 1 FROM "task_kind_revisions" LIMIT 0`).then(
        () => c.query('TRUNCATE "task_kind_revisions"'),
        () => undefined,
      );
    } finally {
      await c.end();
    }
    const stores = new Map<TaskKindStore, PostgresStore>();
    return {
      open: async () => {
        const store = await openPostgresStore({ url: db.url });
        stores.set(store.taskKinds, store);
        return store.taskKinds;
      },
      close: async (s: TaskKindStore) => {
        await stores.get(s)?.close();
        stores.delete(s);
      },
    };
  });
});
