import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ScheduleStore } from '@ccagent/engine';
import { runScheduleStoreContract } from '@ccagent/engine/testing';
import { openSqliteStore, type SqliteStore } from './sqlite-store.js';

// The suite the in-memory ScheduleStore passes, against a real SQLite file: "close and open" closes the file and
// opens it again.
runScheduleStoreContract('SqliteStore.schedules', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'ccagent-schedules-'));
  const file = path.join(dir, 'ccagent.db');
  const stores = new Map<ScheduleStore, SqliteStore>();
  return Promise.resolve({
    open: () => {
      const store = openSqliteStore({ path: file });
      stores.set(store.schedules, store);
      return Promise.resolve(store.schedules);
    },
    close: async (s: ScheduleStore) => {
      await stores.get(s)?.close();
      stores.delete(s);
    },
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  });
});
