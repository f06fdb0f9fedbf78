import { projectConfig } from '../vitest.shared.js';

// The CraftOS tier: real CC:Tweaked computers (headless CraftOS-PC). The Lua unit tier runs separately
// (test/run-lua-tests.mjs) and writes .test-results/lua-client.json; this one writes lua-client.craftos.json.
export default projectConfig('lua-client.craftos', {
  include: ['test/craftos/**/*.test.ts'],
  testTimeout: 60_000,
});
