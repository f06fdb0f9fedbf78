/**
 * The orchestrator on the PostgreSQL store, for tests: the test server (CCAGENT_TEST_PG_URL), a fresh database per
 * suite, and `startOnPostgres` with the default config and an operator token.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import pino from 'pino';
import { loadConfig } from '../../src/config.js';
import { startOnPostgres, type PostgresServe } from '../../src/high-availability.js';

/** The PostgreSQL test server; undefined (and a notice naming `suite`) when it is not set: the suite is skipped. */
export function pgTestServer(suite: string): string | undefined {
  const url = process.env.CCAGENT_TEST_PG_URL || undefined;
  if (url === undefined)
    console.log(`[${suite}] SKIPPED: CCAGENT_TEST_PG_URL is not set (see packages/store-postgres/README.md)`);
  return url;
}

/** Run one statement on `url` with a connection of its own. */
export async function pgQuery(url: string, sql: string): Promise<pg.QueryResult> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  return c.query(sql).finally(() => c.end());
}

/** A fresh database `<prefix>_<random>` on `server`; `drop()` removes it, whoever is still connected. */
export async function createTestDatabase(
  server: string,
  prefix: string,
): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `${prefix}_${randomBytes(5).toString('hex')}`;
  await pgQuery(server, `CREATE DATABASE ${name}`);
  const u = new URL(server);
  u.pathname = `/${name}`;
  return {
    url: u.toString(),
    drop: async () => {
      await pgQuery(server, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
    },
  };
}

/** `startOnPostgres` with the default config, silent, on a free port; `more` adds options (Minecraft …). */
export async function servePostgres(
  dbUrl: string,
  ollamaUrl: string,
  token: string,
  more: Partial<Parameters<typeof startOnPostgres>[0]> = {},
): Promise<PostgresServe> {
  const loaded = loadConfig({});
  if (!loaded.ok) throw loaded.error;
  return startOnPostgres({
    config: loaded.value,
    dbUrl,
    host: '127.0.0.1',
    port: 0,
    ollamaUrl,
    token,
    logger: pino({ level: 'silent' }),
    env: {},
    onLost: () => undefined,
    ...more,
  });
}
