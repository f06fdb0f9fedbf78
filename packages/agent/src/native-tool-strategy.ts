/**
 * The native tool-calling strategy: the model gets the commands as tools and calls them itself; each step sends a
 * window of the conversation (its turns kept in task memory), runs the calls the model made, and ends on a final
 * answer, a budget or the max-iterations summary.
 *
 * Size (over 500 lines): the memory codec, the prompt window (which turns fit, when it moves so the server's prompt
 * cache stays hot) and the step function share one memory shape and are read together when a prompt looks wrong;
 * the tool table, history view and prompt files are already in their own modules.
 */
import type {
  CommandDescriptor,
  Decision,
  HistoryEntry,
  JsonValue,
  StepContext,
  Task,
  TaskStrategy,
} from '@ccagent/engine';
import type { ChatMessage, ToolDefinition } from '@ccagent/models';
import { z } from 'zod';
import { AgentError } from './agent-error.js';
import { stripThinking } from './directive-parser.js';
import { ARGS_FORMS, parseArgsValue, undecorate } from './field-values.js';
import { MemoryValidationCache } from './memory-cache.js';
import { resultForModel } from './history-view.js';
import { CHARS_PER_TOKEN } from './memory.js';
import { callModel, type ModelRole } from './model-call.js';
import { loadPrompt, type PromptName } from './prompts.js';

/** Options of {@link createNativeToolStrategy}. */
export interface NativeToolOptions {
  model: ModelRole;
  /** Model calls per task before it fails with `max_iterations`. Default 10 (env AGENT_MAX_ITERATIONS). */
  maxIterations?: number;
  /** Replaces the shipped system prompt (env AGENT_SYSTEM_PROMPT). */
  systemPrompt?: string;
  /** The shipped system prompt to use when `systemPrompt` is unset (default `native-system`; chat: `chat-system`). */
  promptName?: PromptName;
  /** Timeout of each tool call in milliseconds (env TOOL_EXECUTION_TIMEOUT, in seconds); default: the engine's. */
  toolTimeoutMs?: number;
  /**
   * False: the model is offered no tools and answers directly, as a chat (env AGENT_ENABLED). Default true.
   */
  agentEnabled?: boolean;
  /**
   * Offer the `wait` tool: the model sleeps until an event arrives for the task or the given time passes (a
   * long-lived task: "every 10 minutes check the farm"). The task sleeps without a busy loop and across restarts.
   */
  waitTool?: boolean;
  /** Model calls failing in a row before the task fails with `model_failed`. Default 3. */
  maxModelFailures?: number;
  /** Longest tool result given back to the model, in characters. Default 8000. */
  maxToolResultChars?: number;
  /**
   * Budget of one prompt (system, task, tools and the turns shown) in estimated tokens (one per 4 characters, as
   * `estimateTokens`).
   * Default: the role's `options.numCtx` (else 16384) minus 2048 tokens left for the reply, at least 1024. The most
   * recent turns that fit are shown; older ones are left out (the task message says how many), and dropped from the
   * memory, so a task of any length sends prompts of bounded size and keeps a memory of bounded size.
   */
  contextTokens?: number;
  /**
   * The first turn shown moves forward by this many turns at a time (counted from the task's first turn), so the
   * prompt's prefix — which a model server reuses from its cache — stays the same for several model calls in a row
   * instead of changing on every call once the window is full. Default 8.
   */
  windowChunkTurns?: number;
  /**
   * When the window has to move, it moves far enough that the turns still shown fill at most this share of the
   * budget (0 < share ≤ 1), so the next turns append to an unchanged prompt for a long while: each move makes the
   * server evaluate the whole prompt again, so moves should be rare. 1 moves only as far as needed. Default 0.5.
   */
  windowFill?: number;
}

/** Context window assumed when the role sets no `numCtx` (the orchestrator's default for the native role). */
const DEFAULT_NUM_CTX = 16_384;
/** Tokens of the context window left for the model's reply. */
const REPLY_RESERVE_TOKENS = 2048;

/** Default number of model calls of the native loop. */
export const DEFAULT_MAX_ITERATIONS = 10;

const envSchema = z.object({
  AGENT_MAX_ITERATIONS: z.coerce.number().int().min(1).max(1000).optional(),
  AGENT_SYSTEM_PROMPT: z.string().trim().min(1).optional(),
  // Seconds, as seed 004 specifies (fractions allowed down to a millisecond; at most a day).
  TOOL_EXECUTION_TIMEOUT: z.coerce.number().min(0.001).max(86_400).optional(),
  AGENT_ENABLED: z
    .enum(['true', 'false', '1', '0', 'yes', 'no', 'on', 'off'], {
      message: 'expected true or false (also 1/0, yes/no, on/off)',
    })
    .optional(),
});

/** Options {@link nativeOptionsFromEnv} can set. */
export type NativeEnvOptions = Pick<
  NativeToolOptions,
  'maxIterations' | 'systemPrompt' | 'toolTimeoutMs' | 'agentEnabled'
>;

/**
 * Overrides of {@link NativeToolOptions} from the environment: `AGENT_MAX_ITERATIONS` (integer ≥ 1),
 * `AGENT_SYSTEM_PROMPT` (text), `TOOL_EXECUTION_TIMEOUT` (seconds, e.g. `30` or `2.5`), `AGENT_ENABLED` (`false`:
 * no tools, the model answers as a chat). Empty variables are ignored; an invalid value throws
 * `AgentError('invalid_config')` naming the variable.
 */
export function nativeOptionsFromEnv(env: Record<string, string | undefined>): NativeEnvOptions {
  const pick = (k: string) =>
    env[k] === undefined || env[k] === '' ? undefined : env[k]?.trim().toLowerCase();
  const parsed = envSchema.safeParse({
    AGENT_MAX_ITERATIONS: pick('AGENT_MAX_ITERATIONS'),
    AGENT_SYSTEM_PROMPT:
      env.AGENT_SYSTEM_PROMPT === undefined || env.AGENT_SYSTEM_PROMPT === ''
        ? undefined
        : env.AGENT_SYSTEM_PROMPT,
    TOOL_EXECUTION_TIMEOUT: pick('TOOL_EXECUTION_TIMEOUT'),
    AGENT_ENABLED: pick('AGENT_ENABLED'),
  });
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new AgentError(
      'invalid_config',
      `invalid environment variable ${String(issue?.path[0] ?? '')}: ${issue?.message ?? 'invalid'}`,
    );
  }
  const out: NativeEnvOptions = {};
  if (parsed.data.AGENT_MAX_ITERATIONS !== undefined) out.maxIterations = parsed.data.AGENT_MAX_ITERATIONS;
  if (parsed.data.AGENT_SYSTEM_PROMPT !== undefined) out.systemPrompt = parsed.data.AGENT_SYSTEM_PROMPT;
  if (parsed.data.TOOL_EXECUTION_TIMEOUT !== undefined)
    out.toolTimeoutMs = Math.max(1, Math.round(parsed.data.TOOL_EXECUTION_TIMEOUT * 1000));
  if (parsed.data.AGENT_ENABLED !== undefined)
    out.agentEnabled = ['true', '1', 'yes', 'on'].includes(parsed.data.AGENT_ENABLED);
  return out;
}

/**
 * Version 2 of the native memory: a turn's calls carry no progress. Which of them were handed to the engine follows
 * from the task — the turn records how many tool calls the task had made when the model replied (`callsBefore`),
 * and the k-th call of the turn that is not rejected is the task's (callsBefore + k)-th tool call, i.e. its
 * (callsBefore + k)-th tool_call history entry — so a step that only hands out the next call changes nothing in
 * memory and returns none (nothing to re-encode, fingerprint or rewrite on that step).
 */
const callSchema = z.object({
  name: z.string(),
  arguments: z.record(z.string(), z.unknown()),
  /** Set when the call was not run (an unknown tool, or the engine refused it): the error the model is given. */
  rejected: z.string().optional(),
  /** Set for a call the strategy handled itself (`wait`): the result the model is given. */
  local: z.string().optional(),
});

const turnSchema = z.object({
  content: z.string(),
  calls: z.array(callSchema),
  /** A user message sent after this turn (e.g. after an empty reply). */
  nudge: z.string().optional(),
  /** The task's tool calls (tool_call history entries) made before the model gave this turn. */
  callsBefore: z.number().int().min(0),
  /** The step that asked the model for this turn: history entries of earlier steps come before it. */
  step: z.number().int().min(0).optional(),
});

const nativeMemorySchema = z.object({
  v: z.literal(2),
  strategy: z.literal('native').default('native'),
  /**
   * Turns no longer kept: left out of the prompt for the context budget, then dropped from memory (they never come
   * back). The task's model call count is `dropped + turns.length`.
   */
  dropped: z.number().int().min(0).default(0),
  turns: z.array(turnSchema).default([]),
  modelFailures: z.number().int().default(0),
  /**
   * Model calls (dropped + kept turns) made before the task was last resumed (a follow-up message or a retry), and
   * the seq of that `resume` history entry: the iteration budget counts from there.
   */
  runStart: z.number().int().min(0).default(0),
  resumeSeq: z.number().int().min(0).default(0),
  /**
   * Characters per prompt token as the model server counted them (the last prompt's messages, tool calls and tool
   * schemas over its reported prompt tokens), so the window fits the real context: code, JSON and numbers run near
   * 2.5 characters a token, not 4.
   */
  charsPerToken: z.number().positive().optional(),
});

/**
 * Version 1, written by earlier builds: each call's progress as a status that went queued → dispatched on the step
 * that handed it out (so every such step wrote a new memory). Read as version 2: `dispatched` and `queued` calls are
 * both "not rejected" and the task's tool call count tells them apart as in version 2; each turn's `callsBefore` is
 * the number of calls dispatched in the turns before it, the alignment version 1 used to rebuild the conversation.
 */
const v1MemorySchema = z.object({
  v: z.literal(1).default(1),
  strategy: z.literal('native').default('native'),
  turns: z
    .array(
      z.object({
        content: z.string(),
        calls: z.array(
          z.object({
            name: z.string(),
            arguments: z.record(z.string(), z.unknown()),
            status: z.enum(['queued', 'dispatched', 'rejected']),
            error: z.string().optional(),
          }),
        ),
        nudge: z.string().optional(),
      }),
    )
    .default([]),
  modelFailures: z.number().int().default(0),
});

type NativeMemory = z.infer<typeof nativeMemorySchema>;
type NativeTurn = z.infer<typeof turnSchema>;
type NativeCall = z.infer<typeof callSchema>;

const emptyMemory = (): NativeMemory => ({
  v: 2,
  strategy: 'native',
  dropped: 0,
  turns: [],
  modelFailures: 0,
  runStart: 0,
  resumeSeq: 0,
});

/** A stored memory of either version as version 2; a fresh memory when it fits neither schema. */
function readMemory(value: JsonValue | undefined): NativeMemory {
  const v2 = nativeMemorySchema.safeParse(value);
  if (v2.success) return v2.data;
  const v1 = v1MemorySchema.safeParse(value ?? {});
  if (!v1.success) return emptyMemory();
  let callsBefore = 0;
  const turns = v1.data.turns.map((t): NativeTurn => {
    const turn: NativeTurn = {
      content: t.content,
      calls: t.calls.map((c) =>
        c.status === 'rejected'
          ? { name: c.name, arguments: c.arguments, rejected: c.error ?? 'not run' }
          : { name: c.name, arguments: c.arguments },
      ),
      callsBefore,
      ...(t.nudge !== undefined ? { nudge: t.nudge } : {}),
    };
    callsBefore += t.calls.filter((c) => c.status === 'dispatched').length;
    return turn;
  });
  return {
    v: 2,
    strategy: 'native',
    dropped: 0,
    turns,
    modelFailures: v1.data.modelFailures,
    runStart: 0,
    resumeSeq: 0,
  };
}

/**
 * Validated native memories by object. The strategy never changes a memory in place: a decision that changes it
 * builds a new memory object sharing the unchanged turns (frozen, so an accidental in-place change throws instead of
 * leaving a stale validation behind) and registers it as valid, so the next step — handed that same object by the
 * engine — validates nothing. A version 1 memory is validated once per object too and read as version 2.
 */
const nativeMemories = new MemoryValidationCache<NativeMemory>(readMemory);

/** How many native memories have been validated with zod in this process (for tests). */
export function nativeMemoryValidations(): number {
  return nativeMemories.validations;
}

/** A new memory object built from validated data: frozen at the top and registered as valid. */
function nextMemory(memory: NativeMemory): NativeMemory {
  Object.freeze(memory.turns);
  Object.freeze(memory);
  nativeMemories.remember(memory, memory);
  return memory;
}

/** `turn` with `calls` replaced (a new frozen turn object; the old one is left as it was). */
function withCalls(turn: NativeTurn, calls: NativeCall[]): NativeTurn {
  for (const c of calls) Object.freeze(c);
  return Object.freeze({ ...turn, calls: Object.freeze(calls) as NativeCall[] });
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… [${text.length - max} chars cut]`;
}

/** Ollama tool definitions from the commands the task may call (their JSON Schemas as parameters). */
export function toolDefinitions(commands: readonly CommandDescriptor[]): ToolDefinition[] {
  return commands.map((c) => {
    const schema = c.argsSchema;
    const parameters =
      schema && typeof schema === 'object' && !Array.isArray(schema)
        ? (schema as Record<string, unknown>)
        : { type: 'object', properties: {} };
    return { name: c.name, description: c.description ?? c.name, parameters };
  });
}

/** A history entry from outside the model's own loop: a person's message, an event, a resume of the task. */
type OutsideEntry = Extract<HistoryEntry, { type: 'message' | 'event' | 'resume' }>;

/**
 * The message, event and resume entries of the history from step `floor` on, oldest first. Read backwards from the
 * end (history steps never decrease), so a step costs what the memory's window holds, not the task's length.
 */
function outsideEntries(history: readonly HistoryEntry[], floor: number): OutsideEntry[] {
  const out: OutsideEntry[] = [];
  for (let i = history.length - 1; i >= 0; i--) {
    const e = history[i] as HistoryEntry;
    if (e.step < floor) break;
    if (e.type === 'message' || e.type === 'event' || e.type === 'resume') out.push(e);
  }
  return out.reverse();
}

/** How the model is shown an outside entry: as a user message. */
function outsideMessage(e: OutsideEntry, maxChars: number): ChatMessage {
  switch (e.type) {
    case 'message':
      return { role: 'user', content: e.text };
    case 'event':
      return {
        role: 'user',
        content: `[event "${e.name}"${e.data !== undefined ? `: ${clip(JSON.stringify(e.data), maxChars)}` : ''}]`,
      };
    case 'resume':
      return {
        role: 'user',
        content:
          e.reason === 'retry'
            ? `[The task was ${e.from} and is retried with a fresh budget. Continue from what was already done.]`
            : `[The task was ${e.from}; it continues with the message below and a fresh budget.]`,
      };
  }
}

/** String arguments that name one value (a path, a shell command): their Markdown decoration is never part of it. */
const SINGLE_VALUE_KEYS = ['path', 'command'];

/**
 * A model's call with its argument values read by the same rules as a directive's fields (issue 31): a value the
 * command declares as an array of strings but given as one string (`"args": "`[\"add\"]`"`, `"args": "list"`) is
 * read as ARGS is — decoration removed, a JSON array or words —, and a `path` or `command` in inline code, emphasis
 * or quotes loses them. Each change is named in `notes`; a string that still is no list of words makes the call
 * `rejected` with the expected form (it would otherwise run with no arguments: the host ignores a string `args`).
 */
function readCallArguments(
  call: { name: string; arguments: Record<string, unknown> },
  commands: readonly CommandDescriptor[],
  notes: string[],
): NativeCall {
  const schema = commands.find((c) => c.name === call.name)?.argsSchema;
  const props =
    schema && typeof schema === 'object' && !Array.isArray(schema) && typeof schema.properties === 'object'
      ? (schema.properties as Record<string, { type?: unknown; items?: { type?: unknown } } | undefined>)
      : {};
  const args: Record<string, unknown> = { ...call.arguments };
  for (const [key, value] of Object.entries(args)) {
    if (typeof value !== 'string') continue;
    const prop = props[key];
    if (prop?.type === 'array' && prop.items?.type === 'string') {
      const read = parseArgsValue(value);
      if (!read.ok) {
        return {
          name: call.name,
          arguments: call.arguments,
          rejected: `"${key}" must be an array of strings, e.g. ["add", "Buy milk"]; ${read.error.replace(ARGS_FORMS, 'an array')}`,
        };
      }
      args[key] = read.value;
      notes.push(`tolerated: ${call.name} "${key}" given as a string, read as ${JSON.stringify(read.value)}`);
    } else if (prop?.type === 'string' && SINGLE_VALUE_KEYS.includes(key) && undecorate(value) !== value) {
      args[key] = undecorate(value);
      notes.push(`tolerated: ${call.name} "${key}" ${JSON.stringify(value)} read without its decoration`);
    }
  }
  return { name: call.name, arguments: args };
}

/** The `wait` tool of long-lived tasks (see `NativeToolOptions.waitTool`). */
const WAIT_TOOL: ToolDefinition = {
  name: 'wait',
  description:
    'Sleep until an event arrives for this task (a message from the user, a signal from the computer) or the given ' +
    'number of seconds passes, whichever comes first. Use it for periodic work ("every 10 minutes check …") and to ' +
    'wait for something to happen. Costs nothing while asleep.',
  parameters: {
    type: 'object',
    properties: {
      seconds: { type: 'integer', minimum: 1, maximum: 604800, description: 'longest sleep, in seconds' },
      reason: { type: 'string', description: 'what you are waiting for' },
    },
    required: ['seconds'],
  },
};

/** The sleep a `wait` call asks for, in whole seconds within 1 s … 7 days (a bad value: 60 s). */
function waitSeconds(args: Record<string, unknown>): number {
  const s = Number(args.seconds);
  return Number.isFinite(s) ? Math.min(604_800, Math.max(1, Math.round(s))) : 60;
}

/** How the conversation is bounded: the prompt budget in characters, and the window's step in turns. */
interface WindowLimits {
  budgetChars: number;
  chunkTurns: number;
  /** Share of the budget the turns kept may fill after the window moved. */
  fill: number;
  maxResultChars: number;
}

/** A built conversation and the turn (index into the memory's turns) the memory may drop everything before. */
interface Conversation {
  messages: ChatMessage[];
  firstShown: number;
}

/**
 * Rebuild the conversation from the task's history and the strategy memory: system, the task, then per model turn
 * the assistant message with its tool calls followed by one `tool` message per call (the command's outcome, or
 * the reason it was not run). Deterministic, so the prompt prefix is stable from one iteration to the next.
 *
 * Only the most recent turns that fit the budget are shown (always the last one): turns are measured from the last
 * backwards, and the first turn shown is then moved forward to a multiple of `chunkTurns` (counted from the task's
 * first turn), so it changes once every `chunkTurns` model calls rather than on every call. The task message says how
 * many turns and calls are left out. The work done is bounded by the window, not by the task's length: the history
 * is read backwards only as far as the oldest turn kept in memory.
 */
function conversation(
  task: Task,
  history: readonly HistoryEntry[],
  mem: NativeMemory,
  system: string,
  toolsChars: number,
  limits: WindowLimits,
  outside: readonly OutsideEntry[],
): Conversation {
  const turns = mem.turns;
  // Outside entries go before the first turn asked for at a later step; those after every turn, at the end.
  const before = new Map<number, ChatMessage[]>();
  const after: ChatMessage[] = [];
  const fromPerson = new Set<ChatMessage>();
  const show = (e: OutsideEntry): ChatMessage => {
    const m = outsideMessage(e, limits.maxResultChars);
    if (e.type === 'message') fromPerson.add(m);
    return m;
  };
  {
    let k = 0;
    for (let j = 0; j < turns.length; j++) {
      const step = (turns[j] as NativeTurn).step;
      if (step === undefined) continue;
      const group: ChatMessage[] = [];
      while (k < outside.length && (outside[k] as OutsideEntry).step < step) {
        group.push(show(outside[k] as OutsideEntry));
        k++;
      }
      if (group.length > 0) before.set(j, group);
    }
    for (; k < outside.length; k++) after.push(show(outside[k] as OutsideEntry));
  }
  const callsMade = task.counters.toolCalls;
  // A turn's k-th call that is not rejected is the (callsBefore + k)-th tool_call in the history (this strategy is
  // the task's only caller, and a model step runs only once every call of the last turn was handed out). The task's
  // tool call count is the number of tool_call entries, so the history is read from its end, as far back as the
  // first call of the oldest turn kept; every result comes after its call.
  const oldest = turns[0]?.callsBefore ?? callsMade;
  const recent: HistoryEntry[] = [];
  const results = new Map<string, HistoryEntry>();
  for (let i = history.length - 1; i >= 0 && recent.length < callsMade - oldest; i--) {
    const e = history[i] as HistoryEntry;
    if (e.type === 'tool_call') recent.push(e);
    else if (e.type === 'tool_result') results.set(e.callId, e);
  }
  recent.reverse();
  const base = callsMade - recent.length;

  const turnMessages = (turn: NativeTurn): ChatMessage[] => {
    const out: ChatMessage[] = [
      {
        role: 'assistant',
        content: turn.content,
        ...(turn.calls.length > 0
          ? { toolCalls: turn.calls.map((c) => ({ name: c.name, arguments: c.arguments })) }
          : {}),
      },
    ];
    let next = turn.callsBefore;
    for (const c of turn.calls) {
      if (c.rejected !== undefined) {
        out.push({ role: 'tool', toolName: c.name, content: JSON.stringify({ error: c.rejected }) });
        continue;
      }
      if (c.local !== undefined) {
        out.push({ role: 'tool', toolName: c.name, content: c.local });
        continue;
      }
      const issued = next >= base ? recent[next - base] : undefined;
      next++;
      const r = issued?.type === 'tool_call' ? results.get(issued.callId) : undefined;
      if (!r || r.type !== 'tool_result') continue;
      const body = r.outcome.ok
        ? resultForModel(r.outcome.result)
        : {
            error: r.outcome.error.message,
            ...(r.outcome.error.code ? { code: r.outcome.error.code } : {}),
            ...(r.outcome.error.traceback ? { traceback: r.outcome.error.traceback } : {}),
          };
      out.push({
        role: 'tool',
        toolName: c.name,
        content: clip(JSON.stringify(body), limits.maxResultChars),
      });
    }
    if (turn.nudge) out.push({ role: 'user', content: turn.nudge });
    return out;
  };
  const groupMessages = (j: number): ChatMessage[] => {
    const out = [...(before.get(j) ?? []), ...turnMessages(turns[j] as NativeTurn)];
    if (j === turns.length - 1) out.push(...after);
    return out;
  };
  const sizeOf = (messages: ChatMessage[]): number => {
    let n = 0;
    for (const m of messages) {
      n += m.content.length + 16;
      if (m.toolCalls) n += JSON.stringify(m.toolCalls).length;
    }
    return n;
  };

  let taskText = task.prompt;
  if (task.context !== undefined && task.context !== null)
    taskText += `\n\nContext: ${JSON.stringify(task.context)}`;
  // What every prompt carries, and room for the note saying what is left out.
  const fixed = system.length + taskText.length + toolsChars + 200;
  const shown: ChatMessage[][] = [];
  const sizes: number[] = [];
  let used = fixed;
  let first = turns.length;
  for (let j = turns.length - 1; j >= 0; j--) {
    const m = groupMessages(j);
    const size = sizeOf(m);
    if (j < turns.length - 1 && used + size > limits.budgetChars) break;
    used += size;
    shown.push(m);
    sizes.push(size);
    first = j;
  }
  shown.reverse();
  sizes.reverse();
  if (first > 0) {
    // Move the window's start to the next multiple of chunkTurns (in the task's turn count), never past the last turn,
    // then on until what is kept fills at most `fill` of the budget: the next moves are then many calls away.
    const absolute = mem.dropped + first;
    const aligned = Math.ceil(absolute / limits.chunkTurns) * limits.chunkTurns - mem.dropped;
    let start = Math.min(aligned, turns.length - 1);
    let kept = fixed;
    for (let j = start; j < turns.length; j++) kept += sizes[j - first] ?? 0;
    while (start + limits.chunkTurns <= turns.length - 1 && kept > limits.budgetChars * limits.fill) {
      for (let j = start; j < start + limits.chunkTurns; j++) kept -= sizes[j - first] ?? 0;
      start += limits.chunkTurns;
    }
    shown.splice(0, start - first);
    first = start;
  }
  const leftOutTurns = mem.dropped + first;
  if (leftOutTurns > 0) {
    const leftOutCalls = (turns[first] as NativeTurn).callsBefore;
    taskText +=
      `\n\n[${leftOutTurns} earlier model replies and their ${leftOutCalls} tool calls are not shown here, to fit ` +
      'the context window. Continue from the most recent steps below.]';
  }
  const messages: ChatMessage[] = [
    { role: 'system', content: system },
    { role: 'user', content: taskText },
  ];
  // Messages of turns left out stay: they are the person's instructions (events of those turns are not kept).
  for (const [j, group] of before) {
    if (j < first) for (const m of group) if (fromPerson.has(m)) messages.push(m);
  }
  for (const m of shown) messages.push(...m);
  if (turns.length === 0) messages.push(...after);
  return { messages, firstShown: first };
}

const EMPTY_NUDGE = 'Your reply was empty. Call a tool, or answer with the result if the task is done.';
const CUT_NUDGE =
  'Your reply was cut off at the output limit (done_reason "length"), so none of it was used: no call was made. ' +
  'Reply again, shorter.';
const TEXT_CALL_NUDGE =
  'Your reply wrote a tool call as text (<tool_call>…); text is not run. Call the tool through the tool-calling ' +
  'interface, or answer without tags if the task is done.';

/**
 * The native tool-calling strategy: the model gets the task and Ollama `tools` built from the commands' JSON
 * Schemas, and each engine step either dispatches one requested tool call or asks the model again with the results
 * so far (as many of the most recent ones as fit `contextTokens`); it ends when the model answers without tool calls,
 * or fails after `maxIterations` model calls. An unknown tool is answered with an error message and the loop
 * continues; a failing tool's error is its result.
 */
export function createNativeToolStrategy(opts: NativeToolOptions): TaskStrategy {
  const maxIterations = opts.maxIterations ?? DEFAULT_MAX_ITERATIONS;
  if (!Number.isInteger(maxIterations) || maxIterations < 1) {
    throw new AgentError('invalid_config', 'maxIterations must be an integer ≥ 1');
  }
  if (opts.toolTimeoutMs !== undefined && (!Number.isInteger(opts.toolTimeoutMs) || opts.toolTimeoutMs < 1)) {
    throw new AgentError('invalid_config', 'toolTimeoutMs must be an integer ≥ 1');
  }
  const maxFailures = opts.maxModelFailures ?? 3;
  const maxChars = opts.maxToolResultChars ?? 8000;
  const contextTokens =
    opts.contextTokens ??
    Math.max(1024, (opts.model.options?.numCtx ?? DEFAULT_NUM_CTX) - REPLY_RESERVE_TOKENS);
  if (!Number.isInteger(contextTokens) || contextTokens < 256) {
    throw new AgentError('invalid_config', 'contextTokens must be an integer ≥ 256');
  }
  const chunkTurns = opts.windowChunkTurns ?? 8;
  if (!Number.isInteger(chunkTurns) || chunkTurns < 1) {
    throw new AgentError('invalid_config', 'windowChunkTurns must be an integer ≥ 1');
  }
  const fill = opts.windowFill ?? 0.5;
  if (!(fill > 0 && fill <= 1)) {
    throw new AgentError('invalid_config', 'windowFill must be a number in (0, 1]');
  }
  const limits: WindowLimits = {
    budgetChars: contextTokens * CHARS_PER_TOKEN,
    chunkTurns,
    fill,
    maxResultChars: maxChars,
  };
  const agentEnabled = opts.agentEnabled ?? true;
  const prompt = loadPrompt(opts.promptName ?? 'native-system');
  const summaryPrompt = loadPrompt('native-final-summary');

  /**
   * The iteration budget is used up: one last model call, without tools, asks for a final message to the user (what
   * was done, what is left), and the task completes with it (`stopped: 'max_iterations'`), rather than failing with
   * a bare code. Fails as before when that call fails or answers nothing.
   */
  async function finalSummary(
    task: Task,
    ctx: StepContext,
    mem: NativeMemory,
    messages: ChatMessage[],
    failDecision: (code: string, message: string) => Decision,
  ): Promise<Decision> {
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
  const system = opts.systemPrompt?.trim() ? opts.systemPrompt.trim() : prompt.text;

  /**
   * The last turn's next call to hand out: the turn's first `callsMade - callsBefore` calls that are not rejected
   * were handed out, where `callsMade` is the task's tool call count. That count is the engine's
   * `counters.toolCalls`, raised in the same commit as each tool_call history entry (so it equals their number),
   * read in O(1): counting the history's entries on every step grew with the task and was ~4 % of a long-running
   * server's CPU. Returns the call's tool_call decision (without memory), or none when every call was handed out.
   * `mem` is not changed: unknown tools met on the way, and the call the engine refused (`refused`, the text of its
   * note), are rejected in a new memory returned as `mem`, and so is a turn that counts calls the task never made
   * (a memory given with the task at creation) re-anchored at `callsMade`; otherwise `mem` is returned as it came, so
   * the step leaves the task's memory as it is.
   */
  function nextQueuedCall(
    mem: NativeMemory,
    callsMade: number,
    available: Set<string>,
    refused: string | undefined,
  ): { mem: NativeMemory; decision?: Decision } {
    const last = mem.turns.length - 1;
    const turn = mem.turns[last];
    if (!turn) return { mem };
    let handedOut = callsMade - turn.callsBefore;
    // More calls before the turn than the task ever made: the memory was not written by this task's run. Its last
    // turn starts now; left as it was, every step would hand out the same first call again.
    const anchor = handedOut < 0 ? callsMade : undefined;
    if (anchor !== undefined) handedOut = 0;
    let calls: NativeCall[] | undefined;
    let dispatched: NativeCall | undefined;
    for (let i = 0; i < turn.calls.length && !dispatched; i++) {
      const c = turn.calls[i] as NativeCall;
      if (c.rejected !== undefined || c.local !== undefined) continue;
      if (handedOut > 0) {
        handedOut--;
        continue;
      }
      if (opts.waitTool && c.name === WAIT_TOOL.name && refused === undefined) {
        // Handled here: the task sleeps (durably, `wakeAt`) until an event for it or the time; no command runs.
        const seconds = waitSeconds(c.arguments);
        calls ??= turn.calls.slice();
        calls[i] = {
          name: c.name,
          arguments: c.arguments,
          local: JSON.stringify({ waited_up_to_seconds: seconds, note: 'woke up: see what follows' }),
        };
        const turns = mem.turns.slice();
        turns[last] = withCalls(anchor === undefined ? turn : { ...turn, callsBefore: anchor }, calls);
        return {
          mem: nextMemory({ ...mem, turns }),
          decision: {
            type: 'continue',
            wakeAfterMs: seconds * 1000,
            // no note: a note right before a step reads as the engine refusing the call handed out
            message: `waiting up to ${seconds} s for an event`,
          },
        };
      }
      let reason: string | undefined;
      if (refused !== undefined) {
        // The first call not yet in the history is the one the previous step handed out.
        reason = refused;
        refused = undefined;
      } else if (!available.has(c.name)) {
        reason = `unknown tool "${c.name}"; the available tools are: ${[...available].join(', ') || 'none'}`;
      }
      if (reason === undefined) {
        dispatched = c;
        break;
      }
      calls ??= turn.calls.slice();
      calls[i] = { name: c.name, arguments: c.arguments, rejected: reason };
    }
    let next = mem;
    if (calls || anchor !== undefined) {
      const turns = mem.turns.slice();
      turns[last] = withCalls(
        anchor === undefined ? turn : { ...turn, callsBefore: anchor },
        calls ?? turn.calls.slice(),
      );
      next = nextMemory({ ...mem, turns });
    }
    if (!dispatched) return { mem: next };
    return {
      mem: next,
      decision: {
        type: 'tool_call',
        command: dispatched.name,
        args: dispatched.arguments as JsonValue,
        ...(opts.toolTimeoutMs !== undefined ? { timeoutMs: opts.toolTimeoutMs } : {}),
        message: `calling ${dispatched.name}`,
      },
    };
  }

  async function decide(task: Task, history: readonly HistoryEntry[], ctx: StepContext): Promise<Decision> {
    const commands = agentEnabled ? ctx.availableCommands() : [];
    const available = new Set(commands.map((c) => c.name));
    const given = nativeMemories.get(task.memory);
    // This strategy writes a note only on a step that leaves no call to hand out; a note from the step before, while
    // a call is waiting, is the engine refusing the call that step handed out (no tool_call entry was written).
    const lastEntry = history[history.length - 1];
    const refused =
      lastEntry?.type === 'note' && lastEntry.step === ctx.step - 1 ? lastEntry.text : undefined;
    const callsMade = task.counters.toolCalls;
    const queued = nextQueuedCall(given, callsMade, available, refused);
    if (queued.decision) {
      // A step that only hands out the next call returns no memory: nothing to re-encode or rewrite.
      return queued.mem === given
        ? queued.decision
        : { ...queued.decision, memory: queued.mem as unknown as JsonValue };
    }
    let mem = queued.mem;
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
    if (mem.dropped + mem.turns.length - mem.runStart >= maxIterations) {
      return finalSummary(task, ctx, mem, messages, failDecision);
    }
    // The retry after a reply cut off at the output limit gets the role's larger limit, if it has one.
    const afterCut = lastTurn?.nudge === CUT_NUDGE;
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
    if (!call.response) {
      const failed = nextMemory({ ...mem, modelFailures: mem.modelFailures + 1 });
      if (failed.modelFailures >= maxFailures) {
        return {
          ...failDecision(
            'model_failed',
            `the model failed ${failed.modelFailures} times in a row: ${call.error?.message ?? ''}`,
          ),
          memory: failed as unknown as JsonValue,
        };
      }
      return { type: 'continue', memory: failed as unknown as JsonValue };
    }
    const reply = call.response.message;
    // A reply stopped at the output limit is never used, neither as an answer nor for its calls (the rest of them
    // may be missing): one retry with a note; cut off again, the task fails with output_truncated.
    const cut = call.response.usage.doneReason === 'length';
    // A reply that is only a reasoning block (`<think>…</think>`) says nothing either.
    const empty = !cut && reply.toolCalls.length === 0 && stripThinking(reply.content).trim() === '';
    // A call written as text (Qwen's `<tool_call>` tags the server did not turn into a call) is not an answer.
    const textCall = !cut && reply.toolCalls.length === 0 && /<tool_call>/i.test(reply.content);
    const nudge = cut ? CUT_NUDGE : empty ? EMPTY_NUDGE : textCall ? TEXT_CALL_NUDGE : undefined;
    const turn = withCalls(
      {
        content: reply.content,
        calls: [],
        callsBefore: callsMade,
        step: ctx.step,
        ...(nudge ? { nudge } : {}),
      },
      cut ? [] : readCalls,
    );
    // Turns left out of this prompt are never shown again (the window only moves forward): the memory drops them, so
    // it stays as small as the window however long the task runs.
    const counted = call.response.usage.promptEvalCount;
    // What the server counted: the messages, their tool calls and the tool schemas (the template adds a little).
    const sent = messages.reduce(
      (n, m) => n + m.content.length + (m.toolCalls ? JSON.stringify(m.toolCalls).length : 0),
      toolsJson.length,
    );
    const withTurn = nextMemory({
      ...mem,
      modelFailures: 0,
      dropped: mem.dropped + firstShown,
      turns: [...mem.turns.slice(firstShown), turn],
      ...(counted !== undefined && counted > 0 ? { charsPerToken: Math.max(1, sent / counted) } : {}),
    });
    if (cut && afterCut) {
      return {
        ...failDecision(
          'output_truncated',
          'the model was cut off at its output limit twice in a row; raise numPredict (or lengthRetryNumPredict)',
        ),
        memory: withTurn as unknown as JsonValue,
      };
    }
    if (turn.calls.length === 0) {
      if (nudge) return { type: 'continue', memory: withTurn as unknown as JsonValue };
      return {
        type: 'complete',
        result: {
          message: stripThinking(reply.content).trim(),
          iterations: withTurn.dropped + withTurn.turns.length,
        },
        memory: withTurn as unknown as JsonValue,
      };
    }
    const next = nextQueuedCall(withTurn, callsMade, available, undefined);
    if (next.decision) return { ...next.decision, memory: next.mem as unknown as JsonValue };
    // Every call named an unknown tool or had arguments that could not be read: the errors go back to the model on
    // the next step.
    return {
      type: 'continue',
      note: 'every call of the model was rejected (an unknown tool or unreadable arguments)',
      memory: next.mem as unknown as JsonValue,
    };
  }

  return { decide };
}
