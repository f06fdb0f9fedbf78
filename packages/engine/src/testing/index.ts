/**
 * `@ccagent/engine/testing`: helpers for testing code that implements or uses the engine's ports. Not part of the
 * runtime API (`@ccagent/engine`): it imports vitest (an optional peer dependency), so it lives behind its own
 * subpath export and is only loaded by test files.
 */
export { runTaskStoreContract, type StoreFactory } from './task-store-contract.js';
export { runScheduleStoreContract, type ScheduleStoreFactory } from './schedule-store-contract.js';
export { runTaskKindStoreContract, type TaskKindStoreFactory } from './task-kind-store-contract.js';
export {
  runMinecraftActivityStoreContract,
  type MinecraftActivityStoreFactory,
} from './minecraft-activity-store-contract.js';
