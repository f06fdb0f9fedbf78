import { projectConfig } from '../vitest.shared.js';

// The real-model tier: real CC:Tweaked computers (headless CraftOS-PC) running lua-client/src against the BUILT
// orchestrator and a REAL Ollama with real small weights (tools/ollama-test-server.sh; CCAGENT_TEST_OLLAMA_URL).
// Writes lua-client.real-model.json.
export default projectConfig('lua-client.real-model', {
  include: ['test/real-model/**/*.test.ts'],
  testTimeout: 400_000,
  hookTimeout: 60_000,
});
