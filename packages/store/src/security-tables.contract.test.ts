import path from 'node:path';
import { runCredentialStoreContract } from '@ccagent/security/testing';
import { openSqliteStore } from './sqlite-store.js';
import { tempDir } from '../test/support/test-helpers.js';

// The same suite InMemoryCredentialStore and PostgreSQL's PgSecurityTables pass, against a real SQLite file per test.
runCredentialStoreContract('SQLite SecurityTables', () => {
  const dir = tempDir();
  const store = openSqliteStore({ path: path.join(dir.dir, 'credentials.db') });
  return Promise.resolve({
    store: store.security,
    cleanup: async () => {
      await store.close();
      dir.cleanup();
    },
  });
});
