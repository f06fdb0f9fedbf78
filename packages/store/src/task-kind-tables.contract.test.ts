import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TaskKindStore } from '@ccagent/engine';
import { runTaskKindStoreContract } from '@ccagent/engine/testing';
import { openSqliteStore, type SqliteStore } from './sqlite-store.js';

// The suite the in-memory TaskKindStore passes, against a real SQLite file: "close and open" closes the file and
// opens it again.
runTaskKindStoreContract('SqliteStore.taskKinds', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'ccagent-task-kinds-'));
  const file = path.join(dir, 'ccagent.db');
  const stores = new Map<TaskKindStore, SqliteStore>();
  return Promise.resolve({
    open: () => {
      const store = openSqliteStore({ path: file });
      stores.set(store.taskKinds, store);
      return Promise.resolve(store.taskKinds);
    },
    close: async (s: TaskKindStore) => {
      await stores.get(s)?.close();
      stores.delete(s);
    },
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  });
});
