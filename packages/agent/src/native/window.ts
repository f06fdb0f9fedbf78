/**
 * Prepare the prompt: the conversation rebuilt from the history and the memory's turns — the task, each turn's
 * assistant message with its calls and their results, the messages and events from outside — as many of the most
 * recent turns as fit the budget, with a window start that moves in chunks so the server's prompt cache stays hot.
 */
import type { CommandDescriptor, HistoryEntry, Task } from '@ccagent/engine';
import type { ChatMessage, ToolDefinition } from '@ccagent/models';
import { resultForModel } from '../history-view.js';
import type { NativeMemory, NativeTurn } from './native-memory.js';

export function clip(text: string, max: number): string {
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
export type OutsideEntry = Extract<HistoryEntry, { type: 'message' | 'event' | 'resume' }>;

/**
 * The message, event and resume entries of the history from step `floor` on, oldest first. Read backwards from the
 * end (history steps never decrease), so a step costs what the memory's window holds, not the task's length.
 */
export function outsideEntries(history: readonly HistoryEntry[], floor: number): OutsideEntry[] {
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

/** How the conversation is bounded: the prompt budget in characters, and the window's step in turns. */
export interface WindowLimits {
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

/** The task's recent tool calls (oldest first) and their results, to show each turn's calls with their outcomes. */
interface CallResults {
  recent: HistoryEntry[];
  results: Map<string, HistoryEntry>;
  /** The task's tool call number of `recent[0]`. */
  base: number;
}

/**
 * The calls of the turns kept. A turn's k-th call that is not rejected is the (callsBefore + k)-th tool_call in the
 * history (this strategy is the task's only caller, and a model step runs only once every call of the last turn was
 * handed out). The task's tool call count is the number of tool_call entries, so the history is read from its end, as
 * far back as the first call of the oldest turn kept; every result comes after its call.
 */
function callResults(
  task: Task,
  history: readonly HistoryEntry[],
  turns: readonly NativeTurn[],
): CallResults {
  const callsMade = task.counters.toolCalls;
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
  return { recent, results, base };
}

/** A turn as messages: the assistant message with its calls, one `tool` message per call, the nudge after it. */
function turnMessages(turn: NativeTurn, calls: CallResults, maxResultChars: number): ChatMessage[] {
  const { recent, results, base } = calls;
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
      content: clip(JSON.stringify(body), maxResultChars),
    });
  }
  if (turn.nudge) out.push({ role: 'user', content: turn.nudge });
  return out;
}

/** The size of messages as the budget counts them (content, tool calls, a little per message). */
function sizeOf(messages: ChatMessage[]): number {
  let n = 0;
  for (const m of messages) {
    n += m.content.length + 16;
    if (m.toolCalls) n += JSON.stringify(m.toolCalls).length;
  }
  return n;
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
export function conversation(
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
  const calls = callResults(task, history, turns);
  const groupMessages = (j: number): ChatMessage[] => {
    const out = [
      ...(before.get(j) ?? []),
      ...turnMessages(turns[j] as NativeTurn, calls, limits.maxResultChars),
    ];
    if (j === turns.length - 1) out.push(...after);
    return out;
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
