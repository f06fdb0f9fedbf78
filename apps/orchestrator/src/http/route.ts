/**
 * The shape of an HTTP route and what its handler gets: the dependencies of the HTTP side (one object, built at the
 * composition root) and the request, parsed once. Route modules live in routes/; the table is routes/index.ts.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { CommandDescriptor, Engine, Task, TaskOperations, TaskStatus, TaskStore } from '@ccagent/engine';
import type { MinecraftAgent } from '@ccagent/minecraft';
import type { McActivityRecorder } from '../minecraft-activity-recorder.js';
import type { z } from 'zod';
import type { ClientRegistry } from '../clients/client-registry.js';
import type { ClientPersistence } from '../client-persistence.js';
import type { Metrics } from '../metrics.js';
import type { ScheduleService } from '../schedule-service.js';
import type { TaskKindService } from '../task-kind-service.js';
import type { ModelsResponse } from '@ccagent/protocol';
import type { ModelAvailability } from '../model-availability.js';
import type { RouteAccess } from '../security/route-access.js';
import type { Principal, SecurityService } from '@ccagent/security';
import type { DashboardAssets } from './dashboard-assets.js';
import type { BodyLimits } from './http-kit.js';
import type { EventHub } from './event-hub.js';
import type { LuaAssets } from './lua-assets.js';
import type { ScreenHub } from '../screens/screen-hub.js';
import type { ScreenSwitches } from '../screens/screen-switches.js';

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
  /** The roles' models and the pools' servers now (`GET /api/models`); absent: no roles, no pools. */
  modelView?: () => ModelsResponse;
  lua: LuaAssets;
  /** The web dashboard's files, served at `/`. */
  dashboard: DashboardAssets;
  /** Keys, pairing and the audit log (the security routes). */
  security: SecurityService;
  /** Live events (`GET /api/events`). */
  events: EventHub;
  /** The computers' mirrored screens (`/api/clients/:id/screen`); absent: none are kept. */
  screens?: ScreenHub | undefined;
  /** The server's word on each computer's screen mirror (`/api/clients/:id/screen/switch`); absent: none. */
  screenSwitches?: ScreenSwitches | undefined;
  /** Task kinds and aliases a create request may name (the dashboard's kind list). */
  taskKinds: readonly string[];
  /** The server-side tools (listed by `GET /api/tools`); absent: none. */
  serverTools?: { descriptors(): CommandDescriptor[] };
  dbPath: string;
  /** DB health: answers a query, and writes are not failing (locked, disk full, I/O error). */
  checkDb: () => Promise<{ ok: true } | { ok: false; error: string; code?: string }>;
  /** Extra `/health` fields: the role of an orchestrator sharing a PostgreSQL database (`role: 'active'`, …). */
  role?: () => Record<string, unknown>;
  startedAt: number;
  now: () => number;
  /** A computer caller's group (`server.groups`): the tasks of its computers are as its own; absent: no groups. */
  peerOf?: ((who: Principal) => ((otherClientId: string) => boolean) | undefined) | undefined;
  /** Run-time task kinds (`/api/task-kinds`); absent: only the config file's kinds, not editable. */
  kindService?: TaskKindService | undefined;
  /** Durable schedules (`/api/schedules`); absent: the server keeps none. */
  schedules?: ScheduleService | undefined;
  /** The Minecraft side (mod endpoint, `minecraft_agent` tasks), when it runs in this process. */
  minecraft?: MinecraftAgent | undefined;
  /** Task operations over the `minecraft_agent` kind (`minecraftTaskKinds`), when the Minecraft side runs. */
  minecraftTasks?: TaskOperations | undefined;
  /** The Minecraft activity kept in the database (the activity route reads it after a restart). */
  minecraftActivity?: McActivityRecorder | undefined;
  logger: { error(obj: unknown, msg?: string): void };
}

/** The query of a route that declares none: it reads no query parameter. */
export type NoQuery = Record<string, never>;

/** The parsed query of a route whose `query` is the schema `S`. */
export type QueryOf<S extends z.ZodType> = z.output<S>;

/**
 * One request as the route table's access check and its handler both see it, parsed once by the server
 * (http-api.ts): the path's parameters percent-decoded once, the query parsed by the route's schema with each
 * parameter at most once, and the caller as authenticated for the route's access. Nothing else reads the URL.
 */
export interface RouteRequest<Q = NoQuery> {
  req: IncomingMessage;
  res: ServerResponse;
  /** The URL's path (not decoded), as it was matched. */
  path: string;
  /** The pattern's named groups (`id`, `path`), each percent-decoded once. */
  params: Readonly<Record<string, string>>;
  /** The query as the route's `query` schema parsed it; `{}` for a route that declares none. */
  query: Q;
  /** Who is calling; undefined on `public` and `pairing` routes, which read no credential. */
  caller: Principal | undefined;
  /** The table the request was matched in (`GET /api/dashboard` names the features it serves). */
  routes: readonly Route[];
}

/** Answers one request (throws `HttpError` to refuse it; anything else is a 500, or a 503 for a storage failure). */
export type RouteHandler<Q = NoQuery> = (d: HttpApiOptions, r: RouteRequest<Q>) => Promise<void>;

/** An action a route's success is audited as, under its caller (the key routes audit themselves). */
export type AuditedAction =
  | 'task.create'
  | 'task.cancel'
  | 'task.answer'
  | 'minecraft.create'
  | 'minecraft.stop'
  | 'minecraft.retry'
  | 'minecraft.connect'
  | 'minecraft.prompt'
  | 'minecraft.stop_task'
  | 'minecraft.set_actions'
  | 'schedule.add'
  | 'schedule.pause'
  | 'schedule.resume'
  | 'schedule.remove'
  | 'task_kind.save'
  | 'task_kind.remove'
  | 'screen.switch';

/** One entry of the route table: what the route is, who may call it, what it reads, and its handler. */
export interface Route {
  method: 'GET' | 'POST';
  /** Matched against the URL path (no query); its named groups are the path parameters. */
  pattern: RegExp;
  /** For metrics and logs. */
  name: string;
  /** Who may call it: the access check is a lookup on this (security/route-access.ts). */
  access: RouteAccess;
  /** Why a viewer or computer key without the access is refused, where the level's own reason says less. */
  refusal?: Partial<Record<'viewer' | 'computer', string>>;
  /** The query parameters it reads (a strict object); without one the route reads none. */
  query?: z.ZodType;
  /** Audited under the caller once answered with success; the target is the path's `id` or the created task. */
  audit?: AuditedAction;
  handler: RouteHandler<unknown>;
}

/** A route whose handler gets the query its schema parses (the server parses it with that schema first). */
export function route<S extends z.ZodType | undefined = undefined>(
  r: Omit<Route, 'query' | 'handler'> & {
    query?: S;
    handler: RouteHandler<S extends z.ZodType ? QueryOf<S> : NoQuery>;
  },
): Route {
  return r as Route;
}
