/**
 * `@ccagent/store-postgres`: the engine's `TaskStore` on PostgreSQL (Drizzle's PostgreSQL dialect on node-postgres),
 * with the same rows, step-log packing and read-back as the SQLite store, checked-in migrations applied at open, and
 * the leader lease (with a fencing token) that lets several orchestrators share one database with one active.
 */

/** Version of this package, kept equal to package.json's by a test. */
export const VERSION = '0.1.0';

export {
  openPostgresStore,
  PostgresStore,
  redactUrl,
  type PostgresStoreOptions,
  type WriteFence,
} from './postgres-store.js';
export { LeaderLease, type LeaderLeaseOptions, type LeaseHolder } from './lease.js';
export { PgSecurityTables } from './security-tables.js';
export { PgScheduleTables } from './schedule-tables.js';
export { PgTaskKindTables } from './task-kind-tables.js';
export { PgSettingsDocument } from './settings-documents.js';
export { PgMinecraftActivity } from './minecraft-activity-tables.js';
export { PG_SCHEMA_VERSION, pgMigrationsFolder } from './migrate.js';
export { isPostgresUrl } from './url.js';
/** The Drizzle table definitions, for read-only SQL by other tools. */
export * as pgSchema from './schema.js';
