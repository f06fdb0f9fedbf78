import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { runTaskStoreContract } from '@ccagent/engine/testing';
import { openSqliteStore } from './sqlite-store.js';

// The same suite InMemoryTaskStore passes, against a real SQLite file in a temp dir.
runTaskStoreContract('SqliteStore', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'ccagent-store-contract-'));
  const store = openSqliteStore({ path: path.join(dir, 'nested', 'ccagent.db') });
  return Promise.resolve({ store, cleanup: () => rmSync(dir, { recursive: true, force: true }) });
});
