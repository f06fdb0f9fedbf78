import { projectConfig } from '../../vitest.shared.js';

// Process-level suites: each file spawns its own orchestrator(s); running files one at a time keeps kill -9 timing
// and the RSS samples of one file free of the others' load (CI has 2 cores).
export default projectConfig('resilience', {
  fileParallelism: false,
  testTimeout: 60_000,
  hookTimeout: 30_000,
});
