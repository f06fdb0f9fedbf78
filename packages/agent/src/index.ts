/**
 * `@ccagent/agent`: the strategies that decide a ccagent task's next step — planner/executor (a planner model
 * writes one loose directive, a parser or an executor model turns it into one validated tool call) and native tool
 * calling — with the policies that keep small models from spiralling.
 */

/** Version of this package, kept equal to package.json's by a test. */
export const VERSION = '0.1.0';

export {
  createPlannerExecutorStrategy,
  filesNamedBy,
  resolvePolicy,
  type AgentPolicyInput,
  type ExecutorMode,
  type PlannerExecutorOptions,
} from './planner-executor-strategy.js';
export {
  createNativeToolStrategy,
  nativeOptionsFromEnv,
  toolDefinitions,
  DEFAULT_MAX_ITERATIONS,
  type NativeEnvOptions,
  type NativeToolOptions,
} from './native-tool-strategy.js';
export type { ModelCallMeta, ModelCallRole, ModelRole } from './model-call.js';
export {
  checkCompletion,
  completionCriteriaSchema,
  DEFAULT_AGENT_POLICY,
  DEFAULT_COMPLETION_CRITERIA,
  type AgentPolicy,
  type CompletionCriteria,
  type CompletionVerdict,
  type RequiredRun,
  type RunEvidence,
} from './policy.js';
export {
  formatDirective,
  parseDirective,
  splitArgs,
  stripThinking,
  unwrapQuotes,
  type Directive,
  type DirectiveKind,
  type DirectiveParseError,
  type ParsedDirective,
  type RunSpec,
} from './directive-parser.js';
export {
  executorJsonSchema,
  validateExecutorOutput,
  type ExecutorOutput,
  type ExecutorValidationError,
  type ExecutorValidationOptions,
  type FinalDetails,
} from './executor-schema.js';
export {
  checkDerived,
  checkDerivedCall,
  derivedCommands,
  escapesRoot,
  type DerivationError,
} from './derivation.js';
export { extractJsonObject, type ExtractedJson, type JsonExtractError } from './json-extract.js';
export {
  AGENT_TOOL_NAMES,
  TOOL_COMMANDS,
  directiveToToolCall,
  planToolCall,
  type AgentToolCall,
  type AgentToolName,
  type CommandCall,
  type ToolPlan,
} from './tools.js';
export {
  DEFAULT_MEMORY_LAYOUT,
  estimateTokens,
  loadPlannerMemory,
  renderMemory,
  renderPlannerTurn,
  sharedPrefixFraction,
  type MemoryLayout,
  type PlannerTurnRender,
  type PlannerMemory,
  type RenderedMemory,
  type RenderInput,
  type SectionOrder,
} from './memory.js';
export { loadPrompt, type Prompt, type PromptName } from './prompts.js';
export { AgentError, isAgentError, type AgentErrorCode, type Result } from './agent-error.js';
