/**
 * The composition root: opens the SQLite store, builds the model adapters and strategies, the engine with the
 * WebSocket tool executor, the WebSocket gateway and the HTTP API, and starts them in the order that keeps the
 * write-ahead rule (the engine recovers before any client can connect).
 *
 * One file of about 500 lines on purpose: the order of construction here is the contract (the store before the
 * engine, recovery before any listener, the mod endpoint before the HTTP front that reports it), and splitting it
 * would spread that order over files.
 */
import { createServer, type Server } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  confirmationCheck,
  Engine,
  InMemoryScheduleStore,
  InMemoryTaskKindStore,
  systemClock,
  TaskOperations,
  withServerTools,
  type ConfirmationRule,
  type TaskKindStore,
  type MinecraftActivityStore,
  type ScheduleStore,
  type Clock,
  type Logger,
  type StrategyResolver,
  type TaskStore,
} from '@ccagent/engine';
import { createMinecraftAgent, fileSettingsStore, minecraftTaskKinds } from '@ccagent/minecraft';
import type { ModelLogger, ModelPool } from '@ccagent/models';
import { openSqliteStore, storageFailureOf } from '@ccagent/store';
import {
  InMemoryClientPersistence,
  DurableClientPersistence,
  type ClientPersistence,
  type ClientStore,
} from './client-persistence.js';
import type { OrchestratorConfig } from './config.js';
import { ClientRegistry } from './clients/client-registry.js';
import { ComputerGroups } from './clients/computer-groups.js';
import { TriggerLimits } from './ws/trigger-limits.js';
import { DashboardAssets, defaultDashboardDir } from './http/dashboard-assets.js';
import { EventHub } from './http/event-hub.js';
import { publishMinecraftEvents } from './http/minecraft-events.js';
import { McActivityRecorder, type McActivityKeep } from './minecraft-activity-recorder.js';
import { HttpApi, type TaskPageSource } from './http/http-api.js';
import { LuaAssets } from './http/lua-assets.js';
import { rawResponseHeaderLines, withResponseHeaders } from './http/response-headers.js';
import { Metrics } from './metrics.js';
import { modelView, type RoleModel } from './model-view.js';
import { pullHint, type AvailabilityReport, type ModelAvailability } from './model-availability.js';
import { OrchestratorError } from './orchestrator-error.js';
import { ReplyStream } from './reply-stream.js';
import { loadServerTools } from './server-tools.js';
import { ollamaNumCtx, setupModels } from './strategies.js';
import { kindConfirmation } from './security/confirmation-rule.js';
import {
  type CredentialStore,
  InMemoryCredentialStore,
  type Principal,
  SecurityService,
} from '@ccagent/security';
import { HttpAccess } from './security/http-access.js';
import { authorizeMod } from './security/mod-access.js';
import { guardUpgrade, type GuardPolicy } from './security/request-guard.js';
import { ScheduleService } from './schedule-service.js';
import { ScreenFrames } from './screens/screen-frames.js';
import { ScreenHub } from './screens/screen-hub.js';
import { ScreenSwitches, type ScreenSwitchStore } from './screens/screen-switches.js';
import { kindCatalogue, menuOffer } from './task-catalogue.js';
import { TaskKindService } from './task-kind-service.js';
import { ArgsValidator } from './ws/args-validator.js';
import { ClientRateLimits } from './ws/client-rate-limits.js';
import { Handshake } from './ws/handshake.js';
import { messageHandlers } from './ws/message-handlers.js';
import { TaskSubscriptions } from './ws/subscriptions.js';
import { TaskRequests } from './ws/task-requests.js';
import { maxRejectedFor, WsGateway } from './ws/ws-gateway.js';
import { WsReplies } from './ws/ws-replies.js';
import { RefusalLog } from './refusal-log.js';
import { CLOSE_CODES } from './ws/close-codes.js';
import { WsToolExecutor } from './ws/ws-tool-executor.js';

/** Options of {@link startOrchestrator}. */
export interface OrchestratorOptions {
  config: OrchestratorConfig;
  host: string;
  /** 0 = an ephemeral port (read it from the result). */
  port: number;
  /** SQLite file (created if missing). Ignored when `store` is given. */
  dbPath: string;
  /** `full` (default): acknowledged = survives power loss; `normal`: survives a crash, not a power loss. */
  durability?: 'full' | 'normal';
  /** Ollama base URL for models without their own `baseUrl`. */
  ollamaUrl: string;
  /** Shared secret: the operator credential (HTTP bearer) and the legacy key of computers not yet enrolled. */
  token?: string;
  /** Serve `https://` and `wss://` with this certificate and private key (PEM). */
  tls?: { cert: string | Buffer; key: string | Buffer };
  logger: Logger & ModelLogger;
  /** Directory of the Lua client bundle (default: `lua/` beside the built files). */
  luaDir?: string;
  /** Directory of the web dashboard (default: `dashboard/` beside the built files). */
  dashboardDir?: string;
  /** Environment for model overrides (default `process.env`). */
  env?: NodeJS.ProcessEnv;
  clock?: Clock;
  /** Embedding/tests: use this store instead of opening `dbPath` (client facts then live in memory). */
  store?: TaskStore;
  /**
   * An opened store with everything the SQLite one offers (clients, task pages, health) — the PostgreSQL store of a
   * `postgres://` deployment: used for all of it instead of opening `dbPath`; closed with the orchestrator.
   */
  durableStore?: DurableStore;
  /** Extra `/health` fields (the role of a `postgres://` deployment: active, holder, lease token). */
  role?: () => Record<string, unknown>;
  /** Embedding/tests: strategies instead of the configured agent ones (models are still checked for `/health`). */
  strategies?: StrategyResolver;
  /**
   * The Minecraft mod endpoint and `minecraft_agent` tasks (docs/minecraft.md). `required`: a port that cannot be
   * bound fails startup; otherwise it is logged and the orchestrator runs without it. Omitted: not started.
   */
  minecraft?: {
    host: string;
    port: number;
    required: boolean;
    /** What the database keeps of each instance's activity and how often lines are written (`MC_ACTIVITY_KEEP`). */
    activity?: Partial<McActivityKeep>;
  };
}

/** A store the orchestrator uses for tasks, clients, task pages and `/health` (`SqliteStore`, `PostgresStore`). */
export type DurableStore = TaskStore &
  ClientStore &
  TaskPageSource & {
    readonly path: string;
    lastTaskUpdateAt(): Promise<number | undefined>;
    probeHealth(): Promise<{ ok: true } | { ok: false; error: string; code?: string }>;
    /** Credentials, enrollment codes, pairing requests and the audit log, in the same database as the tasks. */
    readonly security: CredentialStore;
    /** Durable schedules and their firings, in the same database. */
    readonly schedules?: ScheduleStore;
    /** Task kinds saved at run time, in the same database. */
    readonly taskKinds?: TaskKindStore;
    /** The Minecraft side's settings document in the same database (PostgreSQL); absent: a file beside it. */
    readonly minecraftSettings?: { load(): Promise<unknown>; save(doc: unknown): Promise<void> };
    /** The operators' screen mirror switches in the same database (PostgreSQL); absent: a file beside it. */
    readonly screenSwitches?: ScreenSwitchStore;
    /** Each Minecraft instance's last log lines and ended actions, in the same database. */
    readonly minecraftActivity?: MinecraftActivityStore;
  };

/** What startup found out, for the banner. */
export interface StartupReport {
  url: string;
  dbPath: string;
  luaFiles: number;
  /** Tasks found unfinished in the database and resumed. */
  resumed: number;
  /** The Minecraft mod endpoint's URL, or why it is not running (undefined when not asked for). */
  minecraft?: { url: string } | { error: string };
  /** The first model check (not awaited by startup: a down model server must not delay listening). */
  models: Promise<ModelReport>;
}

/** Result of the startup model check. */
export interface ModelReport {
  report: AvailabilityReport;
  /** Human-readable warnings (missing models with `ollama pull` hints, unreachable servers). */
  warnings: string[];
}

/** A running orchestrator. `close()` stops it gracefully. */
export interface RunningOrchestrator {
  url: string;
  port: number;
  report: StartupReport;
  engine: Engine;
  /** Keys, enrollment and the audit log of this server. */
  security: SecurityService;
  close(): Promise<void>;
}

/** Events committed this long before a crash may not have reached connected clients (ms). */
const CRASH_WINDOW_MS = 5000;

/** Where the build puts the Lua bundle: `dist/lua` next to the bundled entry. */
export function defaultLuaDir(): string {
  return path.join(path.dirname(fileURLToPath(import.meta.url)), 'lua');
}

/** Start everything; rejects with {@link OrchestratorError} when the store or the port cannot be opened. */
export async function startOrchestrator(o: OrchestratorOptions): Promise<RunningOrchestrator> {
  const clock = o.clock ?? systemClock;
  const { config, logger } = o;
  const startedAt = clock.now();

  let store: TaskStore;
  let durable: DurableStore | undefined;
  if (o.durableStore) store = durable = o.durableStore;
  else if (o.store) store = o.store;
  else {
    try {
      durable = openSqliteStore({ path: o.dbPath, logger, synchronous: o.durability ?? 'full' });
    } catch (cause) {
      throw new OrchestratorError(
        'store_failed',
        `cannot open the database ${o.dbPath}: ${(cause as Error).message}`,
        {
          cause,
        },
      );
    }
    store = durable;
  }
  const dbPath = durable?.path ?? o.dbPath;
  // Live events for the dashboard: every acknowledged client change is also published.
  const events = new EventHub(startedAt);
  // The computers' mirrored screens (memory only); a disconnect reaches their watchers. The server's word on each
  // mirror is durable (a file beside a SQLite database, else the database); a change reaches the computer at once.
  const screenSwitches = new ScreenSwitches(
    config.server.screen,
    durable?.screenSwitches ??
      (durable !== undefined && dbPath !== ':memory:'
        ? fileSettingsStore(`${dbPath}.screens.json`)
        : undefined),
    (clientId, server) => {
      if (server === false) screens.switchedOff(clientId);
      const conn = registry.connection(clientId);
      if (conn) replies.send(conn, { type: 'screen_switch', screen: server });
    },
  );
  await screenSwitches.load();
  const screens = new ScreenHub(() => clock.now(), undefined, {
    serverSays: (id) => screenSwitches.server(id),
    maxViewersPerComputer: config.server.screen.maxViewersPerComputer,
    maxViewers: config.server.screen.maxViewers,
  });
  const clients: ClientPersistence = screens.observeClients(
    events.observeClients(durable ? new DurableClientPersistence(durable) : new InMemoryClientPersistence()),
  );
  // Without a durable store (a test's in-memory task store), keys last until exit.
  const credentialStore: CredentialStore = durable?.security ?? new InMemoryCredentialStore();
  const closeStore = async (): Promise<void> => {
    await store.close().catch((err: unknown) => logger.error({ err }, 'closing the store failed'));
  };

  // Chat replies as they are written, throttled, to WebSocket subscribers and the event stream.
  const replyStream = new ReplyStream(clock);
  events.attachReplies(replyStream);
  let availability: ModelAvailability;
  let resolver: StrategyResolver;
  let modelPools: Map<string, ModelPool>;
  let roleModels: RoleModel[];
  let modelConcurrency: Record<string, number>;
  let kindModels:
    Pick<ReturnType<typeof setupModels>, 'prepareKind' | 'useKinds' | 'checkKindModels'> | undefined;
  try {
    const models = setupModels(config, {
      ollamaUrl: o.ollamaUrl,
      env: o.env ?? process.env,
      logger,
      clock,
      onChatDelta: (task, step, text) => replyStream.push(task, step, text),
      readSteps: (taskId) => store.getSteps(taskId),
    });
    availability = models.availability;
    resolver = o.strategies ?? models.resolver;
    modelPools = models.pools;
    roleModels = models.used;
    modelConcurrency = models.modelConcurrency;
    // Run-time kinds run on the configured agent strategies (a test's own strategies know only the file's kinds).
    if (o.strategies === undefined) kindModels = models;
    // Probes run in the background: a server that is down at startup is found by its first probe or call.
    for (const pool of modelPools.values()) void pool.start();
  } catch (err) {
    await closeStore();
    throw err;
  }

  const s = config.server;
  const sec = s.security;
  const security = await SecurityService.open({
    store: credentialStore,
    token: o.token,
    requireClientKeys: sec.requireClientKeys,
    enrollmentTtlMs: sec.enrollmentTtlMs,
    rotationOverlapMs: sec.rotationOverlapMs,
    pairingRequests: sec.pairingRequests,
    maxPendingPairings: sec.maxPendingPairings,
    trustOnFirstUse: sec.trustOnFirstUse,
    failures: { maxFailures: sec.authFailuresPerMinute, windowMs: 60_000 },
    now: () => clock.now(),
    timers: clock,
    logger,
  }).catch(async (err: unknown) => {
    await closeStore();
    throw err;
  });
  const policy: GuardPolicy = {
    allowedHosts: sec.allowedHosts,
    allowedOrigins: sec.allowedOrigins,
    scheme: o.tls ? 'https' : 'http',
  };
  /**
   * client id → the credential its last hello authenticated with: to close its connection on revocation, and its key
   * group while it is offline (remembered on disk with the client, read back here at start).
   */
  const connectedWith = new Map<string, string>();
  const registry = new ClientRegistry(s.reconnectGraceMs, clock);
  // Task events a client missed are replayed when it is back: from its disconnect, or — for a client still
  // connected when the previous process died — from just before that process's last write (events committed in its
  // final moments may never have been sent).
  const lastWrite = durable ? await durable.lastTaskUpdateAt() : undefined;
  for (const c of await clients.listClients()) {
    const missedSince = c.connected
      ? Math.max(c.lastSeenAt, (lastWrite ?? startedAt) - CRASH_WINDOW_MS)
      : c.lastSeenAt;
    registry.restore(c.clientId, c.commands, c.clientVersion, Math.min(missedSince, startedAt));
    if (c.connectedWith !== undefined) connectedWith.set(c.clientId, c.connectedWith);
    if (c.connected) await clients.clientDisconnected(c.clientId, startedAt);
  }
  const validator = new ArgsValidator();
  const serverTools = await loadServerTools(config, { clock, logger }).catch(async (err: unknown) => {
    await closeStore();
    throw err;
  });
  // Built in dependency order; nothing is wired after construction. Those that react to the registry or the engine
  // subscribe to their events when built: the executor (re-sends calls to a client that is back) before the
  // subscriptions (replay that client's missed task events). The metrics gauge reads the executor only when scraped.
  const metrics = new Metrics(
    () => registry.connectedCount(),
    () => executor.pendingCount,
  );
  // The kinds of the config file, and those an operator saved at run time (which win): one catalogue, updated in
  // place when a kind is saved, read by the task operations and the schedules.
  const kinds = kindCatalogue(config);
  const taskKinds = new TaskKindService({
    config,
    store: durable?.taskKinds ?? new InMemoryTaskKindStore(),
    catalogues: [kinds],
    clock,
    ...(kindModels ? { prepare: kindModels.prepareKind, checkModels: kindModels.checkKindModels } : {}),
    ollamaUrl: o.ollamaUrl,
    logger,
  });
  try {
    await taskKinds.load();
  } catch (err) {
    await closeStore();
    throw new OrchestratorError(
      'store_failed',
      `cannot read the stored task kinds: ${(err as Error).message}`,
      {
        cause: err,
      },
    );
  }
  kindModels?.useKinds(taskKinds);
  // Destructive calls of kinds with a `confirm` setting: held by the engine until a yes, and checked again (on disk)
  // by the executor as the last step before they leave for the computer. Each task is judged by its kind's
  // definition of its creation time; with no `confirm` anywhere the check reads nothing.
  const confirm: ConfirmationRule = (task, command, args) => {
    const v = taskKinds.versionOf(task);
    return v?.spec.confirm ? kindConfirmation(task.kind, v, command, args) : undefined;
  };
  const checkOnDisk = confirmationCheck(store, confirm);
  const lastCheck: typeof checkOnDisk = (call) =>
    taskKinds.anyConfirm() ? checkOnDisk(call) : Promise.resolve(undefined);
  // The executor routes and sends; the engine owns each call's rules (its binding to a client, judging a result), and
  // hands the executor what it needs for one call with the call (ToolCallRequest), so neither refers to the other.
  const executor = new WsToolExecutor({
    confirmation: lastCheck,
    registry,
    validator,
    onRoundTrip: (command, ms) => metrics.commandRoundTripMs(command, ms),
    clock,
    logger,
    disconnectPolicy: s.disconnectPolicy,
    graceMs: s.reconnectGraceMs,
  });
  // Each instance's recent activity, kept in the database (lines in batches, actions when they end).
  const mcActivity =
    o.minecraft && durable?.minecraftActivity !== undefined
      ? new McActivityRecorder(durable.minecraftActivity, logger, o.minecraft.activity)
      : undefined;
  const minecraft = o.minecraft
    ? createMinecraftAgent({
        host: o.minecraft.host,
        port: o.minecraft.port,
        ollamaUrl: o.ollamaUrl,
        // A Minecraft task on a model the roles use asks for their num_ctx: another size would reload the model.
        numCtxFor: (t) => (t.provider === 'ollama' ? ollamaNumCtx(config, t.model) : undefined),
        // Mods connect like computers: the same Host/Origin policy (no web page may register as a mod or receive
        // its actions), and a credential when the server has a token.
        authorize: (req) => authorizeMod(req, policy, security),
        // wss:// with the server's own certificate when it serves HTTPS; frames limited like a computer's.
        ...(o.tls !== undefined ? { tls: o.tls } : {}),
        rateLimit: s.rateLimit,
        // The active instance and the action allow/deny lists: in the database when the store keeps them
        // (PostgreSQL), else beside a SQLite file (in memory otherwise).
        ...(durable?.minecraftSettings !== undefined
          ? { settingsStore: durable.minecraftSettings }
          : durable !== undefined && dbPath !== ':memory:'
            ? { settingsFile: `${dbPath}.minecraft.json` }
            : {}),
        ...(mcActivity !== undefined ? { lastLogSeq: (id: string) => mcActivity.lastLogSeq(id) } : {}),
        clock,
        logger,
      })
    : undefined;
  const engine = new Engine({
    confirm,
    store,
    strategies: minecraft ? minecraft.withStrategy(resolver) : resolver,
    // Server-side tools beside the computers' commands: run here, after the allow-list and confirmation checks.
    executor: withServerTools(minecraft ? minecraft.routeExecutor(executor) : executor, serverTools, {
      confirmation: lastCheck,
      logger,
    }),
    clock,
    logger,
    // Without pools one number for every model name (also those of test strategies); with pools, per name.
    modelConcurrency: modelPools.size === 0 ? s.modelConcurrency : modelConcurrency,
    defaultCallTimeoutMs: s.commandTimeoutMs,
    inputLimits: s.inputLimits,
  });
  events.attach(engine);
  const stopMcEvents = minecraft ? publishMinecraftEvents(events, minecraft.endpoint) : undefined;
  const stopMcActivity = minecraft && mcActivity ? mcActivity.attach(minecraft.endpoint) : undefined;
  replyStream.attach(engine);
  await metrics.track(engine);
  metrics.trackPools(() => [...modelPools].map(([name, pool]) => ({ name, snapshot: pool.snapshot() })));
  const tasks = new TaskOperations({
    engine,
    store,
    kinds,
    clock,
    crossClientAccess: config.server.crossClientAccess,
    storageFailure: storageFailureOf,
    // a task's name is unique among its computer's and its group's tasks (`groups` is set below, before any request)
    peerOf: (id) => (groups.enabled ? (other: string) => groups.together(id, other) : undefined),
  });
  const minecraftTasks = minecraft
    ? new TaskOperations({
        engine,
        store,
        kinds: minecraftTaskKinds(kindCatalogue(config)),
        clock,
        storageFailure: storageFailureOf,
      })
    : undefined;
  const schedules = new ScheduleService({
    store: durable?.schedules ?? new InMemoryScheduleStore(),
    engine,
    tasks,
    kinds,
    clock,
    logger,
    onChange: (e) => events.publish('schedule', e),
  });
  const replies = new WsReplies(metrics, new RefusalLog(logger, () => clock.now()));
  // A computer's key group: the key of its connection, or offline the one it last connected with (an enrolled
  // computer's own key is in no key group, whatever it connected with before it was enrolled).
  const groups = new ComputerGroups(
    config.server.groups,
    (id) =>
      registry.connection(id)?.principal?.actor ??
      (security.isEnrolled(id) ? undefined : connectedWith.get(id)),
  );
  const subscriptions = new TaskSubscriptions({
    config,
    engine,
    tasks,
    registry,
    replies,
    replyStream,
    logger,
    groups,
  });
  const rateLimits = new ClientRateLimits(s.rateLimit);
  const maxRejected = maxRejectedFor(config);
  const handshake = new Handshake({
    config,
    token: o.token,
    validator,
    clients,
    registry,
    rateLimits,
    maxRejected,
    replies,
    clock,
    logger,
    serverTools,
    authenticate: (clientId, token, source) => {
      const r = security.authenticateHello(clientId, token, source);
      if (r.ok) connectedWith.set(clientId, r.principal.actor);
      return r;
    },
    offer: () => menuOffer(kinds),
    screen: (id) => screenSwitches.server(id),
  });
  const requests = new TaskRequests({
    engine,
    tasks,
    clients,
    subscriptions,
    replies,
    clock,
    logger,
    groups,
    triggerLimits: new TriggerLimits(config.server.triggerRateLimit),
    audit: (who, action, target, detail) => void security.audit(who, action, target, 'ok', detail),
    callTask: (callId, sender) => executor.taskOfCall(callId, sender),
  });
  const gateway = new WsGateway({
    config,
    handlers: messageHandlers({
      handshake,
      requests,
      subscriptions,
      screens: new ScreenFrames(screens, replies),
    }),
    handshake,
    rateLimits,
    maxRejected,
    registry,
    clients,
    replies,
    metrics,
    clock,
    logger,
    oversizedResult: (conn, sender, ids, why) => requests.oversizedResult(conn, sender, ids, why),
  });
  const lua = new LuaAssets(o.luaDir ?? defaultLuaDir());
  const pages: TaskPageSource | undefined = durable;
  // Who may call each route is declared on the route table; the gate decides it on the one parsed request.
  const peerOf = (who: Principal): ((other: string) => boolean) | undefined => groups.peerOfCaller(who);
  const gate = new HttpAccess({ policy, security, getTask: (id) => engine.getTask(id), peerOf, logger });
  const http = new HttpApi(gate, {
    inputLimits: s.inputLimits,
    engine,
    store,
    pages,
    ...(o.role !== undefined ? { role: o.role } : {}),
    tasks,
    clients,
    registry,
    metrics,
    models: availability,
    modelView: () => modelView(roleModels, modelPools),
    lua,
    dashboard: new DashboardAssets(o.dashboardDir ?? defaultDashboardDir()),
    security,
    events,
    screens,
    screenSwitches,
    get taskKinds() {
      return [...Object.keys(taskKinds.kinds()), ...Object.keys(config.kindAliases)];
    },
    kindService: taskKinds,
    serverTools,
    dbPath,
    checkDb: () =>
      durable ? durable.probeHealth() : store.listTasks({ limit: 1 }).then(() => ({ ok: true as const })),
    startedAt,
    now: () => clock.now(),
    logger,
    minecraft,
    minecraftTasks,
    minecraftActivity: mcActivity,
    schedules,
    peerOf,
  });

  // Recover before anyone can connect: unfinished tasks resume, pending calls wait for their clients.
  const unfinished = await engine.listTasks({
    status: ['queued', 'running', 'waiting_for_command', 'waiting_for_user'],
  });
  // The Minecraft settings (active instance, action lists) before any task resumes: no step reads the lists before.
  if (minecraft) {
    try {
      await minecraft.loadSettings();
      // Where each instance's line numbers stopped, before a mod can connect.
      await mcActivity?.load();
    } catch (err) {
      executor.dispose();
      registry.dispose();
      await closeStore();
      throw new OrchestratorError('store_failed', (err as Error).message, { cause: err });
    }
  }
  await engine.start();
  // After the engine (a firing creates tasks through it); only this process fires: on PostgreSQL it holds the lease.
  await schedules.start();
  let minecraftReport: StartupReport['minecraft'];
  if (minecraft && o.minecraft) {
    try {
      minecraftReport = { url: await minecraft.start() };
    } catch (err) {
      if (o.minecraft.required) {
        await schedules.stop();
        await engine.stop();
        executor.dispose();
        registry.dispose();
        await closeStore();
        throw new OrchestratorError('listen_failed', (err as Error).message, { cause: err });
      }
      minecraftReport = { error: (err as Error).message };
      logger.warn({ err: (err as Error).message }, 'running without the Minecraft mod endpoint');
    }
  }

  // A revoked key's connection is closed at once, and so is one whose rotated key's overlap ended (its client id's
  // live connection, when it used that key).
  security.onRevoked((revoked, reason) => {
    for (const c of revoked) {
      if (c.clientId === undefined) continue;
      const conn = registry.connection(c.clientId);
      if (conn && connectedWith.get(c.clientId) === c.id) {
        logger.warn(
          { client_id: c.clientId, credential: c.id, reason },
          `closing the connection of a ${reason} key`,
        );
        conn.close(
          CLOSE_CODES.unauthorized,
          reason === 'revoked' ? 'this key was revoked' : 'this key expired',
        );
      }
    }
  });
  const server: Server = o.tls
    ? createTlsServer({ cert: o.tls.cert, key: o.tls.key }, withResponseHeaders(http.handle))
    : createServer(withResponseHeaders(http.handle));
  server.on('upgrade', (req, socket, head) => {
    const v = guardUpgrade(req.headers, policy);
    if (!v.ok) {
      logger.warn(
        {
          source: req.socket.remoteAddress,
          origin: req.headers.origin,
          host: req.headers.host,
          code: v.code,
        },
        'websocket upgrade refused',
      );
      const text = JSON.stringify({ error: { code: v.code, message: v.message } });
      socket.end(
        `HTTP/1.1 ${v.status} ${v.status === 403 ? 'Forbidden' : 'Misdirected Request'}\r\nConnection: close\r\n` +
          `Content-Type: application/json\r\n${rawResponseHeaderLines()}Content-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`,
      );
      return;
    }
    gateway.handleUpgrade(req, socket, head);
  });
  server.on('clientError', (_err, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(o.port, o.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (cause) {
    events.close();
    screens.close();
    security.close();
    await schedules.stop();
    await engine.stop();
    replyStream.close();
    executor.dispose();
    registry.dispose();
    await gateway.close();
    stopMcEvents?.();
    await minecraft?.close();
    stopMcActivity?.();
    await mcActivity?.close();
    for (const pool of modelPools.values()) pool.close();
    await closeStore();
    throw new OrchestratorError(
      'listen_failed',
      `cannot listen on ${o.host}:${o.port}: ${(cause as Error).message}`,
      {
        cause,
      },
    );
  }
  const addr = server.address() as AddressInfo;
  const hostText = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  const url = `${o.tls ? 'https' : 'http'}://${hostText}:${addr.port}`;

  logger.info({ url, db: dbPath, resumed: unfinished.length }, 'orchestrator listening');
  const models = availability.check(true).then((report): ModelReport => {
    const warnings: string[] = [];
    for (const srv of report.servers) {
      if (!srv.reachable) {
        warnings.push(
          `${srv.provider} at ${srv.url} is not reachable (${srv.error ?? 'no answer'}); model calls retry, and tasks fail if it stays down`,
        );
      }
    }
    for (const m of report.missing)
      warnings.push(`${pullHint(m)} (tasks that need it fail until it is installed)`);
    for (const w of warnings) logger.warn({ warning: w }, 'startup model check');
    return { report, warnings };
  });

  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      logger.info({}, 'shutting down');
      gateway.stopAccepting();
      // Event streams never end by themselves: end them, or server.close() would wait for them.
      events.close();
      screens.close();
      security.close();
      server.close();
      // Schedules, then the engine: no new firings, no new command_calls or events; in-flight steps abort and stay
      // durable for the next start.
      await schedules.stop();
      await engine.stop();
      replyStream.close();
      executor.dispose();
      registry.dispose();
      await gateway.close();
      stopMcEvents?.();
      await minecraft?.close();
      // Actions the close ended and the lines still buffered, before the store closes.
      await mcActivity?.close();
      stopMcActivity?.();
      for (const pool of modelPools.values()) pool.close();
      server.closeAllConnections();
      await closeStore();
      logger.info({}, 'stopped');
    })();
    return closing;
  };

  return {
    url,
    port: addr.port,
    engine,
    security,
    report: {
      url,
      dbPath,
      luaFiles: lua.manifest().length,
      resumed: unfinished.length,
      ...(minecraftReport !== undefined ? { minecraft: minecraftReport } : {}),
      models,
    },
    close,
  };
}
