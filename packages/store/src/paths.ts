import path from 'node:path';
import envPaths from 'env-paths';

/** File name of the database inside the data directory. */
export const DB_FILE_NAME = 'ccagent.db';

/**
 * Default database, shared by the orchestrator (`--db` default) and the CLI: `$CCAGENT_DB` if set (a file, or a
 * `postgres://` URL, returned as it is, for `@ccagent/store-postgres`), else
 * `$CCAGENT_DATA_DIR/ccagent.db`, else `ccagent.db` in the per-user data directory (env-paths, app `ccagent`:
 * `~/.local/share/ccagent` on Linux, `~/Library/Application Support/ccagent` on macOS, `%LOCALAPPDATA%\ccagent\Data`
 * on Windows). Pure: creates nothing (`openSqliteStore` creates the directory when it opens for writing).
 */
export function defaultDbPath(env: NodeJS.ProcessEnv = process.env): string {
  if (env.CCAGENT_DB) {
    return /^postgres(ql)?:\/\//i.test(env.CCAGENT_DB) ? env.CCAGENT_DB : path.resolve(env.CCAGENT_DB);
  }
  const dir = env.CCAGENT_DATA_DIR ?? envPaths('ccagent', { suffix: '' }).data;
  return path.resolve(dir, DB_FILE_NAME);
}
