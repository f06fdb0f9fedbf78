/**
 * The backend side of the mod protocol: a WebSocket server mods connect to (the seed's `ws://localhost:9876`), the
 * registry of instances, their latest state (coalesced, latest wins), and the one-open-action-at-a-time dispatch with
 * stable action ids.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { systemClock, type Clock, type Logger, type TimerHandle } from '@ccagent/engine';
import type { WebSocket, WebSocketServer } from 'ws';
import { MinecraftError } from '../minecraft-error.js';
import {
  DEFAULT_MC_PORT,
  DEFAULT_MC_RATE_LIMIT,
  INSTANCE_KEEP_MS,
  MC_PROTOCOL_VERSION,
} from '../protocol/constants.js';
import type { Action, BackendMessage, ModMessage, PlayerState } from '../protocol/messages.js';
import { parseModMessage, type McFrameError } from '../protocol/parse.js';
import { createModServer, refuseBrowserUpgrades, type McTls, type McUpgradeCheck } from './mod-server.js';
import { stateChanges, type StateChange } from './state-history.js';
import { TokenBucket } from './token-bucket.js';

/** Options of {@link MinecraftEndpoint}. */
export interface MinecraftEndpointOptions {
  /** Interface to listen on (default `127.0.0.1`; `0.0.0.0` to accept mods from other machines). */
  host?: string;
  /** Port (default 9876, the seed's; 0 picks a free one). */
  port?: number;
  /** How long a disconnected instance is kept before it is declared dead, ms (default 30,000). */
  keepMs?: number;
  /** Closed action ids remembered per instance to refuse late reports with `action_closed` (default 1,000). */
  closedMemory?: number;
  /**
   * Who may connect: called for every WebSocket upgrade before anything else. Default {@link refuseBrowserUpgrades}
   * (no browser page, no foreign host name). A host with credentials passes its own check (the orchestrator: its
   * Host/Origin policy, then the bearer token or key).
   */
  authorize?: McUpgradeCheck;
  /**
   * A certificate and key (PEM): the endpoint is `wss://` (TLS) instead of `ws://`. The orchestrator passes its own
   * when it serves HTTPS.
   */
  tls?: McTls;
  /**
   * Frames one instance may send (kept across its reconnects; a connection not registered yet has its own): sustained
   * per second and burst, the CC endpoint's default 50/s, 200. A frame over it is dropped with an `error` frame
   * `rate_limited` (at most one a second); `maxRejected` refused with no frame to spare in between close the connection (4008).
   */
  rateLimit?: { messagesPerSecond: number; burst: number };
  /** Frames refused by the rate limit in a row before the connection is closed (default 1,000). */
  maxRejected?: number;
  /** Log lines (`log` frames) kept per instance (default 500). */
  logMemory?: number;
  /** State changes (`state_update` diffs) kept per instance besides the latest state (default 200). */
  historyMemory?: number;
  /** Actions (each with its outcome and times, {@link ModActionRecord}) kept per instance (default 100). */
  actionMemory?: number;
  /**
   * The last log `seq` an instance used before it was first seen by this endpoint (default 0): its lines continue
   * after it, so a host that keeps lines across restarts (or across an instance's death) never sees a number twice.
   */
  lastLogSeq?: (instanceId: string) => number;
  clock?: Clock;
  logger?: Logger;
}

/** What an action ended with. `code` on failure: `action_failed`, `action_timeout`, `instance_dead`, `stopped`, `closed`. */
export type ActionOutcome =
  | { ok: true; result: unknown }
  | {
      ok: false;
      code: 'action_failed' | 'action_timeout' | 'instance_dead' | 'stopped' | 'closed' | 'instance_busy';
      error: string;
    };

/** Connection state of an instance. */
export type InstanceStatus = 'connected' | 'disconnected' | 'dead';

/** What the API lists per instance. Times are epoch ms of the endpoint's clock. */
export interface InstanceInfo {
  instanceId: string;
  status: InstanceStatus;
  /** The game version the mod reported in `register.version` (the seed's meaning), e.g. `1.20.1`. */
  version: string;
  /** The protocol version the mod speaks (`register.protocolVersion`, `1.0` when it named none). */
  protocolVersion: string;
  /** What the mod calls itself (`register.name`), if it said. */
  name: string | null;
  /** The mod's platform or loader (`register.platform`: `fabric`, `forge`, `mineflayer`), if it said. */
  platform: string | null;
  lastState: PlayerState | null;
  lastStateAt: number | null;
  /** The action the instance is running, if any. */
  openActionId: string | null;
  connectedAt: number;
  disconnectedAt: number | null;
  /** State updates received (all of them, coalesced into `lastState`). */
  stateUpdates: number;
  /** State updates that changed something (each one is a {@link StateChange} of {@link MinecraftEndpoint.stateHistory}). */
  stateChanges: number;
}

/** One `log` line a mod sent, numbered per instance from 1. */
export interface ModLogLine {
  seq: number;
  at: number;
  message: string;
}

/**
 * One action as the instance's activity shows it: sent (or refused before the mod), then ended with its outcome.
 * `taskId`: the task that issued it, when the caller said. Times are epoch ms of the endpoint's clock.
 */
export interface ModActionRecord {
  actionId: string;
  type: string;
  taskId: string | null;
  startedAt: number;
  /** Null while the action runs. */
  endedAt: number | null;
  /** Null while the action runs; `code` on failure as {@link ActionOutcome}'s, or `action_refused`. */
  outcome: null | { ok: true; result: unknown } | { ok: false; code: string; error: string };
}

/** What {@link MinecraftEndpoint.onActivity} reports: a `log` line, or an action that started or ended. */
export type McActivity =
  | { kind: 'log'; instanceId: string; line: ModLogLine }
  | { kind: 'action'; instanceId: string; action: ModActionRecord };

interface OpenAction {
  action: Action;
  settle: (o: ActionOutcome) => void;
}

interface Instance {
  id: string;
  socket: WebSocket | null;
  version: string;
  protocolVersion: string;
  name: string | null;
  platform: string | null;
  /** The last `log` lines, oldest first, and the number of the last one. */
  logs: ModLogLine[];
  logSeq: number;
  /** The last actions (bounded), oldest first. */
  actions: ModActionRecord[];
  /** The state changes since the instance first registered (bounded), oldest first. */
  changes: StateChange[];
  stateChanges: number;
  /** The instance's rate limit, kept across its reconnects. */
  bucket: TokenBucket;
  state: PlayerState | null;
  stateAt: number | null;
  stateUpdates: number;
  connectedAt: number;
  disconnectedAt: number | null;
  deadTimer: TimerHandle | null;
  dead: boolean;
  open: Map<string, OpenAction>;
  /** Closed action ids in closing order → their outcome (bounded). */
  closed: Map<string, ActionOutcome>;
}

interface Waiter {
  instanceId: string;
  wake: () => void;
}

const NOOP_LOGGER: Logger = { debug() {}, info() {}, warn() {}, error() {} };

/**
 * The mod endpoint. Owns its WebSocket server and every instance's state. `executeAction` sends one action and
 * resolves with its outcome; it never rejects for an action's own failure.
 */
export class MinecraftEndpoint {
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly keepMs: number;
  private readonly closedMemory: number;
  private readonly instances = new Map<string, Instance>();
  private readonly waiters = new Set<Waiter>();
  private readonly stateListeners = new Set<(instanceId: string) => void>();
  private readonly notifyPending = new Set<string>();
  private readonly activityListeners = new Set<(a: McActivity) => void>();
  private wss: WebSocketServer | null = null;
  private server: Server | null = null;
  private closing = false;
  private readonly rate: { messagesPerSecond: number; burst: number };
  /** Frames refused with an `error` frame since start (for tests and metrics). */
  refusedFrames = 0;

  constructor(private readonly opts: MinecraftEndpointOptions = {}) {
    this.clock = opts.clock ?? systemClock;
    this.logger = opts.logger ?? NOOP_LOGGER;
    this.keepMs = opts.keepMs ?? INSTANCE_KEEP_MS;
    this.closedMemory = opts.closedMemory ?? 1_000;
    this.rate = opts.rateLimit ?? DEFAULT_MC_RATE_LIMIT;
  }

  /** Start listening; resolves with the bound port. Rejects with `MinecraftError('listen_failed')`. */
  async start(): Promise<{ host: string; port: number; url: string }> {
    const host = this.opts.host ?? '127.0.0.1';
    const authorize = this.opts.authorize ?? refuseBrowserUpgrades;
    const { server, wss } = createModServer({
      authorize,
      ...(this.opts.tls !== undefined ? { tls: this.opts.tls } : {}),
      logger: this.logger,
      onConnection: (ws, bound) => this.onConnection(ws, bound),
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', (e) =>
        reject(
          new MinecraftError('listen_failed', `mod endpoint cannot listen on ${host}: ${e.message}`, {
            cause: e,
          }),
        ),
      );
      server.listen(this.opts.port ?? DEFAULT_MC_PORT, host, () => resolve());
    });
    this.wss = wss;
    this.server = server;
    const port = (server.address() as AddressInfo).port;
    return { host, port, url: `${this.opts.tls !== undefined ? 'wss' : 'ws'}://${host}:${port}` };
  }

  /** Instances known now (connected, within their keep period, or dead), in registration order. */
  listInstances(): InstanceInfo[] {
    return [...this.instances.values()].map((i) => this.info(i));
  }

  /** One instance, or undefined. */
  getInstance(instanceId: string): InstanceInfo | undefined {
    const i = this.instances.get(instanceId);
    return i === undefined ? undefined : this.info(i);
  }

  /** The `log` lines of an instance numbered after `afterSeq` (the last ones kept), oldest first. */
  logsSince(instanceId: string, afterSeq = 0): ModLogLine[] {
    return (this.instances.get(instanceId)?.logs ?? []).filter((l) => l.seq > afterSeq);
  }

  /** The last actions of an instance (running and ended, {@link ModActionRecord}), oldest first. */
  actionsOf(instanceId: string): ModActionRecord[] {
    return (this.instances.get(instanceId)?.actions ?? []).map((a) => ({ ...a }));
  }

  /**
   * Call `fn` for every `log` line and every action start and end, as they happen (a host pushes them to its
   * readers). A listener that throws is logged and does not affect the endpoint. Returns an unsubscribe function.
   */
  onActivity(fn: (a: McActivity) => void): () => void {
    this.activityListeners.add(fn);
    return () => this.activityListeners.delete(fn);
  }

  /**
   * Record an action refused before it reached the mod (an allow/deny list), so the instance's activity shows it
   * with its outcome like the actions that ran.
   */
  noteRefused(instanceId: string, action: Action, error: string, taskId?: string): void {
    const inst = this.instances.get(instanceId);
    if (inst === undefined) return;
    const now = this.clock.now();
    this.track(inst, {
      actionId: action.id,
      type: action.type,
      taskId: taskId ?? null,
      startedAt: now,
      endedAt: now,
      outcome: { ok: false, code: 'action_refused', error },
    });
  }

  /**
   * An instance's state history: the latest state and the changes that led to it (each `state_update` that changed
   * something, as the fields it changed; the last `historyMemory` of them), oldest first.
   */
  stateHistory(instanceId: string): { latest: PlayerState | null; changes: StateChange[] } | undefined {
    const i = this.instances.get(instanceId);
    return i === undefined ? undefined : { latest: i.state, changes: i.changes.slice() };
  }

  /**
   * Resolve true once the instance is connected with a state, false after `ms` or when `signal` aborts. A step that
   * needs the player's state waits with it after a restart, before the mod has reconnected.
   */
  waitForState(instanceId: string, ms: number, signal?: AbortSignal): Promise<boolean> {
    const ready = (): boolean => {
      const i = this.instances.get(instanceId);
      return i !== undefined && i.socket !== null && i.state !== null;
    };
    if (ready()) return Promise.resolve(true);
    return new Promise<boolean>((resolve) => {
      const done = (v: boolean): void => {
        this.clock.clearTimeout(timer);
        unsubscribe();
        signal?.removeEventListener('abort', onAbort);
        resolve(v);
      };
      const onAbort = (): void => done(false);
      const timer = this.clock.setTimeout(() => done(ready()), ms);
      const unsubscribe = this.onState((id) => {
        if (id === instanceId && ready()) done(true);
      });
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  /**
   * Call `fn(instanceId)` after state updates arrive: at most once per instance per turn of the event loop however
   * many updates came in it (read the latest with {@link getInstance}). Returns an unsubscribe function.
   */
  onState(fn: (instanceId: string) => void): () => void {
    this.stateListeners.add(fn);
    return () => this.stateListeners.delete(fn);
  }

  /**
   * Send `action` to the instance and resolve with its outcome. While the instance is disconnected (or not yet
   * registered, e.g. after a backend restart) the action waits for it: up to the keep period, after which it fails
   * with `instance_dead`. When the instance (re)registers, open actions are sent again with the same id. The action
   * fails with `action_timeout` after `timeoutMs`, with `closed` when `signal` aborts.
   */
  executeAction(
    instanceId: string,
    action: Action,
    opts: { timeoutMs?: number; signal?: AbortSignal; taskId?: string } = {},
  ): Promise<ActionOutcome> {
    return new Promise<ActionOutcome>((resolve) => {
      let settled = false;
      let timeout: TimerHandle | null = null;
      let keepTimer: TimerHandle | null = null;
      let waiter: Waiter | null = null;
      let record: ModActionRecord | null = null;
      const cleanup = (): void => {
        if (timeout !== null) this.clock.clearTimeout(timeout);
        if (keepTimer !== null) this.clock.clearTimeout(keepTimer);
        if (waiter !== null) this.waiters.delete(waiter);
        opts.signal?.removeEventListener('abort', onAbort);
      };
      const finish = (o: ActionOutcome): void => {
        if (settled) return;
        settled = true;
        cleanup();
        const inst = this.instances.get(instanceId);
        if (record !== null && inst !== undefined) {
          record.endedAt = this.clock.now();
          record.outcome = o.ok
            ? { ok: true, result: o.result }
            : { ok: false, code: o.code, error: o.error };
          this.emitActivity({ kind: 'action', instanceId, action: { ...record } });
        }
        if (inst !== undefined && inst.open.get(action.id)?.settle === settleOpen) {
          inst.open.delete(action.id);
          this.remember(inst, action.id, o);
          // The backend gave up on an action the mod may still be running (a walk goes on for tens of blocks):
          // stop it in the game first, so nothing the task sends next runs beside it.
          if (!o.ok && (o.code === 'action_timeout' || o.code === 'closed') && inst.socket !== null) {
            this.send(inst.socket, { type: 'stop' });
          }
        }
        resolve(o);
      };
      const settleOpen = (o: ActionOutcome): void => finish(o);
      const onAbort = (): void =>
        finish({ ok: false, code: 'closed', error: 'the action was abandoned by the task' });
      if (opts.signal?.aborted) return onAbort();
      opts.signal?.addEventListener('abort', onAbort, { once: true });
      if (opts.timeoutMs !== undefined) {
        timeout = this.clock.setTimeout(
          () =>
            finish({
              ok: false,
              code: 'action_timeout',
              error: `action timed out after ${opts.timeoutMs} ms`,
            }),
          opts.timeoutMs,
        );
      }
      const attach = (inst: Instance): void => {
        const earlier = inst.closed.get(action.id);
        if (earlier !== undefined) return finish(earlier);
        if (record === null) {
          record = {
            actionId: action.id,
            type: action.type,
            taskId: opts.taskId ?? null,
            startedAt: this.clock.now(),
            endedAt: null,
            outcome: null,
          };
          this.track(inst, record);
        }
        // One action open per instance: a player cannot walk two paths at once (the pathfinder drops one).
        const other = [...inst.open.keys()].find((id) => id !== action.id);
        if (other !== undefined) {
          return finish({
            ok: false,
            code: 'instance_busy',
            error: `instance ${instanceId} is running action ${other}; one action at a time`,
          });
        }
        inst.open.set(action.id, { action, settle: settleOpen });
        if (inst.socket !== null) this.send(inst.socket, { type: 'execute_action', action });
      };
      const inst = this.instances.get(instanceId);
      if (inst !== undefined && inst.dead) {
        return finish({ ok: false, code: 'instance_dead', error: `instance ${instanceId} is dead` });
      }
      if (inst !== undefined) return attach(inst);
      // Unknown (never registered, or registered with a backend that restarted): wait for it, bounded.
      waiter = {
        instanceId,
        wake: () => {
          if (waiter !== null) this.waiters.delete(waiter);
          waiter = null;
          if (keepTimer !== null) this.clock.clearTimeout(keepTimer);
          keepTimer = null;
          const now = this.instances.get(instanceId);
          if (now !== undefined && !settled) attach(now);
        },
      };
      this.waiters.add(waiter);
      keepTimer = this.clock.setTimeout(
        () =>
          finish({
            ok: false,
            code: 'instance_dead',
            error: `instance ${instanceId} did not connect within ${this.keepMs} ms`,
          }),
        this.keepMs,
      );
    });
  }

  /** Send `stop` to the instance and fail its open actions with `stopped`. False if it is not connected. */
  stop(instanceId: string): boolean {
    const inst = this.instances.get(instanceId);
    if (inst === undefined) return false;
    for (const open of [...inst.open.values()]) {
      open.settle({ ok: false, code: 'stopped', error: 'stopped by the user' });
    }
    if (inst.socket === null) return false;
    this.send(inst.socket, { type: 'stop' });
    return true;
  }

  /** Close every connection and the server; open actions fail with `closed`. */
  async close(): Promise<void> {
    this.closing = true;
    for (const inst of this.instances.values()) {
      if (inst.deadTimer !== null) this.clock.clearTimeout(inst.deadTimer);
      for (const open of [...inst.open.values()])
        open.settle({ ok: false, code: 'closed', error: 'endpoint closed' });
      inst.socket?.terminate();
    }
    const wss = this.wss;
    const server = this.server;
    this.wss = null;
    this.server = null;
    // Connections that never registered are not in `instances`.
    for (const ws of wss?.clients ?? []) ws.terminate();
    if (wss !== null) await new Promise<void>((resolve) => wss.close(() => resolve()));
    if (server !== null) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private info(i: Instance): InstanceInfo {
    return {
      instanceId: i.id,
      status: i.dead ? 'dead' : i.socket !== null ? 'connected' : 'disconnected',
      version: i.version,
      protocolVersion: i.protocolVersion,
      name: i.name,
      platform: i.platform,
      lastState: i.state,
      lastStateAt: i.stateAt,
      openActionId: i.open.keys().next().value ?? null,
      connectedAt: i.connectedAt,
      disconnectedAt: i.disconnectedAt,
      stateUpdates: i.stateUpdates,
      stateChanges: i.stateChanges,
    };
  }

  /** Keep `record` in the instance's bounded action list and report it. */
  private track(inst: Instance, record: ModActionRecord): void {
    inst.actions.push(record);
    if (inst.actions.length > (this.opts.actionMemory ?? 100)) inst.actions.shift();
    this.emitActivity({ kind: 'action', instanceId: inst.id, action: { ...record } });
  }

  private emitActivity(a: McActivity): void {
    for (const fn of this.activityListeners) {
      try {
        fn(a);
      } catch (e) {
        this.logger.warn(
          { err: e instanceof Error ? e.message : String(e) },
          'minecraft activity listener failed',
        );
      }
    }
  }

  private remember(inst: Instance, actionId: string, o: ActionOutcome): void {
    inst.closed.set(actionId, o);
    if (inst.closed.size > this.closedMemory) {
      const oldest = inst.closed.keys().next().value;
      if (oldest !== undefined) inst.closed.delete(oldest);
    }
  }

  private send(ws: WebSocket, msg: BackendMessage): void {
    if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(msg));
  }

  private refuse(ws: WebSocket, error: McFrameError): void {
    this.refusedFrames++;
    this.send(ws, { type: 'error', ...error });
  }

  /** `bound`: the only instance id this connection may register as (from its credential). */
  private onConnection(ws: WebSocket, bound: string | undefined): void {
    let inst: Instance | null = null;
    const own = new TokenBucket(this.rate.messagesPerSecond, this.rate.burst, this.clock.now());
    let rejectedInARow = 0;
    let lastRefusalAt = -Infinity;
    ws.on('message', (data, isBinary) => {
      const now = this.clock.now();
      const bucket = inst !== null && inst.socket === ws ? inst.bucket : own;
      if (!bucket.take(now)) {
        rejectedInARow++;
        if (rejectedInARow >= (this.opts.maxRejected ?? 1_000)) {
          ws.close(4008, 'rate limited');
          return;
        }
        if (now - lastRefusalAt >= 1_000) {
          lastRefusalAt = now;
          this.refuse(ws, {
            code: 'rate_limited',
            message: `over ${this.rate.messagesPerSecond} frames/s (burst ${this.rate.burst}); frames are dropped`,
          });
        }
        return;
      }
      // Refusals are forgiven only once the mod has a frame to spare: a flood far over the rate gets one frame
      // through at each refill, which must not reset its count (the same rule as the CC endpoint's).
      if (bucket.spare() >= 1) rejectedInARow = 0;
      if (isBinary)
        return this.refuse(ws, {
          code: 'invalid_message',
          message: 'binary frames are not part of the protocol',
        });
      const parsed = parseModMessage(data as Buffer);
      if (!parsed.ok) return this.refuse(ws, parsed.error);
      const msg = parsed.value;
      if (inst === null || inst.socket !== ws) {
        if (msg.type !== 'register') {
          return this.refuse(ws, { code: 'not_registered', message: `send register before ${msg.type}` });
        }
        if (bound !== undefined && msg.instanceId !== bound) {
          this.refuse(ws, {
            code: 'instance_mismatch',
            message: `this connection's key is for instance ${bound}, not ${msg.instanceId}`,
            path: ['instanceId'],
          });
          this.send(ws, { type: 'registered', success: false });
          ws.close(4003, 'key for another instance');
          return;
        }
        inst = this.register(ws, msg);
        return;
      }
      this.onMessage(ws, inst, msg);
    });
    ws.on('close', () => {
      if (inst !== null && inst.socket === ws) this.onDisconnect(inst);
    });
    ws.on('error', (e) => this.logger.warn({ err: e.message }, 'mod connection error'));
  }

  private register(ws: WebSocket, msg: Extract<ModMessage, { type: 'register' }>): Instance | null {
    const { instanceId, version } = msg;
    const protocolVersion = msg.protocolVersion ?? MC_PROTOCOL_VERSION;
    if (protocolVersion.split('.')[0] !== MC_PROTOCOL_VERSION.split('.')[0]) {
      this.refuse(ws, {
        code: 'version_unsupported',
        message: `protocol version ${protocolVersion} is not supported; this backend speaks ${MC_PROTOCOL_VERSION}`,
        path: ['protocolVersion'],
      });
      this.send(ws, { type: 'registered', success: false });
      ws.close(4002, 'version unsupported');
      return null;
    }
    const now = this.clock.now();
    let inst = this.instances.get(instanceId);
    if (inst !== undefined && !inst.dead) {
      if (inst.deadTimer !== null) this.clock.clearTimeout(inst.deadTimer);
      inst.deadTimer = null;
      const old = inst.socket;
      inst.socket = ws;
      if (old !== null && old !== ws) old.close(4001, 'replaced by a new connection of the same instance');
      inst.version = version;
      inst.protocolVersion = protocolVersion;
      inst.name = msg.name ?? null;
      inst.platform = msg.platform ?? null;
      inst.disconnectedAt = null;
    } else {
      if (inst !== undefined) this.instances.delete(instanceId);
      inst = {
        id: instanceId,
        socket: ws,
        version,
        protocolVersion,
        name: msg.name ?? null,
        platform: msg.platform ?? null,
        logs: [],
        logSeq: Math.max(inst?.logSeq ?? 0, this.opts.lastLogSeq?.(instanceId) ?? 0),
        actions: [],
        changes: [],
        stateChanges: 0,
        bucket: new TokenBucket(this.rate.messagesPerSecond, this.rate.burst, now),
        state: null,
        stateAt: null,
        stateUpdates: 0,
        connectedAt: now,
        disconnectedAt: null,
        deadTimer: null,
        dead: false,
        open: new Map(),
        closed: new Map(),
      };
      this.instances.set(instanceId, inst);
      this.pruneDead();
    }
    this.logger.info(
      { instance_id: instanceId, version, protocol_version: protocolVersion },
      'minecraft instance registered',
    );
    this.send(ws, { type: 'registered', success: true });
    // Readers of the instance's state see it connected (and, below, disconnected or dead) at once.
    this.scheduleNotify(instanceId);
    for (const open of inst.open.values()) this.send(ws, { type: 'execute_action', action: open.action });
    for (const w of [...this.waiters]) if (w.instanceId === instanceId) w.wake();
    return inst;
  }

  private onMessage(ws: WebSocket, inst: Instance, msg: ModMessage): void {
    if (msg.type === 'register') {
      return this.refuse(ws, { code: 'invalid_message', message: 'already registered on this connection' });
    }
    if (msg.instanceId !== inst.id) {
      return this.refuse(ws, {
        code: 'instance_mismatch',
        message: `this connection registered as ${inst.id}, not ${msg.instanceId}`,
        path: ['instanceId'],
        ...('actionId' in msg ? { actionId: msg.actionId } : {}),
      });
    }
    switch (msg.type) {
      case 'state_update': {
        const changed = stateChanges(inst.state, msg.data);
        if (changed !== null) {
          inst.changes.push({ at: this.clock.now(), changed });
          inst.stateChanges++;
          if (inst.changes.length > (this.opts.historyMemory ?? 200)) inst.changes.shift();
        }
        inst.state = msg.data;
        inst.stateAt = this.clock.now();
        inst.stateUpdates++;
        this.scheduleNotify(inst.id);
        return;
      }
      case 'action_complete':
      case 'action_failed': {
        const open = inst.open.get(msg.actionId);
        if (open === undefined) {
          const closed = inst.closed.has(msg.actionId);
          return this.refuse(ws, {
            code: closed ? 'action_closed' : 'unknown_action',
            message: closed
              ? `action ${msg.actionId} is already closed`
              : `no action ${msg.actionId} was sent to ${inst.id}`,
            path: ['actionId'],
            actionId: msg.actionId,
          });
        }
        open.settle(
          msg.type === 'action_complete'
            ? { ok: true, result: msg.result ?? null }
            : { ok: false, code: 'action_failed', error: msg.error },
        );
        return;
      }
      case 'log':
        inst.logSeq++;
        inst.logs.push({ seq: inst.logSeq, at: this.clock.now(), message: msg.message });
        if (inst.logs.length > (this.opts.logMemory ?? 500)) inst.logs.shift();
        this.emitActivity({
          kind: 'log',
          instanceId: inst.id,
          line: { ...(inst.logs.at(-1) as ModLogLine) },
        });
        this.logger.info({ instance_id: inst.id, mod_message: msg.message }, 'minecraft mod log');
        return;
    }
  }

  private scheduleNotify(instanceId: string): void {
    if (this.stateListeners.size === 0 || this.notifyPending.has(instanceId)) return;
    this.notifyPending.add(instanceId);
    setImmediate(() => {
      this.notifyPending.delete(instanceId);
      for (const fn of this.stateListeners) fn(instanceId);
    });
  }

  private onDisconnect(inst: Instance): void {
    inst.socket = null;
    inst.disconnectedAt = this.clock.now();
    if (this.closing) return;
    this.scheduleNotify(inst.id);
    this.logger.info({ instance_id: inst.id }, 'minecraft instance disconnected');
    inst.deadTimer = this.clock.setTimeout(() => {
      inst.deadTimer = null;
      inst.dead = true;
      inst.state = null;
      this.scheduleNotify(inst.id);
      this.logger.warn({ instance_id: inst.id }, 'minecraft instance dead (not back within the keep period)');
      for (const open of [...inst.open.values()]) {
        open.settle({
          ok: false,
          code: 'instance_dead',
          error: `instance ${inst.id} disconnected and did not come back`,
        });
      }
    }, this.keepMs);
  }

  private pruneDead(): void {
    if (this.instances.size <= 1_000) return;
    for (const [id, i] of this.instances) {
      if (i.dead) this.instances.delete(id);
      if (this.instances.size <= 1_000) return;
    }
  }
}
