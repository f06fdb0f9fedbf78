/**
 * `cc-orchestrator` as a library: start the server from your own process, or reuse its config loader.
 */
export { ORCHESTRATOR_VERSION } from './version.js';
export {
  startOrchestrator,
  defaultLuaDir,
  type OrchestratorOptions,
  type RunningOrchestrator,
  type StartupReport,
  type ModelReport,
} from './orchestrator.js';
export {
  loadConfig,
  configSchema,
  DEFAULT_CONFIG,
  resolveKind,
  type ConfigSources,
  type OrchestratorConfig,
  type ModelConfig,
  type TaskKindConfig,
} from './config.js';
export {
  resolveServeOptions,
  isLoopbackHost,
  DEFAULT_PORT,
  LOG_LEVELS,
  type LogLevel,
  type ServeFlags,
  type ServeOptions,
} from './serve-options.js';
export { createLogger } from './logger.js';
export { OrchestratorError, type OrchestratorErrorCode } from './orchestrator-error.js';
export { CLOSE_CODES, type CloseCodeName } from './ws/close-codes.js';
export { SERVER_URL_PLACEHOLDER } from './http/lua-assets.js';
