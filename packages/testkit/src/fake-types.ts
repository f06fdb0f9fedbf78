/**
 * Types of the scripted fake model server: what a test scripts (replies, faults) and what it can assert on
 * (recorded requests).
 */

import type { ModelCallFigures, ModelServerOptions } from './model-server.js';

/** A tool call the fake model "decides" to make. `id` is echoed when given (OpenAI wire always gets one). */
export interface FakeToolCall {
  id?: string;
  name: string;
  arguments?: Record<string, unknown>;
  /**
   * Arguments sent verbatim as a string instead of `arguments` — e.g. broken JSON as a small model behind vLLM or
   * llama.cpp produces it. (Real Ollama parses arguments itself; use this for OpenAI-compatible servers.)
   */
  rawArguments?: string;
}

/**
 * A fault injected into one reply (or, through `setFault`, into every request). Several may combine, e.g.
 * `latencyMs` + `dropAfterChunks`.
 */
export interface FakeFault {
  /** Wait this long before sending the response headers. */
  latencyMs?: number;
  /** Wait this long between streamed chunks (slow tokens). */
  tokenDelayMs?: number;
  /** Answer with this HTTP status and the API's error body instead of a reply. */
  status?: number;
  /** Error message for `status` / `errorAfterChunks` (a default is used otherwise). */
  message?: string;
  /** Destroy the socket as soon as the request arrived, before any response byte (connection reset). */
  resetBeforeResponse?: boolean;
  /** Streaming only: destroy the socket after this many chunks were written (connection dropped mid-stream). */
  dropAfterChunks?: number;
  /** Streaming only: write one line that is not valid JSON after this many chunks, then continue normally. */
  malformedAfterChunks?: number;
  /** Streaming only: end the response cleanly after this many chunks, without the final `done` chunk / `[DONE]`. */
  truncateAfterChunks?: number;
  /** Streaming only: after this many chunks, stop writing and hold the connection open (a hung model). */
  stallAfterChunks?: number;
  /** Streaming only: write the API's mid-stream error object after this many chunks, then end the response. */
  errorAfterChunks?: number;
}

/** Where and how often a server-wide fault (`setFault`) applies. */
export interface FaultOptions {
  /** How many matching requests it hits (default: all until cleared). */
  times?: number;
  /** Request paths it hits, e.g. `['/api/tags']` (default: the chat routes `/api/chat` and `/v1/chat/completions`). */
  paths?: readonly string[];
}

/** A scripted reply: plain text, or an object with text, thinking, tool calls, JSON output and faults. */
export type FakeReply = string | FakeReplyObject;

/** The object form of a scripted reply. */
export interface FakeReplyObject {
  content?: string;
  thinking?: string;
  toolCalls?: FakeToolCall[];
  /** Structured output: serialized with `JSON.stringify` into the message content (use with `format`). */
  json?: unknown;
  /** Ollama `done_reason` (default `'stop'`); mapped to OpenAI `finish_reason` (`tool_calls` when calls). */
  doneReason?: string;
  /**
   * Reported `prompt_eval_count` / `prompt_tokens` (default: the tokens of the whole rendered prompt — the real
   * tokenizer for Qwen-family model names, 4 characters a token otherwise).
   */
  promptEvalCount?: number;
  /** Reported `eval_count` / `completion_tokens` (default: the reply's tokens for Qwen models, else its streamed pieces). */
  evalCount?: number;
  /** Split content into pieces of this many characters when streaming (default: one word per piece). */
  chunkChars?: number;
  fault?: FakeFault;
}

/** The request a script function sees: which API was called and the parsed JSON body. */
export interface FakeChatRequest {
  api: 'ollama' | 'openai';
  model: string;
  stream: boolean;
  body: Record<string, unknown>;
}

/** A script for one model: a queue of replies consumed one per chat request, or a function of the request. */
export type FakeScript = readonly FakeReply[] | ((request: FakeChatRequest) => FakeReply);

/** Options of `script()`. */
export interface ScriptOptions {
  /** Cycle through the queue instead of failing when it is exhausted (handy for standalone runs). */
  repeat?: boolean;
}

/** What happened to a recorded request's response. */
export type RequestOutcome = 'pending' | 'finished' | 'client_closed' | 'dropped' | 'reset';

/** One request the fake received, for assertions. `body` is the parsed JSON body (or `undefined`). */
export interface RecordedRequest {
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
  /** Updated in place while the response progresses. `client_closed`: the client hung up before the end. */
  outcome: RequestOutcome;
  /** Chat requests that reached the model: what the modelled server did (cache reuse, load, modelled seconds). */
  modelCall?: ModelCallFigures;
}

/** Options of `startFakeOllama`. */
export interface FakeOllamaOptions {
  /** Port to listen on (default 0: an ephemeral port). Always binds 127.0.0.1 unless `host` is given. */
  port?: number;
  host?: string;
  /** Version reported by `/api/version` (default `'0.12.6'`). */
  version?: string;
  /** Extra model names listed by `/api/tags` as installed, without a script (chat to them fails clearly). */
  installed?: readonly string[];
  /** Clock for `created_at` / `created` fields (default: real time). */
  now?: () => Date;
  /**
   * Keep every request in `requests` for assertions (default `true`). `false` keeps none — `requests`,
   * `chatRequests()`, `waitForRequests()` and `waitForOutcome()` see nothing — so a fake that serves all night (the
   * `fake-ollama` binary, a soak benchmark) does not hold every prompt it was sent in memory.
   */
  recordRequests?: boolean;
  /**
   * The modelled server behind the API: parallel slots, loaded-model limit, default `num_ctx` and keep-alive,
   * whether it reports cached tokens, the GPU time model. Defaults are Ollama's.
   */
  server?: ModelServerOptions;
  /**
   * `'auto'`: the prompt is rendered as the server's chat template renders it (ChatML, as Ollama's Qwen2.5 template)
   * and Qwen-family model names are tokenized with the real Qwen vocabulary (loaded once per process, 1–2 s);
   * other names count 4 characters a token. `'estimate'` (default, fast): the messages' contents at 4 characters a
   * token, the counts this fake has always reported. The prompt cache is modelled either way.
   */
  tokenizer?: 'auto' | 'estimate';
  /**
   * Hold each chat reply for its modelled GPU seconds × this factor, in real time, before its first byte — its slot
   * stays busy meanwhile, as on a real GPU — so load, queueing and cache reuse show in wall time (benches: `0.02`
   * plays a 10 s call in 200 ms). Default 0: replies leave at once.
   */
  timeScale?: number;
}
