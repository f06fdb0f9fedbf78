/**
 * `ModelPool`: one `ChatModel` over several servers of the same models (Ollama or OpenAI-compatible alike), each with
 * its own concurrency. A conversation's calls stay on the server whose prompt cache holds it (cache affinity) while
 * that server is healthy and its wait is short; new conversations go to the least-loaded server; waiting calls are
 * served round-robin across conversations, so a chatty task cannot starve the others. Servers are probed; one that
 * fails is taken out with growing backoff and put back when it answers, and a call cut by a failing server is sent
 * once more to another.
 */
import type { ChatDelta, ChatModel, ChatRequest, ChatResponse } from './chat-model.js';
import type { ModelLogger } from './call.js';
import type { CheckModelsOptions, ModelCheckResult, ModelInventory } from './model-check.js';
import { isModelError, ModelError, type ModelErrorCode } from './model-error.js';

/** One server of a pool. */
export interface PoolServer {
  /** Unique name, shown in metrics and the step log; the server's base URL is the natural one. */
  name: string;
  /** The adapter that talks to it. With `checkModels` (both shipped adapters) it can be probed. */
  model: ChatModel & Partial<ModelInventory>;
  /** Calls sent to it at once (default 1): what its GPU serves in parallel. */
  concurrency?: number;
}

/** How the pool picks a server for a conversation's first call (and for any call when `affinity` is off). */
export type PoolPlacement = 'least-loaded' | 'round-robin';

/** Options of {@link ModelPool}. */
export interface ModelPoolOptions {
  servers: readonly PoolServer[];
  /**
   * Longest a call waits for the server that served its conversation before it goes to another one (ms, default
   * 2 000). A call also goes elsewhere at once when that server's expected wait is longer than this. `0`: never wait.
   */
  affinityWaitMs?: number;
  /** Keep conversations on their server at all (default true; off only to compare, as the bench does). */
  affinity?: boolean;
  /** Where calls without a warm server go (default `least-loaded`; `round-robin` is the bench's baseline). */
  placement?: PoolPlacement;
  /** Models a server must list to be healthy (checked by probes through `checkModels`; default none). */
  models?: readonly string[];
  /** Period of health probes of servers that are up (ms, default 15 000; `0` = only when one fails). */
  probeIntervalMs?: number;
  /** First wait before probing a server that failed (ms, default 1 000); doubles per failed probe. */
  probeBackoffMs?: number;
  /** Longest wait between probes of a failed server (ms, default 60 000). */
  maxProbeBackoffMs?: number;
  /** Deadline of one probe (ms, default 3 000). */
  probeTimeoutMs?: number;
  /** Conversations whose server is remembered, least recently used forgotten (default 10 000). */
  maxAffinityKeys?: number;
  logger?: ModelLogger;
  /** Clock in epoch ms (default `Date.now`). */
  now?: () => number;
}

/** Health of a pool server: `up` takes calls; `down` failed and waits for a probe to answer. */
export type PoolServerState = 'up' | 'down';

/** What a pool server did so far and does now, for `/metrics`, `ccagent models` and the dashboard. */
export interface PoolServerSnapshot {
  name: string;
  provider: string;
  state: PoolServerState;
  concurrency: number;
  inFlight: number;
  /** Calls waiting in the pool for this server (their conversation's server). */
  queued: number;
  /** Calls started on it. */
  calls: number;
  /** Calls that failed on it (any error but the caller's abort). */
  failures: number;
  /** Calls that failed here and were sent to another server. */
  failovers: number;
  /** Queue wait of the calls started on it, summed and the longest (ms). */
  waitMsTotal: number;
  waitMsMax: number;
  /** Calls of a known conversation that ran here because it served the previous call / that had to move. */
  affinityHits: number;
  affinityMisses: number;
  /** `affinityHits / (hits + misses)`, or `undefined` before any such call. */
  affinityHitRate: number | undefined;
  /** The last failure (call or probe). */
  lastError?: { code: string; message: string; at: number };
  /** When a down server is probed next (epoch ms). */
  nextProbeAt?: number;
}

/** The whole pool at one moment. */
export interface PoolSnapshot {
  servers: PoolServerSnapshot[];
  /** Calls waiting in the pool. */
  queued: number;
}

/** Failures after which a server is taken out: it cannot serve (reachable, healthy, with the model) right now. */
const TAKES_SERVER_OUT: ReadonlySet<ModelErrorCode> = new Set([
  'connection',
  'server',
  'stream_interrupted',
  'model_stalled',
  'model_not_found',
]);
/** Failures worth one more attempt on another server. */
const FAILS_OVER: ReadonlySet<ModelErrorCode> = new Set([...TAKES_SERVER_OUT, 'rate_limited']);

interface Member {
  readonly index: number;
  readonly name: string;
  readonly model: ChatModel & Partial<ModelInventory>;
  readonly concurrency: number;
  state: PoolServerState;
  inFlight: number;
  /** Queued calls whose conversation prefers this server. */
  waitingAffine: number;
  calls: number;
  failures: number;
  failovers: number;
  waitMsTotal: number;
  waitMsMax: number;
  affinityHits: number;
  affinityMisses: number;
  /** Moving average of how long a call holds a slot (ms), for the expected wait. */
  serviceMs: number;
  lastError?: { code: string; message: string; at: number };
  backoffMs: number;
  nextProbeAt?: number;
  probeTimer?: ReturnType<typeof setTimeout>;
  probing: boolean;
}

interface Pending {
  key: string;
  request: ChatRequest;
  enqueuedAt: number;
  /** The conversation's server when the call arrived (affinity), if any. */
  affine: Member | undefined;
  /** Servers this call must not go to again (the one that failed it). */
  exclude: Set<Member>;
  attempt: number;
  resolve: (r: ChatResponse) => void;
  reject: (e: unknown) => void;
  onAbort?: () => void;
}

let anonymous = 0;

/**
 * A `ChatModel` (and `ModelInventory`) over several model servers. Long-lived: call {@link ModelPool.start} to probe
 * servers periodically and {@link ModelPool.close} when done (it stops the timers; calls in flight finish).
 */
export class ModelPool implements ChatModel, ModelInventory {
  readonly provider = 'pool';
  private readonly members: Member[];
  /** Waiting calls per conversation; iteration order is the round-robin order (a served key moves to the end). */
  private readonly queues = new Map<string, Pending[]>();
  private readonly affinity = new Map<string, Member>();
  private readonly affinityWaitMs: number;
  private readonly useAffinity: boolean;
  private readonly placement: PoolPlacement;
  private models: readonly string[];
  private readonly probeIntervalMs: number;
  private readonly probeBackoffMs: number;
  private readonly maxProbeBackoffMs: number;
  private readonly probeTimeoutMs: number;
  private readonly maxAffinityKeys: number;
  private readonly logger: ModelLogger | undefined;
  private readonly now: () => number;
  private rotation = 0;
  private wakeTimer: ReturnType<typeof setTimeout> | undefined;
  private wakeAt = Infinity;
  private intervalTimer: ReturnType<typeof setInterval> | undefined;
  private closed = false;

  /** Throws a `TypeError` for no servers, a repeated name or a concurrency that is not a positive integer. */
  constructor(options: ModelPoolOptions) {
    if (options.servers.length === 0) throw new TypeError('ModelPool: at least one server is needed');
    const names = new Set<string>();
    this.members = options.servers.map((s, index) => {
      const concurrency = s.concurrency ?? 1;
      if (!Number.isInteger(concurrency) || concurrency < 1) {
        throw new TypeError(`ModelPool: server ${s.name}: concurrency must be a positive integer`);
      }
      if (names.has(s.name)) throw new TypeError(`ModelPool: server ${s.name} is listed twice`);
      names.add(s.name);
      return {
        index,
        name: s.name,
        model: s.model,
        concurrency,
        state: 'up',
        inFlight: 0,
        waitingAffine: 0,
        calls: 0,
        failures: 0,
        failovers: 0,
        waitMsTotal: 0,
        waitMsMax: 0,
        affinityHits: 0,
        affinityMisses: 0,
        serviceMs: 0,
        backoffMs: 0,
        probing: false,
      };
    });
    this.affinityWaitMs = Math.max(0, options.affinityWaitMs ?? 2_000);
    this.useAffinity = options.affinity ?? true;
    this.placement = options.placement ?? 'least-loaded';
    this.models = [...(options.models ?? [])];
    this.probeIntervalMs = Math.max(0, options.probeIntervalMs ?? 15_000);
    this.probeBackoffMs = Math.max(1, options.probeBackoffMs ?? 1_000);
    this.maxProbeBackoffMs = Math.max(this.probeBackoffMs, options.maxProbeBackoffMs ?? 60_000);
    this.probeTimeoutMs = Math.max(1, options.probeTimeoutMs ?? 3_000);
    this.maxAffinityKeys = Math.max(1, options.maxAffinityKeys ?? 10_000);
    this.logger = options.logger;
    this.now = options.now ?? Date.now;
  }

  /** Probe every server now and then every `probeIntervalMs`. Resolves after the first round. */
  async start(): Promise<void> {
    if (this.probeIntervalMs > 0 && this.intervalTimer === undefined && !this.closed) {
      this.intervalTimer = setInterval(() => {
        for (const m of this.members) if (m.state === 'up') void this.probeMember(m);
      }, this.probeIntervalMs);
      (this.intervalTimer as { unref?: () => void }).unref?.();
    }
    await this.probe();
  }

  /** Stop probing (calls in flight and queued still finish). */
  close(): void {
    this.closed = true;
    if (this.intervalTimer !== undefined) clearInterval(this.intervalTimer);
    this.intervalTimer = undefined;
    if (this.wakeTimer !== undefined) clearTimeout(this.wakeTimer);
    for (const m of this.members) {
      if (m.probeTimer !== undefined) clearTimeout(m.probeTimer);
      m.probeTimer = undefined;
    }
  }

  /** Models a server must list to be healthy, from the next probe on. */
  setModels(names: readonly string[]): void {
    this.models = [...names];
  }

  /** Probe every server once now (a down server that answers is put back). */
  async probe(): Promise<void> {
    await Promise.all(this.members.map((m) => this.probeMember(m)));
  }

  /** The pool's state and figures per server. */
  snapshot(): PoolSnapshot {
    let queued = 0;
    for (const q of this.queues.values()) queued += q.length;
    return {
      queued,
      servers: this.members.map((m) => {
        const known = m.affinityHits + m.affinityMisses;
        const s: PoolServerSnapshot = {
          name: m.name,
          provider: m.model.provider,
          state: m.state,
          concurrency: m.concurrency,
          inFlight: m.inFlight,
          queued: m.waitingAffine,
          calls: m.calls,
          failures: m.failures,
          failovers: m.failovers,
          waitMsTotal: m.waitMsTotal,
          waitMsMax: m.waitMsMax,
          affinityHits: m.affinityHits,
          affinityMisses: m.affinityMisses,
          affinityHitRate: known === 0 ? undefined : m.affinityHits / known,
        };
        if (m.lastError !== undefined) s.lastError = { ...m.lastError };
        if (m.state === 'down' && m.nextProbeAt !== undefined) s.nextProbeAt = m.nextProbeAt;
        return s;
      }),
    };
  }

  /**
   * Queues the call and runs it on a server (see the class comment). Resolves with the reply and the `server` that
   * gave it; a failure of a server that failed over is reported through `request.onFailover` first.
   */
  chat(request: ChatRequest): Promise<ChatResponse> {
    if (request.signal?.aborted) return Promise.reject(this.abortError(request));
    return new Promise<ChatResponse>((resolve, reject) => {
      const key = request.affinityKey ?? `\u0000anonymous-${(anonymous += 1)}`;
      const affine = this.useAffinity ? this.affinity.get(key) : undefined;
      const pending: Pending = {
        key,
        request,
        enqueuedAt: this.now(),
        affine,
        exclude: new Set(),
        attempt: 1,
        resolve,
        reject,
      };
      const signal = request.signal;
      if (signal) {
        pending.onAbort = () => {
          if (this.dequeue(pending)) reject(this.abortError(request));
        };
        signal.addEventListener('abort', pending.onAbort, { once: true });
      }
      this.enqueue(pending, false);
      this.dispatch();
    });
  }

  /**
   * Which models the servers have: the union of what every reachable server lists (a model is present when one
   * server has it). `{ ok: false }` only when no server could be asked.
   */
  async checkModels(names: readonly string[], options: CheckModelsOptions = {}): Promise<ModelCheckResult> {
    const results = await Promise.all(
      this.members.map((m) =>
        m.model.checkModels
          ? m.model.checkModels(names, options)
          : Promise.resolve(undefined as ModelCheckResult | undefined),
      ),
    );
    const reports = results.filter(
      (r): r is Extract<ModelCheckResult, { ok: true }> => r !== undefined && r.ok,
    );
    if (reports.length === 0) {
      const failed = results.find((r): r is Extract<ModelCheckResult, { ok: false }> => r?.ok === false);
      return {
        ok: false,
        error:
          failed?.error ??
          new ModelError('connection', 'no server of the pool can list its models', { provider: 'pool' }),
      };
    }
    const available = [...new Set(reports.flatMap((r) => r.value.available))];
    const present = names.filter((n) => reports.some((r) => r.value.present.includes(n)));
    return {
      ok: true,
      value: {
        provider: 'pool',
        host: this.members.map((m) => m.name).join(', '),
        present,
        missing: names.filter((n) => !present.includes(n)),
        available,
      },
    };
  }

  private abortError(request: ChatRequest): ModelError {
    return new ModelError(
      'aborted',
      'model pool call was aborted by the caller while it waited for a server',
      {
        provider: this.provider,
        model: request.model,
        attempts: 0,
        cause: request.signal?.reason,
      },
    );
  }

  private enqueue(p: Pending, front: boolean): void {
    let q = this.queues.get(p.key);
    if (!q) {
      q = [];
      this.queues.set(p.key, q);
    }
    if (front) q.unshift(p);
    else q.push(p);
    if (p.affine) p.affine.waitingAffine += 1;
  }

  /** Removes a waiting call; false when it is not waiting (already running or done). */
  private dequeue(p: Pending): boolean {
    const q = this.queues.get(p.key);
    const i = q ? q.indexOf(p) : -1;
    if (!q || i < 0) return false;
    q.splice(i, 1);
    if (q.length === 0) this.queues.delete(p.key);
    if (p.affine) p.affine.waitingAffine -= 1;
    return true;
  }

  private free(m: Member): boolean {
    return m.inFlight < m.concurrency;
  }

  /** Starts waiting calls on free servers: one call per conversation per round, conversations in turn. */
  private dispatch(): void {
    const now = this.now();
    let nextWake = Infinity;
    let progress = true;
    while (progress && this.members.some((m) => this.free(m))) {
      progress = false;
      for (const [key, q] of [...this.queues]) {
        const p = q[0];
        if (!p) continue;
        const choice = this.choose(p, now);
        if (choice === undefined) continue;
        if (typeof choice === 'number') {
          nextWake = Math.min(nextWake, choice);
          continue;
        }
        q.shift();
        this.queues.delete(key);
        if (q.length > 0) this.queues.set(key, q); // served: to the back of the round
        if (p.affine) p.affine.waitingAffine -= 1;
        this.launch(p, choice, now);
        progress = true;
        if (!this.members.some((m) => this.free(m))) break;
      }
    }
    this.scheduleWake(nextWake);
  }

  /**
   * Where a waiting call goes now: a server, a time (epoch ms) to look again when it waits for its warm server, or
   * `undefined` when no suitable server is free.
   */
  private choose(p: Pending, now: number): Member | number | undefined {
    const usable = this.members.filter((m) => !p.exclude.has(m));
    if (usable.length === 0) return undefined;
    const up = usable.filter((m) => m.state === 'up');
    const warm = p.affine;
    if (warm && warm.state === 'up' && !p.exclude.has(warm)) {
      if (this.free(warm)) return warm;
      const waited = now - p.enqueuedAt;
      const expected = ((warm.waitingAffine + warm.inFlight) / warm.concurrency) * warm.serviceMs;
      if (waited < this.affinityWaitMs && expected <= this.affinityWaitMs) {
        const other = this.place(up.filter((m) => m !== warm && this.free(m)));
        // Wait for the warm server only while another one would take the call: if none is free, just wait in line.
        return other === undefined ? undefined : p.enqueuedAt + this.affinityWaitMs;
      }
      return this.place(up.filter((m) => m !== warm && this.free(m)));
    }
    // No server is up: send the call to one that is down anyway, so it fails with the server's real error rather
    // than waiting for a probe that may never answer.
    const candidates = up.length > 0 ? up : usable;
    return this.place(candidates.filter((m) => this.free(m)));
  }

  private place(free: Member[]): Member | undefined {
    if (free.length === 0) return undefined;
    if (this.placement === 'round-robin') {
      const n = this.members.length;
      for (let i = 0; i < n; i += 1) {
        const m = this.members[(this.rotation + i) % n] as Member;
        if (free.includes(m)) {
          this.rotation = (m.index + 1) % n;
          return m;
        }
      }
      return undefined;
    }
    let best = free[0] as Member;
    for (const m of free) {
      const load = (m.inFlight + m.waitingAffine) / m.concurrency;
      const bestLoad = (best.inFlight + best.waitingAffine) / best.concurrency;
      if (load < bestLoad || (load === bestLoad && m.concurrency > best.concurrency)) best = m;
    }
    return best;
  }

  private scheduleWake(at: number): void {
    if (at === Infinity || this.closed) return;
    if (this.wakeTimer !== undefined && this.wakeAt <= at) return;
    if (this.wakeTimer !== undefined) clearTimeout(this.wakeTimer);
    this.wakeAt = at;
    this.wakeTimer = setTimeout(
      () => {
        this.wakeTimer = undefined;
        this.wakeAt = Infinity;
        this.dispatch();
      },
      Math.max(0, at - this.now()),
    );
  }

  private launch(p: Pending, m: Member, now: number): void {
    const wait = now - p.enqueuedAt;
    m.inFlight += 1;
    m.calls += 1;
    m.waitMsTotal += wait;
    m.waitMsMax = Math.max(m.waitMsMax, wait);
    if (p.attempt === 1 && p.affine) {
      if (p.affine === m) m.affinityHits += 1;
      else p.affine.affinityMisses += 1;
    }
    void this.run(p, m, now);
  }

  private async run(p: Pending, m: Member, startedAt: number): Promise<void> {
    const request = p.request;
    let emitted = false;
    const onDelta = request.onDelta;
    const attempt: ChatRequest = { ...request };
    delete attempt.affinityKey;
    delete attempt.onFailover;
    if (onDelta) {
      attempt.onDelta = (d: ChatDelta) => {
        emitted = true;
        onDelta(d);
      };
    }
    try {
      const response = await m.model.chat(attempt);
      this.settle(m, startedAt);
      this.remember(p.key, m);
      this.release(p);
      p.resolve({ ...response, server: m.name, ...(p.attempt > 1 ? { attempt: p.attempt } : {}) });
    } catch (error) {
      this.settle(m, startedAt);
      if (request.signal?.aborted) {
        this.release(p);
        p.reject(error);
        return;
      }
      m.failures += 1;
      const code = isModelError(error) ? error.code : undefined;
      const message = error instanceof Error ? error.message : String(error);
      m.lastError = { code: code ?? 'unknown', message, at: this.now() };
      if (code !== undefined && TAKES_SERVER_OUT.has(code)) this.takeOut(m);
      const another = this.members.some((o) => o !== m && !p.exclude.has(o));
      if (code === undefined || !FAILS_OVER.has(code) || p.attempt > 1 || !another) {
        this.release(p);
        p.reject(error);
        return;
      }
      m.failovers += 1;
      this.logger?.warn(
        { server: m.name, model: request.model, code, err: message, key: request.affinityKey },
        'model pool: call failed on a server; sending it to another',
      );
      try {
        await request.onFailover?.({
          server: m.name,
          error: { code, message },
          startedAt,
          durationMs: this.now() - startedAt,
          emitted,
        });
      } catch (recordFailure) {
        this.release(p);
        p.reject(recordFailure);
        return;
      }
      if (request.signal?.aborted) {
        this.release(p);
        p.reject(this.abortError(request));
        return;
      }
      p.attempt += 1;
      p.exclude.add(m);
      p.affine = undefined;
      p.enqueuedAt = this.now();
      this.enqueue(p, true);
    } finally {
      this.dispatch();
    }
  }

  /** The attempt is over: its slot is free and its duration feeds the service-time average. */
  private settle(m: Member, startedAt: number): void {
    m.inFlight -= 1;
    const took = this.now() - startedAt;
    m.serviceMs = m.serviceMs === 0 ? took : m.serviceMs * 0.8 + took * 0.2;
  }

  private release(p: Pending): void {
    if (p.onAbort) p.request.signal?.removeEventListener('abort', p.onAbort);
  }

  private remember(key: string, m: Member): void {
    if (!this.useAffinity) return;
    this.affinity.delete(key);
    this.affinity.set(key, m);
    if (this.affinity.size > this.maxAffinityKeys) {
      const oldest = this.affinity.keys().next().value;
      if (oldest !== undefined) this.affinity.delete(oldest);
    }
  }

  /** Takes a server out of rotation and schedules its next probe with a growing backoff. */
  private takeOut(m: Member): void {
    const wasUp = m.state === 'up';
    m.state = 'down';
    m.backoffMs = m.backoffMs === 0 ? this.probeBackoffMs : Math.min(this.maxProbeBackoffMs, m.backoffMs * 2);
    if (wasUp) {
      this.logger?.warn({ server: m.name, retry_in_ms: m.backoffMs }, 'model pool: server taken out');
    }
    this.scheduleProbe(m);
  }

  private scheduleProbe(m: Member): void {
    if (this.closed) return;
    if (m.probeTimer !== undefined) clearTimeout(m.probeTimer);
    m.nextProbeAt = this.now() + m.backoffMs;
    m.probeTimer = setTimeout(() => {
      m.probeTimer = undefined;
      void this.probeMember(m);
    }, m.backoffMs);
    (m.probeTimer as { unref?: () => void }).unref?.();
  }

  /** Asks one server whether it answers and has the pool's models; puts it in or out accordingly. */
  private async probeMember(m: Member): Promise<void> {
    if (m.probing) return;
    m.probing = true;
    let healthy: boolean;
    let failure: { code: string; message: string } | undefined;
    try {
      if (!m.model.checkModels) {
        healthy = true; // cannot be asked: after its backoff it gets calls again, and the next failure takes it out
      } else {
        const r = await m.model.checkModels(this.models, { timeoutMs: this.probeTimeoutMs });
        if (!r.ok) failure = { code: r.error.code, message: r.error.message };
        else if (r.value.missing.length > 0) {
          failure = {
            code: 'model_not_found',
            message: `${m.name} does not have ${r.value.missing.join(', ')}`,
          };
        }
        healthy = failure === undefined;
      }
    } catch (error) {
      healthy = false;
      failure = { code: 'connection', message: error instanceof Error ? error.message : String(error) };
    } finally {
      m.probing = false;
    }
    if (healthy) {
      if (m.state === 'down')
        this.logger?.warn({ server: m.name }, 'model pool: server answers again; back in');
      m.state = 'up';
      m.backoffMs = 0;
      delete m.nextProbeAt;
      if (m.probeTimer !== undefined) clearTimeout(m.probeTimer);
      m.probeTimer = undefined;
      this.dispatch();
    } else if (failure) {
      m.lastError = { ...failure, at: this.now() };
      this.takeOut(m);
    }
  }
}
