import { projectConfig } from '../../vitest.shared.js';

// The suite runs whole tasks on CraftOS-PC computers: allow minutes, not seconds, for the suite-wide tests.
export default projectConfig('eval', { testTimeout: 300_000, hookTimeout: 60_000 });
