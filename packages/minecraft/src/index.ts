/**
 * `@ccagent/minecraft`: the Minecraft player agent — the mod protocol (zod schemas, JSON Schemas, generated docs),
 * the mod endpoint (instances, coalesced state, actions with stable ids), the `minecraft_agent` strategy with its
 * three plan modes, the mineflayer bridge bot and the protocol conformance kit.
 */

/** Version of this package, kept equal to package.json's by a test. */
export const VERSION = '0.1.0';

export {
  DEFAULT_ACTION_TIMEOUT_MS,
  DEFAULT_MC_PORT,
  INSTANCE_KEEP_MS,
  MAX_FRAME_BYTES,
  MC_FRAME_ERROR_CODES,
  MC_PROTOCOL_VERSION,
  RECONNECT_DELAY_MS,
  type McFrameErrorCode,
} from './protocol/constants.js';
export {
  ACTION_TYPES,
  ActionSchema,
  ActionSpecSchema,
  actionFormIssue,
  BackendMessageSchema,
  ModMessageSchema,
  PlayerStateSchema,
  type Action,
  type ActionSpec,
  type ActionType,
  type BackendMessage,
  type ModMessage,
  type PlayerState,
} from './protocol/messages.js';
export {
  parseBackendMessage,
  parseModMessage,
  type McFrameError,
  type McParseResult,
} from './protocol/parse.js';
export { MC_ACTION_CATALOG, MC_MESSAGE_CATALOG, type McCatalogEntry } from './protocol/catalog.js';
export { mcJsonSchemas, mcMessageJsonSchema, type McJsonSchema } from './protocol/json-schema.js';
export { MinecraftError, isMinecraftError, type MinecraftErrorCode } from './minecraft-error.js';
export {
  MinecraftEndpoint,
  type ActionOutcome,
  type InstanceInfo,
  type InstanceStatus,
  type McActivity,
  type MinecraftEndpointOptions,
  type ModActionRecord,
  type ModLogLine,
} from './endpoint/mc-endpoint.js';
export type { StateChange } from './endpoint/state-history.js';
export {
  refuseBrowserUpgrades,
  type McTls,
  type McUpgradeCheck,
  type McUpgradeVerdict,
} from './endpoint/mod-server.js';
export {
  MC_ACTION_COMMAND,
  McActionArgsSchema,
  MinecraftActionExecutor,
} from './endpoint/action-executor.js';
export {
  HighLevelPlanSchema,
  HybridPlanSchema,
  LowLevelPlanSchema,
  PLAN_MODES,
  planJsonSchema,
  planReplySchema,
  type PlanMode,
} from './agent/plan-modes.js';
export {
  DEFAULT_LM_STUDIO_URL,
  MINECRAFT_TASK_KIND,
  MinecraftTaskSettingsSchema,
  defaultModelFactory,
  type MinecraftTaskSettings,
  type MinecraftTaskSettingsInput,
  type ModelFactory,
} from './agent/settings.js';
export {
  createMinecraftStrategy,
  type InstanceStateSource,
  type MinecraftStrategyOptions,
} from './agent/minecraft-strategy.js';
export { ModClient, type ActionRunner, type ModClientOptions, type RunOutcome } from './bridge/mod-client.js';
export { MC_DOC_END, MC_DOC_START, renderMcProtocolDoc } from './protocol/protocol-doc.js';
export { parseServerAddress, startBridge, type Bridge, type BridgeOptions } from './bridge/bridge.js';
export {
  startMineflayerBot,
  type MineflayerBot,
  type MineflayerBotOptions,
} from './bridge/mineflayer-runner.js';
export { fromSeedShape, isSeedShape, seedAction } from './agent/seed-formats.js';
export { ActionPolicySchema, policyRefusal, type ActionPolicy } from './service/action-policy.js';
export { fileSettingsStore, type McSettingsStore } from './service/instance-seat.js';
export {
  createMinecraftAgent,
  McTaskRequestSchema,
  MINECRAFT_KIND_RULES,
  minecraftTaskKinds,
  type McResult,
  type McTaskHost,
  type McTaskOperations,
  type MinecraftAgent,
  type MinecraftAgentOptions,
} from './service/minecraft-agent.js';
export {
  defaultConformanceActions,
  runConformance,
  type ConformanceCheck,
  type ConformanceOptions,
  type ConformanceReport,
} from './conformance/conformance.js';
