import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { MinecraftActivityStore } from '@ccagent/engine';
import { runMinecraftActivityStoreContract } from '@ccagent/engine/testing';
import { openSqliteStore, type SqliteStore } from './sqlite-store.js';

// The suite the PostgreSQL store passes too, against a real SQLite file: "close and open" closes the file and opens
// it again.
runMinecraftActivityStoreContract('SqliteStore.minecraftActivity', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'ccagent-mc-activity-'));
  const file = path.join(dir, 'ccagent.db');
  const stores = new Map<MinecraftActivityStore, SqliteStore>();
  return Promise.resolve({
    open: () => {
      const store = openSqliteStore({ path: file });
      stores.set(store.minecraftActivity, store);
      return Promise.resolve(store.minecraftActivity);
    },
    close: async (s: MinecraftActivityStore) => {
      await stores.get(s)?.close();
      stores.delete(s);
    },
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  });
});
