import { runTaskStoreContract } from '@ccagent/engine/testing';
import { afterAll, beforeAll, describe } from 'vitest';
import { openPostgresStore } from './postgres-store.js';
import { createTestDatabase, TEST_PG_URL, truncateAll } from '../test/support/test-database.js';

// The same suite InMemoryTaskStore and SqliteStore pass, unchanged, against a real PostgreSQL database (one per
// file, emptied before each test).
describe.skipIf(TEST_PG_URL === undefined)('PostgresStore', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  runTaskStoreContract('PostgresStore', async () => {
    const store = await openPostgresStore({ url: db.url });
    await truncateAll(db.url);
    return { store };
  });
});
