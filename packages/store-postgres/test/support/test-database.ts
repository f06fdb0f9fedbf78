/**
 * Test support (not exported): the PostgreSQL server of the tests and a fresh database per test file. The server is
 * named by CCAGENT_TEST_PG_URL (`.ci/run` starts one and sets it; a developer runs
 * `eval "$(tools/postgres-test-server.sh --export)"`). Without it every PostgreSQL test is skipped with a notice.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

/** The server URL, or undefined when the PostgreSQL tier is not available. */
export const TEST_PG_URL: string | undefined = process.env.CCAGENT_TEST_PG_URL || undefined;

if (TEST_PG_URL === undefined) {
  console.log(
    '[store-postgres] SKIPPED: no PostgreSQL server for the tests (CCAGENT_TEST_PG_URL is not set; ' +
      'run `eval "$(tools/postgres-test-server.sh --export)"` first, see packages/store-postgres/README.md)',
  );
}

/** The URL of `database` on the test server. */
export function databaseUrl(database: string): string {
  const u = new URL(TEST_PG_URL as string);
  u.pathname = `/${database}`;
  return u.toString();
}

/** Run `sql` on the server's maintenance database. */
export async function adminQuery(sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: TEST_PG_URL });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

/** Create an empty database with a unique name; returns its URL and a function that drops it. */
export async function createTestDatabase(): Promise<{
  url: string;
  name: string;
  drop: () => Promise<void>;
}> {
  const name = `ccagent_t_${randomBytes(6).toString('hex')}`;
  await adminQuery(`CREATE DATABASE ${name}`);
  return {
    url: databaseUrl(name),
    name,
    drop: () => adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

/** Remove every row of every ccagent table (a fresh, empty store for the next test). */
export async function truncateAll(url: string): Promise<void> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(
      'TRUNCATE "tasks", "task_memory", "history", "steps", "step_messages", "command_calls", "questions", "clients", "model_tools", "leases", "credentials", "enrollment_codes", "pairing_requests", "audit_log" RESTART IDENTITY CASCADE',
    );
  } finally {
    await c.end();
  }
}
