/**
 * The mod side of the protocol, game-independent: connect, register, reconnect 5 s after a loss, run one action at a
 * time through an {@link ActionRunner}, never run an action id twice (a repeat gets the earlier outcome again), and
 * send state updates. The mineflayer bridge and the tests' scripted mods are this client with different runners.
 */
import { systemClock, type Clock, type Logger, type TimerHandle } from '@ccagent/engine';
import WebSocket from 'ws';
import { MC_PROTOCOL_VERSION, RECONNECT_DELAY_MS } from '../protocol/constants.js';
import type { Action, ModMessage, PlayerState } from '../protocol/messages.js';
import { parseBackendMessage } from '../protocol/parse.js';

/** What an action ended with on the mod side. */
export type RunOutcome = { ok: true; result?: unknown } | { ok: false; error: string };

/** Runs actions in the game. `signal` aborts on `stop`. */
export interface ActionRunner {
  run(action: Action, signal: AbortSignal): Promise<RunOutcome>;
  /** The player's state now, or null when not known yet. */
  state(): PlayerState | null;
}

/** Options of {@link ModClient}. */
export interface ModClientOptions {
  /** Backend endpoint, e.g. `ws://localhost:9876`. */
  url: string;
  instanceId: string;
  /**
   * Credential for a backend that requires one, sent as `Authorization: Bearer <token>` on every connection (the
   * orchestrator's token, an operator key, or a key enrolled for this instance id). None by default.
   */
  token?: string;
  runner: ActionRunner;
  /** The game version sent in `register.version`, as the seed has it (default `unknown`). */
  version?: string;
  /** Protocol version sent in `register.protocolVersion` (default this package's). */
  protocolVersion?: string;
  /** What the mod calls itself (`register.name`). */
  name?: string;
  /** The mod's platform or loader (`register.platform`). */
  platform?: string;
  /** Delay before reconnecting, ms (default 5,000). */
  reconnectDelayMs?: number;
  /** Outcomes remembered to answer repeated ids (default 10,000). */
  rememberOutcomes?: number;
  clock?: Clock;
  logger?: Logger;
}

const NOOP: Logger = { debug() {}, info() {}, warn() {}, error() {} };

/** A mod connection that keeps itself connected until {@link ModClient.close}. */
export class ModClient {
  private ws: WebSocket | null = null;
  private closed = false;
  private reconnectTimer: TimerHandle | null = null;
  private readonly outcomes = new Map<string, RunOutcome>();
  private readonly running = new Map<string, AbortController>();
  private readonly clock: Clock;
  private readonly logger: Logger;
  private registeredWaiters: Array<() => void> = [];
  /** Action ids run (each at most once), in order. */
  readonly executed: string[] = [];
  /** Repeated ids answered from the remembered outcome (or ignored while still running). */
  readonly duplicatesDropped: string[] = [];
  /** Connections made (1 + reconnects). */
  connections = 0;
  /** `error` frames the backend sent. */
  readonly refusals: Array<{ code: string; message: string }> = [];

  constructor(private readonly opts: ModClientOptions) {
    this.clock = opts.clock ?? systemClock;
    this.logger = opts.logger ?? NOOP;
  }

  /** Connect (and keep reconnecting). Resolves after the first `registered {success: true}`. */
  start(): Promise<void> {
    const registered = new Promise<void>((resolve) => this.registeredWaiters.push(resolve));
    this.connect();
    return registered;
  }

  /** Send the current state now (call it when the game state changes; the backend keeps the latest). */
  sendState(): void {
    const state = this.opts.runner.state();
    if (state !== null) this.send({ type: 'state_update', instanceId: this.opts.instanceId, data: state });
  }

  /** Send a log line to the backend. */
  log(message: string): void {
    this.send({ type: 'log', instanceId: this.opts.instanceId, message: message.slice(0, 4096) });
  }

  /** True while connected and registered. */
  get connected(): boolean {
    return this.ws !== null && this.ws.readyState === WebSocket.OPEN;
  }

  /** Stop reconnecting, abort running actions and close the connection. */
  close(): void {
    this.closed = true;
    if (this.reconnectTimer !== null) this.clock.clearTimeout(this.reconnectTimer);
    for (const c of this.running.values()) c.abort();
    this.ws?.close();
  }

  private send(msg: ModMessage): void {
    if (this.ws !== null && this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(msg));
  }

  private connect(): void {
    if (this.closed) return;
    const ws = new WebSocket(
      this.opts.url,
      this.opts.token !== undefined ? { headers: { authorization: `Bearer ${this.opts.token}` } } : {},
    );
    this.ws = ws;
    ws.on('open', () => {
      this.connections++;
      ws.send(
        JSON.stringify({
          type: 'register',
          instanceId: this.opts.instanceId,
          version: this.opts.version ?? 'unknown',
          protocolVersion: this.opts.protocolVersion ?? MC_PROTOCOL_VERSION,
          ...(this.opts.name !== undefined ? { name: this.opts.name } : {}),
          ...(this.opts.platform !== undefined ? { platform: this.opts.platform } : {}),
        }),
      );
    });
    ws.on('message', (data) => this.onFrame(String(data)));
    ws.on('error', (e) => {
      // A refused upgrade ("Unexpected server response: 401") is a setting to fix, not a network blip.
      if (e.message.startsWith('Unexpected server response')) {
        this.logger.warn(
          { err: e.message, url: this.opts.url },
          'the backend refused the connection (401: it needs a token, see --token; 403: a web page origin or a viewer key)',
        );
      } else this.logger.debug({ err: e.message }, 'backend connection error');
    });
    ws.on('close', () => {
      if (this.ws === ws) this.ws = null;
      if (this.closed) return;
      this.reconnectTimer = this.clock.setTimeout(() => {
        this.reconnectTimer = null;
        this.connect();
      }, this.opts.reconnectDelayMs ?? RECONNECT_DELAY_MS);
    });
  }

  private onFrame(text: string): void {
    const parsed = parseBackendMessage(text);
    if (!parsed.ok) {
      this.logger.warn({ error: parsed.error }, 'bad frame from the backend');
      return;
    }
    const msg = parsed.value;
    switch (msg.type) {
      case 'registered':
        if (msg.success) {
          this.sendState();
          for (const w of this.registeredWaiters.splice(0)) w();
        }
        return;
      case 'error':
        this.refusals.push({ code: msg.code, message: msg.message });
        return;
      case 'stop':
        for (const c of this.running.values()) c.abort();
        return;
      case 'execute_action':
        this.onAction(msg.action);
        return;
    }
  }

  private onAction(action: Action): void {
    const earlier = this.outcomes.get(action.id);
    if (earlier !== undefined) {
      this.duplicatesDropped.push(action.id);
      this.logger.info(
        { action_id: action.id },
        'repeated action id: reporting the earlier outcome, not running it',
      );
      this.report(action.id, earlier);
      return;
    }
    if (this.running.has(action.id)) {
      // Still running: its outcome is reported when it ends (to whichever connection is open then).
      this.duplicatesDropped.push(action.id);
      this.logger.info({ action_id: action.id }, 'repeated action id still running: its outcome follows');
      return;
    }
    const ctl = new AbortController();
    this.running.set(action.id, ctl);
    this.executed.push(action.id);
    this.logger.info({ action_id: action.id, action_type: action.type }, 'running action');
    const done = (o: RunOutcome): void => {
      this.running.delete(action.id);
      this.outcomes.set(action.id, o);
      if (this.outcomes.size > (this.opts.rememberOutcomes ?? 10_000)) {
        const oldest = this.outcomes.keys().next().value;
        if (oldest !== undefined) this.outcomes.delete(oldest);
      }
      this.sendState();
      this.report(action.id, o);
    };
    this.opts.runner
      .run(action, ctl.signal)
      .then(done, (e: unknown) => done({ ok: false, error: e instanceof Error ? e.message : String(e) }));
  }

  private report(actionId: string, o: RunOutcome): void {
    const instanceId = this.opts.instanceId;
    this.send(
      o.ok
        ? { type: 'action_complete', instanceId, actionId, result: (o.result ?? null) as never }
        : { type: 'action_failed', instanceId, actionId, error: o.error },
    );
  }
}
