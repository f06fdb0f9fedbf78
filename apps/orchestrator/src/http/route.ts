/**
 * The shape of an HTTP route and what its handler gets: the dependencies of the HTTP side (one object, built at the
 * composition root) and the request. Route modules live in routes/; the table is routes/index.ts.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Engine, Task, TaskOperations, TaskStatus, TaskStore } from '@ccagent/engine';
import type { MinecraftAgent } from '@ccagent/minecraft';
import type { ClientRegistry } from '../clients/client-registry.js';
import type { ClientPersistence } from '../client-persistence.js';
import type { Metrics } from '../metrics.js';
import type { ModelAvailability } from '../model-availability.js';
import type { SecurityService } from '../security/security-service.js';
import type { DashboardAssets } from './dashboard-assets.js';
import type { BodyLimits } from './http-kit.js';
import type { EventHub } from './event-hub.js';
import type { LuaAssets } from './lua-assets.js';

/** A page of tasks (what `@ccagent/store`'s `listTasksPage` returns). */
export interface TaskPageSource {
  listTasksPage(q: {
    status?: TaskStatus | TaskStatus[];
    kind?: string;
    clientId?: string;
    search?: string;
    limit?: number;
    offset?: number;
    order?: 'newest' | 'oldest';
  }): Promise<{ tasks: Task[]; total: number }>;
}

/** Dependencies of the HTTP side (`HttpApi` and every route). */
export interface HttpApiOptions {
  token: string | undefined;
  /** Largest body and deepest nesting a request may have (`server.inputLimits`; default the protocol's). */
  inputLimits?: BodyLimits;
  engine: Engine;
  store: TaskStore;
  pages: TaskPageSource | undefined;
  tasks: TaskOperations;
  clients: ClientPersistence;
  registry: ClientRegistry;
  metrics: Metrics;
  models: ModelAvailability;
  lua: LuaAssets;
  /** The web dashboard's files, served at `/`. */
  dashboard: DashboardAssets;
  /** Keys, pairing and the audit log (the security routes). */
  security: SecurityService;
  /** Live events (`GET /api/events`). */
  events: EventHub;
  /** Task kinds and aliases a create request may name (the dashboard's kind list). */
  taskKinds: readonly string[];
  dbPath: string;
  /** DB health: answers a query, and writes are not failing (locked, disk full, I/O error). */
  checkDb: () => Promise<{ ok: true } | { ok: false; error: string; code?: string }>;
  /** Extra `/health` fields: the role of an orchestrator sharing a PostgreSQL database (`role: 'active'`, …). */
  role?: () => Record<string, unknown>;
  startedAt: number;
  now: () => number;
  /** The Minecraft side (mod endpoint, `minecraft_agent` tasks), when it runs in this process. */
  minecraft?: MinecraftAgent | undefined;
  logger: { error(obj: unknown, msg?: string): void };
}

/** One request as a handler sees it: `params` are the pattern's groups, percent-decoded. */
export interface RouteRequest {
  req: IncomingMessage;
  res: ServerResponse;
  params: string[];
  url: URL;
}

/** Answers one request (throws `HttpError` to refuse it; anything else is a 500, or a 503 for a storage failure). */
export type RouteHandler = (d: HttpApiOptions, r: RouteRequest) => Promise<void>;

/** One entry of the route table. */
export interface Route {
  method: 'GET' | 'POST';
  /** Matched against the URL path (no query). */
  pattern: RegExp;
  /** For metrics and logs. */
  name: string;
  /** Anyone may call it even when a token is set. */
  open?: boolean;
  handler: RouteHandler;
}
