import { defineConfig } from 'drizzle-kit';

// `npm run db:generate -w @ccagent/store-postgres` writes a new migration into ./drizzle after a change to
// src/schema.ts. Bump SCHEMA_VERSION in src/migrate.ts with it (a test checks they agree).
export default defineConfig({
  dialect: 'postgresql',
  schema: './src/schema.ts',
  out: './drizzle',
});
