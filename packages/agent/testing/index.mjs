// `@ccagent/agent/testing`: what the agent's tests, the failure-corpus and model-cost benches and the first-run demo
// share to run a task end to end without a Minecraft or CC computer — a real Engine (in-memory store), the real
// `ollama` client against @ccagent/testkit's scripted fake server, and a ToolExecutor that runs the CC core commands
// with a real Lua 5.2 interpreter on a temporary directory — plus the scenarios they run: the small-model failure
// corpus (corpus/fixtures/*.json) and the broken-TODO.lua task (`todo`). Plain ESM files (not built): the corpus
// runner and the executor read their data files (JSON fixtures, Lua) next to themselves. Needs `@ccagent/testkit`
// installed, and `lua5.2` on PATH for programs the executor runs.
export {
  policyEvents,
  prefixFractions,
  removeRoot,
  runTask,
  startModels,
  stepsOf,
} from './support/harness.mjs';
export { CORE_COMMANDS, createLuaToolExecutor, shellWords } from './support/lua-tool-executor.mjs';
export {
  FIXTURES_DIR,
  MAX_MODEL_CALLS,
  MODES,
  STANDARD_REPLIES,
  eventsOf,
  loadCorpus,
  runCorpus,
  runFixture,
  runNativeFixture,
  translateCanonical,
} from './corpus/corpus-runner.mjs';
/** The broken-TODO.lua task: its files, prompt and a small model's replies as planner and executor. */
export * as todo from './fixtures/todo/scenario.mjs';
