/**
 * The native strategy's memory: the model's turns (version 2, version 1 read as 2), validated once per object and
 * never changed in place — a decision that changes it builds a new frozen memory registered as valid.
 */
import type { JsonValue } from '@ccagent/engine';
import { z } from 'zod';
import { MemoryValidationCache } from '../memory-cache.js';

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

export type NativeMemory = z.infer<typeof nativeMemorySchema>;
export type NativeTurn = z.infer<typeof turnSchema>;
export type NativeCall = z.infer<typeof callSchema>;

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
export const nativeMemories = new MemoryValidationCache<NativeMemory>(readMemory);

/** How many native memories have been validated with zod in this process (for tests). */
export function nativeMemoryValidations(): number {
  return nativeMemories.validations;
}

/** A new memory object built from validated data: frozen at the top and registered as valid. */
export function nextMemory(memory: NativeMemory): NativeMemory {
  Object.freeze(memory.turns);
  Object.freeze(memory);
  nativeMemories.remember(memory, memory);
  return memory;
}

/** `turn` with `calls` replaced (a new frozen turn object; the old one is left as it was). */
export function withCalls(turn: NativeTurn, calls: NativeCall[]): NativeTurn {
  for (const c of calls) Object.freeze(c);
  return Object.freeze({ ...turn, calls: Object.freeze(calls) as NativeCall[] });
}
