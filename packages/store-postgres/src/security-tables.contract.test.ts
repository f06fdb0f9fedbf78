import { runCredentialStoreContract } from '@ccagent/security/testing';
import { afterAll, beforeAll, describe } from 'vitest';
import { openPostgresStore } from './postgres-store.js';
import { createTestDatabase, TEST_PG_URL, truncateAll } from '../test/support/test-database.js';

// The same suite InMemoryCredentialStore and the SQLite store's SecurityTables pass, against a real PostgreSQL
// database (one per file, emptied before each test).
describe.skipIf(TEST_PG_URL === undefined)('PgSecurityTables', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  runCredentialStoreContract('PostgreSQL PgSecurityTables', async () => {
    const store = await openPostgresStore({ url: db.url });
    await truncateAll(db.url);
    return { store: store.security, cleanup: () => store.close() };
  });
});
