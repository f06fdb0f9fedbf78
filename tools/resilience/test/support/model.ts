/**
 * Deterministic model scripts for the fake Ollama server: the reply is a pure function of the conversation, so a
 * step the orchestrator repeats after a crash gets the same answer — which is what lets a test tell a legitimate
 * repeat from a duplicated command.
 */
import type { FakeChatRequest, FakeReply } from '@ccagent/testkit';

/** The model name every suite configures. */
export const MODEL = 'qwen3:8b';

/** Prompt of a scripted job: `steps` tool calls with markers `/<tag>/<n>`, then a final answer. */
export function jobPrompt(tag: string, steps: number): string {
  return `job tag=${tag} steps=${steps}`;
}

interface ChatMessage {
  role?: string;
  content?: string;
}

/** The job parameters and the number of tool results in the conversation. */
export function readJob(req: FakeChatRequest): { tag: string; steps: number; done: number } | undefined {
  const messages = (req.body.messages ?? []) as ChatMessage[];
  let tag: string | undefined;
  let steps = 0;
  for (const m of messages) {
    const hit = /job tag=(\S+) steps=(\d+)/.exec(m.content ?? '');
    if (hit?.[1] && hit[2]) {
      tag = hit[1];
      steps = Number(hit[2]);
    }
  }
  if (tag === undefined) return undefined;
  return { tag, steps, done: messages.filter((m) => m.role === 'tool').length };
}

/** Options of {@link jobScript}. */
export interface JobScriptOptions {
  /** Delay before each reply (ms), e.g. random, so crashes land mid-call; the reply itself stays deterministic. */
  latencyMs?: () => number;
}

/**
 * Native-tool script: call `fs_write` with path `/<tag>/<n>` for n = 0..steps-1 (one call per model reply), then
 * answer `finished <tag>`.
 */
export function jobScript(opts: JobScriptOptions = {}): (req: FakeChatRequest) => FakeReply {
  return (req) => {
    const job = readJob(req);
    const latency = opts.latencyMs?.() ?? 0;
    const fault = latency > 0 ? { fault: { latencyMs: latency } } : {};
    if (!job) return { content: 'no job in the prompt', ...fault };
    if (job.done >= job.steps) return { content: `finished ${job.tag}`, ...fault };
    return {
      toolCalls: [
        { name: 'fs_write', arguments: { path: `/${job.tag}/${job.done}`, content: `step ${job.done}` } },
      ],
      ...fault,
    };
  };
}
