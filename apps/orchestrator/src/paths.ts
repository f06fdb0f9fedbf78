import { mkdirSync } from 'node:fs';
import path from 'node:path';
import envPaths from 'env-paths';

/** Default SQLite file: `<per-user data dir>/ccagent.db` (e.g. ~/.local/share/ccagent/ccagent.db); dir is created. */
export function defaultDbPath(): string {
  const dir = process.env.CCAGENT_DATA_DIR ?? envPaths('ccagent', { suffix: '' }).data;
  mkdirSync(dir, { recursive: true });
  return path.join(dir, 'ccagent.db');
}
