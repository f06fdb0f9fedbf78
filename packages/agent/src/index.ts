/**
 * `@ccagent/agent`: the strategies that decide a ccagent task's next step — planner/executor (a planner model
 * writes one loose directive, a parser or an executor model turns it into one validated tool call) and native tool
 * calling — with the policies that keep small models from spiralling.
 *
 * The surface is what the orchestrator, the benchmarks and embedders use: the strategy factories (planner/executor,
 * native, chat), the run-budget decorator and their
 * options, the one model-call path every strategy uses (`callModel`: the write-ahead `model_request` record, usage,
 * cancellation; the Minecraft strategy calls it too), the policy and completion criteria they take, the error type, and the three building blocks the
 * benchmarks measure (`parseDirective`, `renderMemory`, `loadPlannerMemory`). Everything else (the parser's helpers,
 * the executor schema, derivation checks, prompt loading) is internal: the package's own tests import it from its
 * module, so changing it never breaks a user.
 */

/** Version of this package, kept equal to package.json's by a test. */
export const VERSION = '0.1.0';

export {
  createPlannerExecutorStrategy,
  resolvePolicy,
  type AgentPolicyInput,
  type ExecutorMode,
  type PlannerExecutorOptions,
} from './planner-executor-strategy.js';
export {
  createNativeToolStrategy,
  nativeOptionsFromEnv,
  DEFAULT_MAX_ITERATIONS,
  type NativeEnvOptions,
  type NativeToolOptions,
} from './native-tool-strategy.js';
export { createChatStrategy, DEFAULT_CHAT_REPLIES, type ChatStrategyOptions } from './chat-strategy.js';
export { withRunBudget, type RunBudget, type RunBudgetOptions } from './run-budget.js';
export type {
  ModelCallKind,
  ModelCallMeta,
  ModelCallOutcome,
  ModelCallRole,
  ModelRequest,
  ModelRole,
} from './model-call.js';
export { callModel, DEFAULT_NUM_PREDICT, MODEL_FAILOVER_KIND } from './model-call.js';
export {
  completionCriteriaSchema,
  DEFAULT_AGENT_POLICY,
  DEFAULT_COMPLETION_CRITERIA,
  type AgentPolicy,
  type CompletionCriteria,
  type RequiredRun,
} from './policy.js';
export { parseDirective, type Directive } from './directive-parser.js';
export type { CommandCall } from './tools.js';
export {
  DEFAULT_MEMORY_LAYOUT,
  renderMemory,
  type MemoryLayout,
  type RenderedMemory,
  type RenderInput,
  type SectionOrder,
} from './memory.js';
export { loadPlannerMemory, type PlannerMemory } from './planner-memory.js';
export type { Prompt } from './prompts.js';
export { AgentError, isAgentError, type AgentErrorCode, type Result } from './agent-error.js';
