/**
 * Prepare the model's turn (a fresh iteration budget after a resume, the tools, the window of the conversation at
 * the task's measured token density) and call the model through the shared model-call path, the calls' arguments
 * read and the call logged; after the last iteration, the final summary instead.
 */
import type {
  CommandDescriptor,
  Decision,
  HistoryEntry,
  JsonValue,
  StepContext,
  Task,
} from '@ccagent/engine';
import type { ChatMessage, ToolDefinition } from '@ccagent/models';
import { callModel, type ModelCallOutcome } from '../model-call.js';
import { readCallArguments } from './call-arguments.js';
import { WAIT_TOOL } from './dispatch.js';
import { nextMemory, type NativeCall, type NativeMemory, type NativeTurn } from './native-memory.js';
import type { NativeConfig } from './options.js';
import { CUT_NUDGE } from './record.js';
import { conversation, outsideEntries, toolDefinitions, type WindowLimits } from './window.js';

/** One step of one task: what the phases read. */
export interface NativeStep {
  cfg: NativeConfig;
  task: Task;
  history: readonly HistoryEntry[];
  ctx: StepContext;
  /** The commands offered to the model (none when the agent is disabled). */
  commands: CommandDescriptor[];
  available: Set<string>;
  /** The task's tool calls so far (`counters.toolCalls`). */
  callsMade: number;
}

/** A prepared model turn: the memory it starts from, the request, and the failure decision of this step. */
export interface PreparedTurn {
  mem: NativeMemory;
  lastTurn: NativeTurn | undefined;
  tools: ToolDefinition[];
  toolsJson: string;
  messages: ChatMessage[];
  /** Index of the first turn shown: the memory drops the turns before it. */
  firstShown: number;
  failDecision: (code: string, message: string, details?: Record<string, JsonValue>) => Decision;
}

/** Prepare the model's turn from `start` (the memory after the queued calls were handed out). */
export function prepareTurn(s: NativeStep, start: NativeMemory): PreparedTurn {
  const { task, history, ctx, commands } = s;
  const { opts, agentEnabled, limits, contextTokens, system } = s.cfg;
  let mem = start;
  // From the step before the oldest turn kept. A turn written before turns recorded their step (an older memory)
  // can have no outside entries before it, which older builds never wrote: only the last step's are read.
  const oldestStep = mem.turns[0]?.step;
  const floor = oldestStep !== undefined ? oldestStep - 1 : mem.turns.length > 0 ? ctx.step - 1 : 0;
  const outside = outsideEntries(history, Math.max(0, floor));
  const resume = outside.filter((e) => e.type === 'resume').at(-1);
  if (resume && resume.seq > mem.resumeSeq) {
    // Reopened (a follow-up message to an ended task, or a retry): a fresh iteration budget from here.
    mem = nextMemory({
      ...mem,
      runStart: mem.dropped + mem.turns.length,
      resumeSeq: resume.seq,
      modelFailures: 0,
    });
  }
  const lastTurn = mem.turns[mem.turns.length - 1];
  const failDecision = (
    code: string,
    message: string,
    details: Record<string, JsonValue> = {},
  ): Decision => ({
    type: 'fail',
    error: {
      code,
      message,
      details: {
        ...details,
        iterations: mem.dropped + mem.turns.length,
        lastMessage: lastTurn?.content ?? null,
      },
    },
    memory: mem as unknown as JsonValue,
  });
  const tools = agentEnabled ? toolDefinitions(commands) : [];
  if (agentEnabled && opts.waitTool) tools.push(WAIT_TOOL);
  const toolsJson = JSON.stringify(tools);
  // The budget in characters at this task's measured density (95 %: the next turn's template tokens).
  const window: WindowLimits = mem.charsPerToken
    ? { ...limits, budgetChars: Math.floor(contextTokens * mem.charsPerToken * 0.95) }
    : limits;
  const { messages, firstShown } = conversation(
    task,
    history,
    mem,
    system,
    toolsJson.length,
    window,
    outside,
  );
  return { mem, lastTurn, tools, toolsJson, messages, firstShown, failDecision };
}

/** Whether the last turn was cut off at the output limit (this call is its retry). */
export function isAfterCut(p: PreparedTurn): boolean {
  return p.lastTurn?.nudge === CUT_NUDGE;
}

/** Call the model for the turn (the retry after a cut with the larger limit), read its calls and log the call. */
export async function callNative(
  s: NativeStep,
  p: PreparedTurn,
): Promise<{ call: ModelCallOutcome; readCalls: NativeCall[] }> {
  const { task, ctx, commands } = s;
  const { opts, prompt } = s.cfg;
  const { mem, messages, tools, firstShown } = p;
  // The retry after a reply cut off at the output limit gets the role's larger limit, if it has one.
  const afterCut = isAfterCut(p);
  const role =
    afterCut && opts.model.lengthRetryNumPredict !== undefined
      ? { ...opts.model, options: { ...opts.model.options, numPredict: opts.model.lengthRetryNumPredict } }
      : opts.model;
  const call = await callModel(
    ctx,
    task.id,
    role,
    'native',
    // A window move changes the prompt after the task message: the server evaluates it again (a compaction).
    { messages, tools, layout: { windowMoved: firstShown > 0, dropped: mem.dropped + firstShown } },
    opts.systemPrompt ? undefined : prompt,
  );
  // The calls' values read as a directive's are (decoration removed); what was changed goes into the step log.
  const argumentNotes: string[] = [];
  const readCalls =
    call.response && call.response.usage.doneReason !== 'length'
      ? call.response.message.toolCalls.map((c) => readCallArguments(c, commands, argumentNotes))
      : [];
  await ctx.logStep(
    argumentNotes.length > 0 ? { ...call.record, validationErrors: argumentNotes } : call.record,
  );
  return { call, readCalls };
}

/**
 * The iteration budget is used up: one last model call, without tools, asks for a final message to the user (what
 * was done, what is left), and the task completes with it (`stopped: 'max_iterations'`), rather than failing with
 * a bare code. Fails as before when that call fails or answers nothing.
 */
export async function finalSummary(s: NativeStep, p: PreparedTurn): Promise<Decision> {
  const { task, ctx } = s;
  const { opts, summaryPrompt, maxIterations } = s.cfg;
  const { mem, messages, failDecision } = p;
  const request = summaryPrompt.text.replaceAll('{{maxIterations}}', String(maxIterations));
  const call = await callModel(
    ctx,
    task.id,
    opts.model,
    'native',
    { messages: [...messages, { role: 'user', content: request }] },
    summaryPrompt,
  );
  await ctx.logStep(call.record);
  const text = call.response?.message.content.trim() ?? '';
  if (!text) {
    return failDecision('max_iterations', `no final answer after ${maxIterations} model calls`);
  }
  return {
    type: 'complete',
    result: {
      message: text,
      iterations: mem.dropped + mem.turns.length,
      stopped: 'max_iterations',
    },
    memory: mem as unknown as JsonValue,
  };
}
