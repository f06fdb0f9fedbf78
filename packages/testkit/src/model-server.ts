/**
 * What a model server keeps between requests, modelled on Ollama's scheduler and runner (and llama.cpp's server
 * slots): which models are loaded, with which load options, until when (keep-alive), and per parallel slot the
 * tokens its KV cache holds. A request evaluates only the tokens after the longest common prefix with the slot it
 * gets; at least one token is always evaluated so the model has logits to sample from.
 */
import { callSeconds, REFERENCE_GPU, type CallSeconds, type TimeModel } from './time-model.js';

/** Options of the modelled server (all optional; the defaults are Ollama's). */
export interface ModelServerOptions {
  /** Parallel slots per loaded model (`OLLAMA_NUM_PARALLEL`, llama.cpp `--parallel`; default 1). */
  numParallel?: number;
  /**
   * Ollama's `OLLAMA_MULTIUSER_CACHE`: a request whose prompt does not extend a slot's whole cache takes the least
   * recently used free slot (copying the shared prefix into it) instead of the slot with the longest common prefix,
   * so prompts that alternate keep their own slots. Default false, as in Ollama.
   */
  multiUserCache?: boolean;
  /** Models kept loaded at once before the least recently used idle one is unloaded (default 3). */
  maxLoadedModels?: number;
  /** `num_ctx` when a request sets none (default 4096, Ollama's `OLLAMA_CONTEXT_LENGTH` default). */
  defaultNumCtx?: number;
  /** `keep_alive` when a request sets none (default `'5m'`, `OLLAMA_KEEP_ALIVE`). */
  defaultKeepAlive?: string | number;
  /**
   * Also report how many prompt tokens came from the cache: `prompt_eval_cached_count` on `/api/chat` (recent Ollama
   * builds) and `usage.prompt_tokens_details.cached_tokens` on `/v1/chat/completions` (llama.cpp's server). Default
   * false: Ollama 0.12 sends neither, only `prompt_eval_count` = the whole prompt.
   */
  reportCachedTokens?: boolean;
  /** GPU speeds for the reported durations (default {@link REFERENCE_GPU}). */
  timeModel?: TimeModel;
}

/** Why a request found its model not loaded (or not loaded as it asked). */
export type LoadReason = 'cold' | 'expired' | 'options_changed' | 'evicted';

/** What the server did for one chat request: the figures a real server reports and the ones it keeps to itself. */
export interface ModelCallFigures {
  model: string;
  /** Tokens of the whole prompt (Ollama's `prompt_eval_count`, OpenAI's `usage.prompt_tokens`). */
  promptTokens: number;
  /** Tokens reused from the slot's cache. */
  cachedTokens: number;
  /** Tokens the GPU processed: `promptTokens − cachedTokens` (at least 1). */
  evaluatedTokens: number;
  outputTokens: number;
  /** The parallel slot used. */
  slot: number;
  /** Set when the model was (re)loaded for this request. */
  load?: LoadReason;
  /** The prompt did not fit `num_ctx` (the server would drop its oldest messages or truncate). */
  overflow: boolean;
  numCtx: number;
  /** Which tokenizer counted: `qwen` (real vocabulary) or `estimate` (4 characters a token). */
  tokenizer: string;
  seconds: CallSeconds;
}

/** Running totals per model, kept even when requests are not recorded. */
export interface ModelServerStats {
  requests: number;
  promptTokens: number;
  cachedTokens: number;
  evaluatedTokens: number;
  outputTokens: number;
  loads: number;
  /** Loads by reason (`cold` = first load). */
  loadReasons: Record<LoadReason, number>;
  seconds: number;
}

interface Slot {
  id: number;
  tokens: readonly number[];
  inUse: boolean;
  lastUsed: number;
}

interface Runner {
  model: string;
  loadKey: string;
  numCtx: number;
  slots: Slot[];
  busy: number;
  /** Epoch ms after which it is unloaded; Infinity for a negative keep-alive. */
  expiresAt: number;
  lastUsed: number;
  waiters: (() => void)[];
}

/** The load options that make Ollama start a new runner when they change (`api.Runner`). */
const LOAD_OPTIONS = ['num_ctx', 'num_batch', 'num_gpu', 'main_gpu', 'use_mmap', 'num_thread'] as const;

/**
 * Keep-alive as Ollama parses it: a duration string (`'5m'`, `'1h30m'`, `'300ms'`) or a number of seconds; negative
 * keeps the model loaded forever, zero unloads it when the request ends. Returns milliseconds; `undefined` if invalid.
 */
export function parseKeepAlive(value: unknown): number | undefined {
  if (typeof value === 'number' && Number.isFinite(value)) return value < 0 ? Infinity : value * 1000;
  if (typeof value !== 'string') return undefined;
  const s = value.trim();
  if (/^-?\d+(\.\d+)?$/.test(s)) return parseKeepAlive(Number(s));
  const unit: Record<string, number> = { h: 3600e3, m: 60e3, s: 1e3, ms: 1, us: 1e-3, µs: 1e-3, ns: 1e-6 };
  const negative = s.startsWith('-');
  const body = negative ? s.slice(1) : s;
  let ms = 0;
  let matched = '';
  for (const m of body.matchAll(/(\d+(?:\.\d+)?)(ms|us|µs|ns|h|m|s)/g)) {
    ms += Number(m[1]) * (unit[m[2] as string] ?? 0);
    matched += m[0];
  }
  if (matched !== body || body === '') return undefined;
  return negative ? Infinity : ms;
}

function commonPrefix(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i += 1;
  return i;
}

function emptyStats(): ModelServerStats {
  return {
    requests: 0,
    promptTokens: 0,
    cachedTokens: 0,
    evaluatedTokens: 0,
    outputTokens: 0,
    loads: 0,
    loadReasons: { cold: 0, expired: 0, options_changed: 0, evicted: 0 },
    seconds: 0,
  };
}

/** A request admitted to a slot: its figures, and `finish` to call once the reply is out (or abandoned). */
export interface AdmittedCall {
  figures: ModelCallFigures;
  /** Stores the slot's new tokens (prompt + reply when `completed`, the prompt alone otherwise) and frees it. */
  finish(completed: boolean): void;
}

/** The modelled server state. One per fake server; `now` is the fake's clock (epoch ms). */
export class ModelServer {
  private readonly runners = new Map<string, Runner>();
  private readonly everLoaded = new Set<string>();
  private readonly evicted = new Set<string>();
  private readonly stats = new Map<string, ModelServerStats>();
  private readonly numParallel: number;
  private readonly multiUser: boolean;
  private useSeq = 0;
  private readonly maxLoaded: number;
  private readonly defaultNumCtx: number;
  private readonly defaultKeepAliveMs: number;
  readonly reportCachedTokens: boolean;
  readonly timeModel: TimeModel;

  constructor(
    options: ModelServerOptions,
    private readonly now: () => number,
  ) {
    this.numParallel = Math.max(1, Math.floor(options.numParallel ?? 1));
    this.multiUser = options.multiUserCache === true;
    this.maxLoaded = Math.max(1, Math.floor(options.maxLoadedModels ?? 3));
    this.defaultNumCtx = options.defaultNumCtx ?? 4096;
    this.defaultKeepAliveMs = parseKeepAlive(options.defaultKeepAlive ?? '5m') ?? 300_000;
    this.reportCachedTokens = options.reportCachedTokens === true;
    this.timeModel = options.timeModel ?? REFERENCE_GPU;
  }

  /**
   * Admits one chat request for `model` (a normalized name): loads or reloads the model as Ollama would, waits for a
   * free slot, picks the free slot sharing the longest prefix with `prompt`, and returns the figures.
   */
  /** The context size a request with these `options` runs with (its `num_ctx`, else the server's default). */
  numCtxOf(options: Record<string, unknown> | undefined): number {
    const n = options?.['num_ctx'];
    return typeof n === 'number' ? n : this.defaultNumCtx;
  }

  async admit(call: {
    model: string;
    options: Record<string, unknown> | undefined;
    keepAlive: unknown;
    prompt: readonly number[];
    reply: readonly number[];
    tokenizer: string;
    signal?: AbortSignal;
  }): Promise<AdmittedCall> {
    const opts = call.options ?? {};
    const numCtx = typeof opts['num_ctx'] === 'number' ? opts['num_ctx'] : this.defaultNumCtx;
    const loadKey = JSON.stringify(LOAD_OPTIONS.map((k) => (k === 'num_ctx' ? numCtx : (opts[k] ?? null))));
    const now = this.now();
    this.expire(now);
    let runner = this.runners.get(call.model);
    let load: LoadReason | undefined;
    if (runner && runner.loadKey !== loadKey) {
      // Ollama waits for the runner's requests to finish, then starts a new one with the new options.
      while (runner.busy > 0) await this.waitForSlot(runner, call.signal);
      this.runners.delete(call.model);
      runner = undefined;
      load = 'options_changed';
    }
    if (!runner) {
      load ??= this.evicted.has(call.model)
        ? 'evicted'
        : this.everLoaded.has(call.model)
          ? 'expired'
          : 'cold';
      this.evicted.delete(call.model);
      this.makeRoom();
      runner = {
        model: call.model,
        loadKey,
        numCtx,
        slots: Array.from({ length: this.numParallel }, (_, id) => ({
          id,
          tokens: [],
          inUse: false,
          lastUsed: 0,
        })),
        busy: 0,
        expiresAt: Infinity,
        lastUsed: now,
        waiters: [],
      };
      this.runners.set(call.model, runner);
      this.everLoaded.add(call.model);
    }
    const r = runner;
    let slot = this.bestSlot(r, call.prompt);
    while (!slot) {
      await this.waitForSlot(r, call.signal);
      slot = this.bestSlot(r, call.prompt);
    }
    slot.inUse = true;
    // An order, not a time: the fake's clock may stand still in tests, Ollama's never does.
    slot.lastUsed = ++this.useSeq;
    r.busy += 1;
    r.lastUsed = this.now();
    r.expiresAt = Infinity;
    let cached = commonPrefix(slot.tokens, call.prompt);
    if (cached >= call.prompt.length) cached = Math.max(0, call.prompt.length - 1);
    const evaluated = call.prompt.length - cached;
    const seconds = callSeconds(this.timeModel, {
      promptTokens: call.prompt.length,
      evaluated,
      output: call.reply.length,
      loaded: load !== undefined,
    });
    const figures: ModelCallFigures = {
      model: call.model,
      promptTokens: call.prompt.length,
      cachedTokens: cached,
      evaluatedTokens: evaluated,
      outputTokens: call.reply.length,
      slot: slot.id,
      ...(load !== undefined ? { load } : {}),
      overflow: call.prompt.length + call.reply.length > numCtx,
      numCtx,
      tokenizer: call.tokenizer,
      seconds,
    };
    const s = this.statsOf(call.model);
    s.requests += 1;
    s.promptTokens += figures.promptTokens;
    s.cachedTokens += cached;
    s.evaluatedTokens += evaluated;
    s.outputTokens += figures.outputTokens;
    s.seconds += seconds.total;
    if (load !== undefined) {
      s.loads += 1;
      s.loadReasons[load] += 1;
    }
    const keepAliveMs = parseKeepAlive(call.keepAlive) ?? this.defaultKeepAliveMs;
    let done = false;
    const finish = (completed: boolean): void => {
      if (done) return;
      done = true;
      const kept = completed ? [...call.prompt, ...call.reply] : call.prompt;
      slot.tokens = kept.length > numCtx ? kept.slice(0, numCtx) : kept;
      slot.inUse = false;
      r.busy -= 1;
      r.lastUsed = this.now();
      if (r.busy === 0) r.expiresAt = r.lastUsed + keepAliveMs;
      if (r.busy === 0 && keepAliveMs === 0 && this.runners.get(r.model) === r) this.runners.delete(r.model);
      for (const wake of r.waiters.splice(0)) wake();
    };
    return { figures, finish };
  }

  /** Totals per model (normalized name), or summed over all models. */
  statsFor(model?: string): ModelServerStats {
    if (model !== undefined) return structuredClone(this.stats.get(model) ?? emptyStats());
    const total = emptyStats();
    for (const s of this.stats.values()) {
      total.requests += s.requests;
      total.promptTokens += s.promptTokens;
      total.cachedTokens += s.cachedTokens;
      total.evaluatedTokens += s.evaluatedTokens;
      total.outputTokens += s.outputTokens;
      total.loads += s.loads;
      total.seconds += s.seconds;
      for (const k of Object.keys(total.loadReasons) as LoadReason[])
        total.loadReasons[k] += s.loadReasons[k];
    }
    return total;
  }

  /** Models loaded now, with their context size and when they expire (as `/api/ps` lists them). */
  loaded(): { model: string; numCtx: number; expiresAt: number }[] {
    this.expire(this.now());
    return [...this.runners.values()].map((r) => ({
      model: r.model,
      numCtx: r.numCtx,
      expiresAt: r.expiresAt,
    }));
  }

  /** Forgets every model's totals (the loaded models and their caches stay). */
  resetStats(): void {
    this.stats.clear();
  }

  private statsOf(model: string): ModelServerStats {
    let s = this.stats.get(model);
    if (!s) {
      s = emptyStats();
      this.stats.set(model, s);
    }
    return s;
  }

  private expire(now: number): void {
    for (const [name, r] of this.runners) if (r.busy === 0 && r.expiresAt <= now) this.runners.delete(name);
  }

  private makeRoom(): void {
    while (this.runners.size >= this.maxLoaded) {
      const idle = [...this.runners.values()]
        .filter((r) => r.busy === 0)
        .sort((a, b) => a.lastUsed - b.lastUsed);
      const victim = idle[0];
      if (!victim) return; // every loaded model is busy: Ollama would queue; the fake lets the load proceed
      this.runners.delete(victim.model);
      this.evicted.add(victim.model);
    }
  }

  /**
   * The slot a request gets. Single-user (Ollama's default): the free slot sharing the longest prefix with the
   * prompt, first on a tie. Multi-user: that slot only if the prompt extends its whole cache, else the least recently
   * used free slot, seeded with the shared prefix.
   */
  private bestSlot(r: Runner, prompt: readonly number[]): Slot | undefined {
    let best: Slot | undefined;
    let longest = -1;
    for (const s of r.slots) {
      if (s.inUse && !this.multiUser) continue;
      const n = commonPrefix(s.tokens, prompt);
      if (n > longest) {
        longest = n;
        best = s;
      }
    }
    if (!this.multiUser || !best) return best;
    if (longest === best.tokens.length && !best.inUse) return best;
    let oldest: Slot | undefined;
    for (const s of r.slots) if (!s.inUse && (!oldest || s.lastUsed < oldest.lastUsed)) oldest = s;
    if (!oldest) return undefined;
    if (longest > 0 && oldest !== best) oldest.tokens = best.tokens.slice(0, longest);
    return oldest;
  }

  private waitForSlot(r: Runner, signal: AbortSignal | undefined): Promise<void> {
    if (signal?.aborted) return Promise.reject(new Error('fake-ollama: request abandoned while queued'));
    return new Promise((resolve) => {
      const wake = (): void => {
        signal?.removeEventListener('abort', wake);
        resolve();
      };
      r.waiters.push(wake);
      signal?.addEventListener('abort', wake, { once: true });
    });
  }
}
