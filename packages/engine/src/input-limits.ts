/**
 * The size rule of a new task's text: its prompt (UTF-8 bytes), its context's nesting and its size as JSON. Checked by
 * `Engine.createTask`, the one door every adapter's task goes through (HTTP, the ComputerCraft WebSocket, the
 * Minecraft agent, an embedding program), so no entry point can store what another refuses. The context is walked
 * without recursion: a context nested thousands deep must be refused, not overflow the stack.
 */
import { DEFAULT_INPUT_LIMITS } from '@ccagent/protocol';

/** Limits of a new task's prompt and context (defaults: `DEFAULT_INPUT_LIMITS` of `@ccagent/protocol`). */
export interface TaskInputLimits {
  /** Longest prompt, UTF-8 bytes. */
  maxPromptBytes: number;
  /** Largest context, UTF-8 bytes of its JSON text. */
  maxContextBytes: number;
  /** Deepest nesting of arrays/objects in the context (the context itself is depth 1). */
  maxDepth: number;
}

/** The defaults of {@link TaskInputLimits}. */
export const DEFAULT_TASK_INPUT_LIMITS: TaskInputLimits = {
  maxPromptBytes: DEFAULT_INPUT_LIMITS.maxPromptBytes,
  maxContextBytes: DEFAULT_INPUT_LIMITS.maxContextBytes,
  maxDepth: DEFAULT_INPUT_LIMITS.maxDepth,
};

/** Why a prompt or context is refused: the field and a message naming the limit; undefined when it fits. */
export function taskInputProblem(
  input: { prompt: string; context?: unknown },
  limits: TaskInputLimits,
): { field: 'prompt' | 'context'; message: string } | undefined {
  const promptBytes = Buffer.byteLength(input.prompt, 'utf8');
  if (promptBytes > limits.maxPromptBytes) {
    return {
      field: 'prompt',
      message: `prompt is ${promptBytes} bytes; the limit is ${limits.maxPromptBytes} (server.inputLimits.maxPromptBytes)`,
    };
  }
  if (input.context === undefined) return undefined;
  if (depthExceeds(input.context, limits.maxDepth)) {
    return {
      field: 'context',
      message: `context is nested deeper than ${limits.maxDepth} levels (server.inputLimits.maxDepth)`,
    };
  }
  const text = JSON.stringify(input.context) as string | undefined;
  const contextBytes = text === undefined ? 0 : Buffer.byteLength(text, 'utf8');
  if (contextBytes > limits.maxContextBytes) {
    return {
      field: 'context',
      message: `context is ${contextBytes} bytes of JSON; the limit is ${limits.maxContextBytes} (server.inputLimits.maxContextBytes)`,
    };
  }
  return undefined;
}

/** True when arrays/objects in `value` nest deeper than `max` (iterative; a cycle also counts as too deep). */
function depthExceeds(value: unknown, max: number): boolean {
  const stack: Array<{ v: unknown; depth: number }> = [{ v: value, depth: 1 }];
  let visited = 0;
  while (stack.length > 0) {
    const { v, depth } = stack.pop() as { v: unknown; depth: number };
    if (typeof v !== 'object' || v === null) continue;
    if (depth > max) return true;
    // A cyclic value never ends; it cannot be JSON either.
    if (++visited > 10_000_000) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (typeof child === 'object' && child !== null) stack.push({ v: child, depth: depth + 1 });
    }
  }
  return false;
}
