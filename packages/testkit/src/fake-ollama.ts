/**
 * A scripted, wire-faithful fake of an Ollama server (and of its OpenAI-compatible `/v1/chat/completions`):
 * a real `node:http` server on 127.0.0.1 that answers with the exact payload shapes of the real APIs, replays
 * scripted replies per model, records every request and injects faults. It is a test double, not a model.
 *
 * Size (over 500 lines): one fake server answering both wire dialects (Ollama and OpenAI-compatible)
 * with shared scripting, recording and fault injection; the model of the server itself is model-server.ts.
 */
import { EventEmitter } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type {
  FakeChatRequest,
  FakeFault,
  FakeOllamaOptions,
  FakeReply,
  FakeReplyObject,
  FakeScript,
  FakeToolCall,
  FaultOptions,
  RecordedRequest,
  RequestOutcome,
  ScriptOptions,
} from './fake-types.js';
import {
  modelNotFoundMessage,
  ollamaChunk,
  ollamaError,
  ollamaFinalChunk,
  ollamaNonStream,
  ollamaShow,
  ollamaPsEntry,
  ollamaTagEntry,
  openaiChunk,
  openaiCompletion,
  openaiError,
  openaiFinishReason,
  openaiModel,
  openaiToolCalls,
  openaiUsage,
  type ReplyFigures,
} from './wire.js';
import { renderAssistantReply, renderChatPrompt } from './chat-prompt.js';
import { ModelServer, type ModelCallFigures, type ModelServerStats } from './model-server.js';
import { ESTIMATE_TOKENIZER, isQwenModel, loadQwenTokenizer, type Tokenizer } from './qwen-tokenizer.js';

/** A running fake server. Close it in `afterEach`/`afterAll`. */
export interface FakeOllama {
  /** Base URL, e.g. `http://127.0.0.1:40123` (no trailing slash). OpenAI-compatible base is `${url}/v1`. */
  readonly url: string;
  readonly port: number;
  /** Every request received, in order (including faulted ones). */
  readonly requests: RecordedRequest[];
  /** Script a model: a queue of replies (one per chat request) or a function of the request. Replaces any earlier script. */
  script(model: string, script: FakeScript, options?: ScriptOptions): void;
  /**
   * A fault applied to the next `times` requests (default: all) on top of the script; `null` clears it. It hits the
   * chat routes unless `paths` names others (e.g. `['/api/tags']`); there only `latencyMs`, `status` and
   * `resetBeforeResponse` apply.
   */
  setFault(fault: FakeFault | null, options?: number | FaultOptions): void;
  /** Chat requests (both APIs) received so far, for a model or all. */
  chatRequests(model?: string): RecordedRequest[];
  /** Resolves once at least `count` requests were received (bounded by `timeoutMs`, default 5 s; then rejects). */
  waitForRequests(count: number, timeoutMs?: number): Promise<RecordedRequest[]>;
  /** Resolves when the request at `index` is no longer pending (bounded by `timeoutMs`, default 5 s). */
  waitForOutcome(index: number, timeoutMs?: number): Promise<RequestOutcome>;
  /**
   * What the modelled server did so far, per model (normalized name) or summed: requests, prompt / cached /
   * evaluated / output tokens, loads and their reasons, modelled GPU seconds. Kept even with `recordRequests: false`.
   */
  modelStats(model?: string): ModelServerStats;
  /** Models loaded now (normalized names) with their `num_ctx` and expiry (epoch ms, `Infinity` = never). */
  loadedModels(): { model: string; numCtx: number; expiresAt: number }[];
  /** Stops listening, drops open connections and cancels pending timers. */
  close(): Promise<void>;
}

interface ScriptEntry {
  script: FakeScript;
  repeat: boolean;
  next: number;
}

/**
 * Name as Ollama resolves it: case-insensitive, the default registry and `library/` namespace dropped, a missing
 * tag meaning `:latest` (`Qwen2.5` → `qwen2.5:latest`).
 */
export function normalizeModelName(name: string): string {
  let n = name.trim().toLowerCase();
  if (n.startsWith('registry.ollama.ai/')) n = n.slice('registry.ollama.ai/'.length);
  if (n.startsWith('library/')) n = n.slice('library/'.length);
  const last = n.slice(n.lastIndexOf('/') + 1);
  return last.includes(':') ? n : `${n}:latest`;
}

const DEFAULT_VERSION = '0.12.6';
/** Tokens a truncated prompt keeps from its start (the runner's `num_keep`). */
const NUM_KEEP = 4;
/** The expiry Ollama reports for a model kept loaded forever (`keep_alive` < 0). */
const FAR_FUTURE = new Date('2318-08-18T00:00:00Z');

/** Starts the fake on 127.0.0.1 (ephemeral port by default). */
export async function startFakeOllama(options: FakeOllamaOptions = {}): Promise<FakeOllama> {
  const now = options.now ?? (() => new Date());
  const modelServer = new ModelServer(options.server ?? {}, () => now().getTime());
  /**
   * How a request's prompt becomes tokens. `auto`: the ChatML text a server renders, tokenized for real for Qwen
   * models; `estimate` (default): the messages' contents at 4 characters a token, the counts this fake always sent.
   */
  const promptTokenizer = async (
    model: string,
  ): Promise<{ tokenizer: Tokenizer; render: (body: Record<string, unknown>) => string }> => {
    if (options.tokenizer !== 'auto') return { tokenizer: ESTIMATE_TOKENIZER, render: messageContents };
    return {
      tokenizer: isQwenModel(model) ? await loadQwenTokenizer() : ESTIMATE_TOKENIZER,
      render: renderChatPrompt,
    };
  };
  const scripts = new Map<string, ScriptEntry>();
  const installed = new Set((options.installed ?? []).map(normalizeModelName));
  const requests: RecordedRequest[] = [];
  const keepRequests = options.recordRequests !== false;
  const sockets = new Set<Socket>();
  const lifetime = new AbortController();
  /**
   * One controller per request in flight, aborted by `close()` (a listener per request on `lifetime.signal` made Node
   * warn about a listener leak with more than 10 concurrent requests).
   */
  const inFlight = new Set<AbortController>();
  let globalFault: { fault: FakeFault; remaining: number; paths: Set<string> | null } | null = null;

  /** Consumes one use of the server-wide fault if it applies to `path`. */
  function takeFault(path: string, isChat: boolean): FakeFault {
    if (!globalFault || globalFault.remaining <= 0) return {};
    if (globalFault.paths ? !globalFault.paths.has(path) : !isChat) return {};
    const fault = { ...globalFault.fault };
    globalFault.remaining -= 1;
    if (globalFault.remaining <= 0) globalFault = null;
    return fault;
  }
  let completionSeq = 0;
  const outcomes = new EventEmitter();
  outcomes.setMaxListeners(0);

  function setOutcome(record: RecordedRequest, outcome: RequestOutcome): void {
    if (record.outcome !== 'pending') return;
    record.outcome = outcome;
    outcomes.emit('outcome');
  }

  const server: Server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent && !res.destroyed) {
        res.writeHead(500, { 'Content-Type': 'application/json; charset=utf-8' });
        res.end(JSON.stringify(ollamaError('fake-ollama: internal error')));
      } else {
        res.destroy();
      }
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  async function readBody(req: IncomingMessage): Promise<string> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  }

  function sendJson(res: ServerResponse, status: number, body: unknown): void {
    res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8' });
    res.end(JSON.stringify(body));
  }

  function wait(ms: number, signal: AbortSignal): Promise<void> {
    if (ms <= 0 || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        resolve();
      }
      signal.addEventListener('abort', done, { once: true });
    });
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    let body: unknown;
    let badJson = false;
    if (raw.length > 0) {
      try {
        body = JSON.parse(raw);
      } catch {
        badJson = true;
      }
    }
    const record: RecordedRequest = {
      method: req.method ?? 'GET',
      path,
      headers: { ...req.headers },
      body,
      outcome: 'pending',
    };
    if (keepRequests) {
      requests.push(record);
      outcomes.emit('request');
    }
    const conn = new AbortController();
    if (lifetime.signal.aborted) conn.abort();
    else inFlight.add(conn);
    res.on('close', () => {
      inFlight.delete(conn);
      setOutcome(record, res.writableFinished ? 'finished' : 'client_closed');
      conn.abort();
    });

    const route = `${record.method} ${path}`;
    const isChat = route === 'POST /api/chat' || route === 'POST /v1/chat/completions';
    const api: 'ollama' | 'openai' = path.startsWith('/v1/') ? 'openai' : 'ollama';
    const sendError = (status: number, message: string): void =>
      sendJson(res, status, api === 'openai' ? openaiError(status, message) : ollamaError(message));

    if (badJson) return sendError(400, 'invalid character in request body: not valid JSON');
    if (!isChat) {
      const fault = takeFault(path, false);
      if (fault.resetBeforeResponse) {
        setOutcome(record, 'reset');
        req.socket.destroy();
        return;
      }
      await wait(fault.latencyMs ?? 0, conn.signal);
      if (conn.signal.aborted) return;
      if (fault.status !== undefined) {
        return sendError(fault.status, fault.message ?? `fake-ollama: injected HTTP ${fault.status}`);
      }
    }
    if (route === 'GET /' || route === 'HEAD /') {
      res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end('Ollama is running (fake-ollama: a scripted test double)');
      return;
    }
    if (route === 'GET /api/version')
      return sendJson(res, 200, { version: options.version ?? DEFAULT_VERSION });
    if (route === 'GET /api/tags') {
      const at = now().toISOString();
      const names = new Set([...installed, ...scripts.keys()]);
      return sendJson(res, 200, { models: [...names].sort().map((n) => ollamaTagEntry(n, at)) });
    }
    if (route === 'GET /api/ps') {
      // What the modelled server has loaded, as Ollama lists it: never-expiring models (keep_alive < 0) show a
      // far-future expiry as Ollama's own does.
      return sendJson(res, 200, {
        models: modelServer
          .loaded()
          .map((m) =>
            ollamaPsEntry(
              m.model,
              Number.isFinite(m.expiresAt) ? new Date(m.expiresAt) : FAR_FUTURE,
              m.numCtx,
            ),
          ),
      });
    }
    if (route === 'GET /v1/models') {
      const created = Math.floor(now().getTime() / 1000);
      const names = new Set([...installed, ...scripts.keys()]);
      return sendJson(res, 200, {
        object: 'list',
        data: [...names].sort().map((n) => openaiModel(n, created)),
      });
    }
    if (route === 'POST /api/show') {
      const name = bodyString(body, 'model') ?? bodyString(body, 'name');
      if (name === undefined) return sendError(400, 'model is required');
      const key = normalizeModelName(name);
      if (!scripts.has(key) && !installed.has(key)) return sendError(404, modelNotFoundMessage(name));
      return sendJson(res, 200, ollamaShow(key));
    }
    if (!isChat) {
      res.writeHead(404, { 'Content-Type': 'text/plain' });
      res.end('404 page not found');
      return;
    }

    const model = bodyString(body, 'model');
    if (model === undefined) return sendError(400, 'model is required');
    const key = normalizeModelName(model);
    const entry = scripts.get(key);
    const chatReq: FakeChatRequest = {
      api,
      model,
      stream:
        api === 'ollama'
          ? (body as Record<string, unknown>)['stream'] !== false
          : (body as Record<string, unknown>)['stream'] === true,
      body: body as Record<string, unknown>,
    };

    // A server-wide fault applies first; a terminal one (status/reset) does not consume a scripted reply.
    let fault: FakeFault = takeFault(path, true);
    const terminal = (f: FakeFault): boolean => f.resetBeforeResponse === true || f.status !== undefined;
    let reply: FakeReplyObject | undefined;
    if (!terminal(fault)) {
      if (!entry) {
        await wait(fault.latencyMs ?? 0, conn.signal);
        if (installed.has(key))
          return sendError(400, `fake-ollama: model "${model}" is installed but has no script`);
        return sendError(404, modelNotFoundMessage(model));
      }
      const next = nextReply(entry, chatReq);
      if (next === undefined) {
        return sendError(
          400,
          `fake-ollama: the script for model "${model}" is exhausted (${entry.next} replies used)`,
        );
      }
      reply = limitReply(typeof next === 'string' ? { content: next } : next, replyLimit(api, chatReq.body));
      fault = { ...fault, ...reply.fault };
    }

    if (fault.resetBeforeResponse) {
      setOutcome(record, 'reset');
      req.socket.destroy();
      return;
    }
    await wait(fault.latencyMs ?? 0, conn.signal);
    if (conn.signal.aborted) return;
    if (fault.status !== undefined || reply === undefined) {
      const status = fault.status ?? 500;
      return sendError(status, fault.message ?? `fake-ollama: injected HTTP ${status}`);
    }

    const plan = planReply(reply);
    // The model server's part: load or reuse the model, find the slot whose cache shares the longest prefix, count.
    const { tokenizer, render } = await promptTokenizer(model);
    // A prompt longer than the context: Ollama refuses it when told not to truncate, else keeps its start and its
    // end (the system prompt and the latest text) and reports only what it kept in prompt_eval_count.
    let prompt = tokenizer.encode(render(chatReq.body));
    const numCtx = modelServer.numCtxOf(objectField(chatReq.body, 'options'));
    if (prompt.length > numCtx) {
      if (chatReq.body['truncate'] === false) {
        return sendError(400, 'the input length exceeds the context length');
      }
      const keep = Math.min(NUM_KEEP, numCtx);
      prompt = [...prompt.slice(0, keep), ...prompt.slice(prompt.length - (numCtx - keep))];
    }
    let admitted;
    try {
      admitted = await modelServer.admit({
        model: key,
        options: objectField(chatReq.body, 'options'),
        keepAlive: chatReq.body['keep_alive'],
        prompt,
        reply: tokenizer.encode(
          renderAssistantReply(
            plan.message.content,
            (plan.message.toolCalls ?? []).map((c) => ({
              name: c.name,
              args: c.rawArguments ?? JSON.stringify(c.arguments ?? {}),
            })),
          ),
        ),
        tokenizer: tokenizer.name,
        signal: conn.signal,
      });
    } catch {
      return; // the client hung up while the request waited for a slot
    }
    const { figures: call, finish } = admitted;
    record.modelCall = call;
    if (res.writableFinished || res.destroyed) finish(false);
    else res.on('close', () => finish(res.writableFinished));
    const hold = call.seconds.total * 1000 * (options.timeScale ?? 0);
    if (hold > 0) {
      await wait(hold, conn.signal);
      if (conn.signal.aborted) return;
    }
    plan.figures = replyFigures(reply, plan, call, tokenizer.exact, modelServer.reportCachedTokens);
    const created = now();
    if (api === 'ollama') {
      if (!chatReq.stream) {
        return sendJson(res, 200, ollamaNonStream(model, created.toISOString(), plan.message, plan.figures));
      }
      const lines = plan.pieces.map((p) => JSON.stringify(ollamaChunk(model, now().toISOString(), p)));
      lines.push(JSON.stringify(ollamaFinalChunk(model, now().toISOString(), plan.figures)));
      res.writeHead(200, { 'Content-Type': 'application/x-ndjson' });
      res.flushHeaders();
      await streamLines(res, record, conn.signal, lines, fault, {
        malformed: '{"model":"' + model + '","created_at":',
        error: JSON.stringify(
          ollamaError(fault.message ?? 'an error was encountered while running the model'),
        ),
        frame: (l) => `${l}\n`,
      });
      return;
    }

    completionSeq += 1;
    const id = `chatcmpl-${completionSeq}`;
    const createdSec = Math.floor(created.getTime() / 1000);
    if (!chatReq.stream) {
      return sendJson(res, 200, openaiCompletion(id, createdSec, model, plan.message, plan.figures));
    }
    const calls = plan.message.toolCalls ?? [];
    const events: string[] = [];
    const chunk = (delta: Record<string, unknown>, finish: string | null): void => {
      events.push(JSON.stringify(openaiChunk(id, createdSec, model, delta, finish)));
    };
    chunk({ role: 'assistant', content: '' }, null);
    for (const p of plan.pieces) {
      if (p.thinking !== undefined) chunk({ reasoning: p.thinking }, null);
      // Ollama's /v1 repeats the role in every delta (OpenAI's reference sends it in the first only).
      if (p.content !== undefined) chunk({ role: 'assistant', content: p.content }, null);
    }
    // Tool calls the way OpenAI streams them: id and name first, then the JSON arguments in several pieces.
    openaiToolCalls(calls, id).forEach((call, index) => {
      const fn = call['function'] as { name: string; arguments: string };
      chunk(
        {
          tool_calls: [
            { index, id: call['id'], type: 'function', function: { name: fn.name, arguments: '' } },
          ],
        },
        null,
      );
      for (const piece of splitEvery(fn.arguments, 7)) {
        chunk({ tool_calls: [{ index, function: { arguments: piece } }] }, null);
      }
    });
    chunk({ role: 'assistant', content: '' }, openaiFinishReason(plan.figures, calls.length > 0));
    const streamOptions = chatReq.body['stream_options'] as { include_usage?: unknown } | undefined;
    if (streamOptions?.include_usage === true) {
      events.push(JSON.stringify(openaiChunk(id, createdSec, model, {}, null, openaiUsage(plan.figures))));
    }
    events.push('[DONE]');
    res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
    res.flushHeaders();
    await streamLines(res, record, conn.signal, events, fault, {
      malformed: '{"id":"' + id + '","choices":[{',
      error: JSON.stringify(
        openaiError(500, fault.message ?? 'an error was encountered while running the model'),
      ),
      frame: (l) => `data: ${l}\n\n`,
    });
  }

  async function streamLines(
    res: ServerResponse,
    record: RecordedRequest,
    signal: AbortSignal,
    lines: string[],
    fault: FakeFault,
    how: { malformed: string; error: string; frame: (line: string) => string },
  ): Promise<void> {
    const write = (text: string): Promise<void> =>
      new Promise((resolve) => {
        res.write(text, () => resolve());
      });
    for (let i = 0; i < lines.length; i += 1) {
      if (signal.aborted) return;
      if (fault.dropAfterChunks === i) {
        setOutcome(record, 'dropped');
        res.socket?.destroy();
        return;
      }
      if (fault.malformedAfterChunks === i) await write(how.frame(how.malformed));
      if (fault.truncateAfterChunks === i) {
        res.end();
        return;
      }
      if (fault.stallAfterChunks === i) {
        // Hold the connection open without writing until the client gives up or the fake closes.
        await new Promise<void>((resolve) => {
          if (signal.aborted) resolve();
          else signal.addEventListener('abort', () => resolve(), { once: true });
        });
        return;
      }
      if (fault.errorAfterChunks === i) {
        await write(how.frame(how.error));
        res.end();
        return;
      }
      if (i > 0) await wait(fault.tokenDelayMs ?? 0, signal);
      if (signal.aborted) return;
      await write(how.frame(lines[i] ?? ''));
    }
    res.end();
  }

  function nextReply(entry: ScriptEntry, request: FakeChatRequest): FakeReply | undefined {
    if (typeof entry.script === 'function') return entry.script(request);
    const queue = entry.script;
    if (queue.length === 0) return undefined;
    if (entry.next >= queue.length) {
      if (!entry.repeat) return undefined;
      entry.next = 0;
    }
    const reply = queue[entry.next];
    entry.next += 1;
    return reply;
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;

  return {
    url: `http://${host}:${address.port}`,
    port: address.port,
    requests,
    script(model, script, scriptOptions = {}) {
      scripts.set(normalizeModelName(model), { script, repeat: scriptOptions.repeat === true, next: 0 });
    },
    setFault(fault, faultOptions) {
      const o: FaultOptions =
        typeof faultOptions === 'number' ? { times: faultOptions } : (faultOptions ?? {});
      globalFault =
        fault === null
          ? null
          : {
              fault,
              remaining: o.times ?? Number.POSITIVE_INFINITY,
              paths: o.paths ? new Set(o.paths) : null,
            };
    },
    chatRequests(model) {
      return requests.filter(
        (r) =>
          (r.path === '/api/chat' || r.path === '/v1/chat/completions') &&
          (model === undefined ||
            normalizeModelName(bodyString(r.body, 'model') ?? '') === normalizeModelName(model)),
      );
    },
    modelStats(model) {
      return modelServer.statsFor(model === undefined ? undefined : normalizeModelName(model));
    },
    loadedModels() {
      return modelServer.loaded();
    },
    waitForRequests(count, timeoutMs = 5000) {
      return new Promise<RecordedRequest[]>((resolve, reject) => {
        const onRequest = (): void => {
          if (requests.length < count) return;
          clearTimeout(timer);
          outcomes.off('request', onRequest);
          resolve(requests.slice());
        };
        const timer = setTimeout(() => {
          outcomes.off('request', onRequest);
          reject(
            new Error(`fake-ollama: ${requests.length} of ${count} expected requests after ${timeoutMs} ms`),
          );
        }, timeoutMs);
        outcomes.on('request', onRequest);
        onRequest();
      });
    },
    waitForOutcome(index, timeoutMs = 5000) {
      return new Promise<RequestOutcome>((resolve) => {
        const check = (): boolean => {
          const r = requests[index];
          if (r === undefined || r.outcome === 'pending') return false;
          finish(r.outcome);
          return true;
        };
        const finish = (outcome: RequestOutcome): void => {
          clearTimeout(timer);
          outcomes.off('outcome', onEvent);
          outcomes.off('request', onEvent);
          resolve(outcome);
        };
        const onEvent = (): void => void check();
        const timer = setTimeout(() => finish(requests[index]?.outcome ?? 'pending'), timeoutMs);
        outcomes.on('outcome', onEvent);
        outcomes.on('request', onEvent);
        check();
      });
    },
    async close() {
      lifetime.abort();
      for (const conn of [...inFlight]) conn.abort();
      inFlight.clear();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function bodyString(body: unknown, key: string): string | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const v = (body as Record<string, unknown>)[key];
  return typeof v === 'string' ? v : undefined;
}

function splitEvery(text: string, size: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

interface Piece {
  content?: string;
  thinking?: string;
  toolCalls?: readonly FakeToolCall[];
}

interface ReplyPlan {
  pieces: Piece[];
  message: { content: string; thinking?: string; toolCalls?: readonly FakeToolCall[] };
  figures: ReplyFigures;
}

function splitText(text: string, chunkChars: number | undefined): string[] {
  if (text === '') return [];
  if (chunkChars !== undefined && chunkChars > 0) return splitEvery(text, chunkChars);
  return text.match(/\s*\S+\s*|\s+/g) ?? [text];
}

/**
 * The reply length the request allows: Ollama's `options.num_predict`, OpenAI's `max_completion_tokens` or
 * `max_tokens`. `undefined` when unbounded (Ollama's `-1`, absent, or not a positive number).
 */
function replyLimit(api: 'ollama' | 'openai', body: Record<string, unknown>): number | undefined {
  const raw =
    api === 'ollama'
      ? objectField(body, 'options')?.['num_predict']
      : (body['max_completion_tokens'] ?? body['max_tokens']);
  return typeof raw === 'number' && Number.isInteger(raw) && raw > 0 ? raw : undefined;
}

/**
 * A reply cut at `limit` tokens the way a real server stops generating: the text (or the JSON's text) ends after
 * `limit` pieces (a piece counts as a token here) with `done_reason` `length`. A reply within the limit, or one of
 * tool calls, is unchanged.
 */
function limitReply(reply: FakeReplyObject, limit: number | undefined): FakeReplyObject {
  if (limit === undefined || (reply.toolCalls?.length ?? 0) > 0) return reply;
  const text = reply.json !== undefined ? JSON.stringify(reply.json) : (reply.content ?? '');
  const pieces = splitText(text, reply.chunkChars);
  if (pieces.length <= limit) return reply;
  const { json: _json, ...rest } = reply;
  return { ...rest, content: pieces.slice(0, limit).join(''), doneReason: 'length', evalCount: limit };
}

/** The messages' contents, concatenated: what the `estimate` tokenizer counts (as this fake always did). */
function messageContents(body: Record<string, unknown>): string {
  const messages = Array.isArray(body['messages']) ? (body['messages'] as unknown[]) : [];
  return messages
    .map((m) => {
      const c = typeof m === 'object' && m !== null ? (m as Record<string, unknown>)['content'] : undefined;
      return typeof c === 'string' ? c : '';
    })
    .join('');
}

function objectField(body: Record<string, unknown>, key: string): Record<string, unknown> | undefined {
  const v = body[key];
  return typeof v === 'object' && v !== null && !Array.isArray(v)
    ? (v as Record<string, unknown>)
    : undefined;
}

function planReply(reply: FakeReplyObject): ReplyPlan {
  const content = reply.json !== undefined ? JSON.stringify(reply.json) : (reply.content ?? '');
  const thinkingPieces = splitText(reply.thinking ?? '', reply.chunkChars).map((t) => ({ thinking: t }));
  const contentPieces = splitText(content, reply.chunkChars).map((c) => ({ content: c }));
  const pieces: Piece[] = [...thinkingPieces, ...contentPieces];
  if (reply.toolCalls && reply.toolCalls.length > 0) pieces.push({ toolCalls: reply.toolCalls });
  return {
    pieces,
    message: {
      content,
      ...(reply.thinking ? { thinking: reply.thinking } : {}),
      ...(reply.toolCalls && reply.toolCalls.length > 0 ? { toolCalls: reply.toolCalls } : {}),
    },
    figures: { doneReason: reply.doneReason ?? 'stop', promptEvalCount: 0, evalCount: 0 },
  };
}

/**
 * The figures the reply reports: the script's explicit counts win; otherwise the whole prompt's tokens (Ollama has
 * reported the full prompt in `prompt_eval_count` since 0.1.48, cached or not), the reply's tokens (real ones for
 * Qwen; one per streamed piece otherwise, as before) and durations from the time model, the prompt's covering only
 * the evaluated tokens.
 */
function replyFigures(
  reply: FakeReplyObject,
  plan: ReplyPlan,
  call: ModelCallFigures,
  exact: boolean,
  reportCached: boolean,
): ReplyFigures {
  const ns = (s: number): number => Math.max(1, Math.round(s * 1e9));
  const loadNs = call.load !== undefined ? ns(call.seconds.load) : 1_000_000;
  const promptEvalNs = ns(call.seconds.promptEval);
  const evalNs = ns(call.seconds.generation);
  const overhead = call.seconds.total - call.seconds.load - call.seconds.promptEval - call.seconds.generation;
  return {
    doneReason: reply.doneReason ?? 'stop',
    promptEvalCount: reply.promptEvalCount ?? call.promptTokens,
    evalCount: reply.evalCount ?? (exact ? Math.max(1, call.outputTokens) : Math.max(1, plan.pieces.length)),
    loadNs,
    promptEvalNs,
    evalNs,
    totalNs: loadNs + Math.round(overhead * 1e9) + promptEvalNs + evalNs,
    ...(reportCached ? { cachedCount: call.cachedTokens } : {}),
  };
}
