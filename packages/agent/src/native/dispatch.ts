/**
 * Execute: hand out the last turn's calls one per step (the engine runs each), answer unknown tools and the calls the
 * engine refused with an error the model sees on its next turn, and carry out the `wait` tool here (a durable sleep).
 */
import type { Decision, JsonValue } from '@ccagent/engine';
import type { ToolDefinition } from '@ccagent/models';
import type { NativeToolOptions } from './options.js';
import { nextMemory, withCalls, type NativeCall, type NativeMemory } from './native-memory.js';

/** The `wait` tool of long-lived tasks (see `NativeToolOptions.waitTool`). */
export const WAIT_TOOL: ToolDefinition = {
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
export function nextQueuedCall(
  opts: NativeToolOptions,
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
