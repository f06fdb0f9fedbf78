/**
 * What every phase of a `minecraft_agent` step works on: the strategy's resolved options, the task and its settings,
 * the engine's step context and the instance's latest state; the strategy's durable memory (the task row's
 * `memory`); the failure that ends a step.
 */
import type { JsonValue, StepContext, Task, TaskErrorInfo } from '@ccagent/engine';
import type { ChatMessage } from '@ccagent/models';
import type { InstanceInfo } from '../endpoint/mc-endpoint.js';
import type { ActionSpec } from '../protocol/messages.js';
import type { MinecraftStrategyOptions } from './minecraft-strategy.js';
import type { MinecraftTaskSettings } from './settings.js';

/** The strategy's options with their defaults, and the action list every prompt shows. */
export interface McConfig {
  opts: MinecraftStrategyOptions;
  tolerance: number;
  layout: 'conversation' | 'single';
  conversationChars: number;
  /** The action catalogue as prompt text (an instance without allow/deny lists). */
  actions: string;
}

/** One step of one task: what the phases read (the memory they change is passed along). */
export interface McStep {
  cfg: McConfig;
  task: Task;
  settings: MinecraftTaskSettings;
  ctx: StepContext;
  info: InstanceInfo | undefined;
  /** The actions the prompt offers: the catalogue as the instance's allow/deny lists leave it at this step. */
  actions: string;
  /**
   * Whether those lists let an action type through at this step (undefined: no lists): the constrained-decoding schema
   * offers only these types.
   */
  actionAllowed?: (type: string) => boolean;
}

export interface Goal {
  goal: string | null;
  actions: ActionSpec[] | null;
}

export interface ResultNote {
  id: string;
  action: ActionSpec;
  ok: boolean;
  detail: JsonValue;
}

/** The strategy's durable memory (the task row's `memory`). */
export interface McMemory {
  v: 1;
  planNo: number;
  replans: number;
  goals: Goal[];
  goalIndex: number;
  actionIndex: number;
  /** The action sent and not yet read back. */
  pending: { id: string; action: ActionSpec } | null;
  results: ResultNote[];
  completed: number;
  /** Number of the last mod `log` line written to the step log (absent: none yet). */
  logSeq?: number;
  /** Retries (`resume` entries with reason `retry` in the history) this memory has taken in (absent: none). */
  retries?: number;
  /** The model conversation of the `conversation` layout (absent in memories written before it). */
  conversation?: McConversation;
}

/** The messages after the system message, as sent and answered; the next request sends them unchanged. */
export interface McConversation {
  messages: ChatMessage[];
  /** Id of the last result the conversation has shown (later results go into the next message). */
  lastResultId: string | null;
  /** Times the conversation restarted because it outgrew `conversationChars`. */
  restarts: number;
  /** The vitals (health, hunger, dimension, game mode) the conversation last showed; a message repeats them only when they changed. */
  vitals?: string | null;
}

/** What went wrong with the last action, for the re-plan: `text` for the log and errors, `note` for the model. */
export interface McProblem {
  text: string;
  note: string;
}

export const MAX_RESULTS_IN_MEMORY = 40;
export const DEFAULT_CONVERSATION_CHARS = 8_000;

/** The task's memory, or a fresh one when it holds none of this strategy's. */
export function loadMcMemory(task: Task): McMemory {
  return (task.memory as McMemory | null)?.v === 1
    ? (task.memory as unknown as McMemory)
    : {
        v: 1,
        planNo: 0,
        replans: 0,
        goals: [],
        goalIndex: 0,
        actionIndex: 0,
        pending: null,
        results: [],
        completed: 0,
      };
}

export function toJson(v: unknown): JsonValue {
  return JSON.parse(JSON.stringify(v ?? null)) as JsonValue;
}

/** Ends the step with a `fail` decision carrying `info` (and the memory as it was). */
export class StepFailure extends Error {
  constructor(readonly info: TaskErrorInfo) {
    super(info.message);
  }
}
