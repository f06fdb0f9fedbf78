/**
 * The native tool-calling strategy: the model gets the commands as tools and calls them itself; each step sends a
 * window of the conversation (its turns kept in task memory), runs the calls the model made, and ends on a final
 * answer, a budget or the max-iterations summary.
 *
 * A step's phases are modules of native/: dispatch (hand out the last turn's next call), turn (prepare the window
 * and call the model), call-arguments (read the calls' values), record (the reply into the memory and the decision),
 * with the prompt window in window.ts, the memory codec in native-memory.ts and the resolved options in options.ts.
 * This module orders them.
 */
import type { Decision, HistoryEntry, JsonValue, StepContext, Task, TaskStrategy } from '@ccagent/engine';
import { nextQueuedCall } from './native/dispatch.js';
import { nativeMemories } from './native/native-memory.js';
import { resolveNativeConfig, type NativeConfig, type NativeToolOptions } from './native/options.js';
import { recordReply } from './native/record.js';
import { callNative, finalSummary, isAfterCut, prepareTurn, type NativeStep } from './native/turn.js';

export { nativeMemoryValidations } from './native/native-memory.js';
export {
  DEFAULT_MAX_ITERATIONS,
  nativeOptionsFromEnv,
  type NativeEnvOptions,
  type NativeToolOptions,
} from './native/options.js';
export { toolDefinitions } from './native/window.js';

/**
 * The native tool-calling strategy: the model gets the task and Ollama `tools` built from the commands' JSON
 * Schemas, and each engine step either dispatches one requested tool call or asks the model again with the results
 * so far (as many of the most recent ones as fit `contextTokens`); it ends when the model answers without tool calls,
 * or fails after `maxIterations` model calls. An unknown tool is answered with an error message and the loop
 * continues; a failing tool's error is its result.
 */
export function createNativeToolStrategy(opts: NativeToolOptions): TaskStrategy {
  const cfg = resolveNativeConfig(opts);
  return { decide: (task, history, ctx) => decide(cfg, task, history, ctx) };
}

async function decide(
  cfg: NativeConfig,
  task: Task,
  history: readonly HistoryEntry[],
  ctx: StepContext,
): Promise<Decision> {
  const commands = cfg.agentEnabled ? ctx.availableCommands() : [];
  const s: NativeStep = {
    cfg,
    task,
    history,
    ctx,
    commands,
    available: new Set(commands.map((c) => c.name)),
    callsMade: task.counters.toolCalls,
  };
  const given = nativeMemories.get(task.memory);
  // This strategy writes a note only on a step that leaves no call to hand out; a note from the step before, while
  // a call is waiting, is the engine refusing the call that step handed out (no tool_call entry was written).
  const lastEntry = history[history.length - 1];
  const refused = lastEntry?.type === 'note' && lastEntry.step === ctx.step - 1 ? lastEntry.text : undefined;
  const queued = nextQueuedCall(cfg.opts, given, s.callsMade, s.available, refused);
  if (queued.decision) {
    // A step that only hands out the next call returns no memory: nothing to re-encode or rewrite.
    return queued.mem === given
      ? queued.decision
      : { ...queued.decision, memory: queued.mem as unknown as JsonValue };
  }
  const p = prepareTurn(s, queued.mem);
  if (p.mem.dropped + p.mem.turns.length - p.mem.runStart >= cfg.maxIterations) {
    return finalSummary(s, p);
  }
  const { call, readCalls } = await callNative(s, p);
  return recordReply(s, p, call, readCalls, isAfterCut(p));
}
