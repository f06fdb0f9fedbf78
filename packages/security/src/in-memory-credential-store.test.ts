import { runCredentialStoreContract } from './testing/index.js';
import { InMemoryCredentialStore } from './in-memory-credential-store.js';

// The same suite the SQLite and PostgreSQL stores run (packages/store, packages/store-postgres).
runCredentialStoreContract('InMemoryCredentialStore', () =>
  Promise.resolve({ store: new InMemoryCredentialStore() }),
);
