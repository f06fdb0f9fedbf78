import { projectConfig } from '../../vitest.shared.js';

// Every test here needs a PostgreSQL server: CCAGENT_TEST_PG_URL (set by .ci/run, or by
// `eval "$(tools/postgres-test-server.sh --export)"`). Without it the tests are skipped with a printed notice.
export default projectConfig('store-postgres', { fileParallelism: false });
