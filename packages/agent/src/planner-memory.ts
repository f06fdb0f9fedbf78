/**
 * The planner/executor strategy's task memory: its zod schema (JSON owned by the strategy, stored by the engine),
 * reading it back from a task (validated once per object) and handing it to the engine. Rendering it into prompts
 * is memory.ts.
 */
import type { JsonValue } from '@ccagent/engine';
import { z } from 'zod';
import { MemoryValidationCache } from './memory-cache.js';

const runSpec = z.object({ path: z.string(), args: z.array(z.string()) });

const counters = z.object({
  /** Planner replies bounced in a row (reset by any executed decision). */
  bounces: z.number().int().default(0),
  /** DONE directives rejected by the completion criteria (whole task). */
  doneRejections: z.number().int().default(0),
  /** Duplicate calls suppressed in a row (reset by any executed call). */
  suppressions: z.number().int().default(0),
  /** Planner replies without a usable directive (whole task; bounced with a format reminder). */
  formatBounces: z.number().int().default(0),
  /** Model calls that failed in a row (connection, server, timeout). */
  modelFailures: z.number().int().default(0),
  plannerCalls: z.number().int().default(0),
  executorCalls: z.number().int().default(0),
});

const plannerTurn = z.object({
  /** The user message of one planner request (what was new since the previous one, and the state). */
  user: z.string(),
  /** The planner's reply to it, verbatim. */
  reply: z.string(),
});

const conversationSchema = z.object({
  /**
   * The planner's exchange since the conversation (re)started: each request's new user message and the reply. A
   * request sends them all unchanged and appends one user message, so a model server's prompt cache covers
   * everything before it.
   */
  turns: z.array(plannerTurn).default([]),
  /** History entries with seq ≤ this are shown in the conversation already. */
  throughSeq: z.number().int().default(0),
  /** Restarts from a freshly rendered memory because the conversation outgrew its budget (the first start not counted). */
  compactions: z.number().int().default(0),
  /**
   * Characters per token of this task's prompts as the model server counted them (the last planner prompt's
   * characters over its reported prompt tokens); the budget is kept in these tokens. Code with numbers runs near 2.5,
   * English near 4.5; 4 until a server reported a count.
   */
  charsPerToken: z.number().positive().default(4),
});

/** zod schema of the planner/executor strategy's task memory (JSON owned by the strategy, stored by the engine). */
export const plannerMemorySchema = z.object({
  v: z.literal(1).default(1),
  strategy: z.literal('planner-executor').default('planner-executor'),
  /** Pinned master plan (from the planner's first `PLAN:` block; a later `PLAN:` replaces it). */
  plan: z.string().nullable().default(null),
  /** Canonical text of the last directive the planner wrote (reported on failure). */
  lastDirective: z.string().nullable().default(null),
  /** Last problem the loop met: a validation error, a bounce reason or a failed call (reported on failure). */
  lastError: z.string().nullable().default(null),
  /** Older history entries compacted to one-line facts; append-only. */
  facts: z.array(z.string()).default([]),
  /** History entries with seq ≤ this are represented by `facts`. */
  compactedThroughSeq: z.number().int().default(0),
  /** Runs still to do after a cc_write_and_run's write (executed without a planner call). */
  pendingRuns: z.array(runSpec).default([]),
  /** Messages for the planner's next turn that did not go through a history note. */
  pendingNotes: z.array(z.string()).default([]),
  /** Files read by the "gather state" phase (tried once each, whatever the outcome). */
  gathered: z.array(z.string()).default([]),
  counters: counters.default(counters.parse({})),
  /** The planner conversation of the `conversation` layout (empty in the single-message layouts). */
  conversation: conversationSchema.default(conversationSchema.parse({})),
});

/** Task memory of the planner/executor strategy. */
export type PlannerMemory = z.infer<typeof plannerMemorySchema>;

/**
 * Validated planner memories by object: the JSON value {@link memoryToJson} hands the engine is built from a typed
 * memory and registered as valid, so the next step (handed that same object) skips the schema.
 */
const plannerMemories = new MemoryValidationCache<PlannerMemory>((value) => {
  const parsed = plannerMemorySchema.safeParse(value ?? {});
  return parsed.success ? parsed.data : plannerMemorySchema.parse({});
});

/** How many planner memories have been validated with zod in this process (for tests). */
export function plannerMemoryValidations(): number {
  return plannerMemories.validations;
}

/**
 * Read the memory stored on a task; absent or foreign memory starts fresh (and is never trusted blindly). Returns a
 * new object the caller may change. A memory object seen before (validated, or made by {@link memoryToJson}) is not
 * validated again.
 */
export function loadPlannerMemory(value: JsonValue | undefined): PlannerMemory {
  return structuredClone(plannerMemories.get(value));
}

/** Memory as the JSON value handed back to the engine (a new object, registered as a valid memory). */
export function memoryToJson(memory: PlannerMemory): JsonValue {
  const json = JSON.parse(JSON.stringify(memory)) as PlannerMemory;
  plannerMemories.remember(json, json);
  return json as unknown as JsonValue;
}
