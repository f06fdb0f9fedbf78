import { projectConfig } from '../vitest.shared.js';

// The end-to-end tier: real CC:Tweaked computers (headless CraftOS-PC) running lua-client/src against the BUILT
// orchestrator (apps/orchestrator/dist) and the scripted fake model server. Writes lua-client.e2e.json.
export default projectConfig('lua-client.e2e', {
  include: ['test/e2e/**/*.test.ts'],
  testTimeout: 120_000,
  hookTimeout: 60_000,
});
