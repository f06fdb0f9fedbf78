/**
 * `@ccagent/resilience-tests`: process-level fault, kill -9 and hostile-input suites against the built
 * cc-orchestrator (under `test/`), and the reusable pieces they are made of: a seeded PRNG and the hostile message
 * generator.
 */
export { createRng, seedFromEnv, type Rng } from './rng.js';
export {
  createHostileGenerator,
  type Expectation,
  type HostileCategory,
  type HostileMessage,
  type HostileTargets,
} from './hostile-messages.js';
