/**
 * The prompt text a model server builds from a chat request before it tokenizes it: the messages in ChatML, the way
 * Ollama's template for the Qwen2.5 family renders them (system block with the tool signatures, `tool` results as a
 * user turn in `<tool_response>` tags, the assistant's earlier tool calls in `<tool_call>` tags, and the open
 * `<|im_start|>assistant` turn at the end). Only the prefix behaviour matters for the cache model: appending
 * messages to a conversation leaves the text of the earlier ones unchanged, and anything that changes in the system
 * block (the tool list included) changes the prompt from its first tokens.
 */

/** Qwen2.5's default system message in Ollama's model file, used when the request has none and no tools. */
export const QWEN_DEFAULT_SYSTEM = 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.';

type Json = Record<string, unknown>;

function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

function toolCallsOf(m: Json): { name: string; args: string }[] {
  const calls = Array.isArray(m['tool_calls']) ? (m['tool_calls'] as unknown[]) : [];
  return calls.map((c) => {
    const fn = ((c as Json)?.['function'] ?? {}) as Json;
    const a = fn['arguments'];
    return { name: str(fn['name']), args: typeof a === 'string' ? a : JSON.stringify(a ?? {}) };
  });
}

/** How an assistant reply is written into the prompt of the next request (content, or its tool calls). */
export function renderAssistantReply(
  content: string,
  toolCalls: readonly { name: string; args: string }[],
): string {
  if (content !== '') return content;
  if (toolCalls.length === 0) return '';
  return `<tool_call>\n${toolCalls.map((c) => `{"name": "${c.name}", "arguments": ${c.args}}\n`).join('')}</tool_call>`;
}

/**
 * ChatML text of an Ollama `/api/chat` or OpenAI `/v1/chat/completions` body (`messages`, `tools`). Several system
 * messages are joined with a blank line, as Ollama collates them.
 */
export function renderChatPrompt(body: Json): string {
  const messages = (Array.isArray(body['messages']) ? body['messages'] : []) as Json[];
  const tools = (Array.isArray(body['tools']) ? body['tools'] : []) as Json[];
  const systems = messages.filter((m) => m['role'] === 'system').map((m) => str(m['content']));
  const rest = messages.filter((m) => m['role'] !== 'system');
  let out = '';
  const system = systems.length > 0 ? systems.join('\n\n') : tools.length > 0 ? '' : QWEN_DEFAULT_SYSTEM;
  if (system !== '' || tools.length > 0) {
    out += '<|im_start|>system\n' + system;
    if (tools.length > 0) {
      out +=
        '\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n' +
        'You are provided with function signatures within <tools></tools> XML tags:\n<tools>';
      for (const t of tools)
        out += `\n{"type": "function", "function": ${JSON.stringify(t['function'] ?? t)}}`;
      out +=
        '\n</tools>\n\nFor each function call, return a json object with function name and arguments within ' +
        '<tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>';
    }
    out += '<|im_end|>\n';
  }
  rest.forEach((m, i) => {
    const last = i === rest.length - 1;
    const role = m['role'];
    if (role === 'assistant') {
      out += '<|im_start|>assistant\n' + renderAssistantReply(str(m['content']), toolCallsOf(m));
      if (!last) out += '<|im_end|>\n';
    } else if (role === 'tool') {
      out += `<|im_start|>user\n<tool_response>\n${str(m['content'])}\n</tool_response><|im_end|>\n`;
    } else {
      out += `<|im_start|>user\n${str(m['content'])}<|im_end|>\n`;
    }
    if (role !== 'assistant' && last) out += '<|im_start|>assistant\n';
  });
  return out;
}
