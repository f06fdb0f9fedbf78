/**
 * What the parts of the engine share: the ports and settings the {@link Engine} was built with, and the parts
 * themselves (each reaches the others through this object). Built once, in the Engine's constructor, in the order
 * events → cache → scheduler → step runner → call lifecycle; nothing here is part of the package's public surface.
 */
import type { CallLifecycle } from './call-lifecycle.js';
import type { EngineEventHub } from './engine-events.js';
import type { ModelLimiter } from './model-limiter.js';
import type { Clock, ConfirmationRule, Logger, StrategyResolver, TaskStore, ToolExecutor } from './ports.js';
import type { Scheduler } from './scheduler.js';
import type { StepRunner } from './step-runner.js';
import type { TaskCache } from './task-cache.js';

/** See the module comment. */
export interface EngineKernel {
  readonly store: TaskStore;
  readonly resolveStrategy: StrategyResolver;
  readonly executor: ToolExecutor | undefined;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly limiter: ModelLimiter;
  /** Timeout of a command call when neither the decision nor the command descriptor sets one (ms). */
  readonly defaultCallTimeoutMs: number;
  /** Which calls wait for a person's yes before they are sent (none without a rule). */
  readonly confirm: ConfirmationRule | undefined;
  readonly events: EngineEventHub;
  readonly cache: TaskCache;
  readonly scheduler: Scheduler;
  readonly steps: StepRunner;
  readonly calls: CallLifecycle;
}
