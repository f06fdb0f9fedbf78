/**
 * The HTTP API (node:http; the route table is small enough that a router library would add more than it saves):
 * health, tasks, clients, tools, metrics and the Lua client bundle. JSON bodies are snake_case; errors are
 * `{"error": {"code", "message", "path"?}}`; a refused request changes nothing.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  TASK_STATUSES,
  type CommandCallRecord,
  type Engine,
  type Task,
  type TaskStatus,
  type TaskStore,
} from '@ccagent/engine';
import { findStorageFailure } from '@ccagent/store';
import { z } from 'zod';
import type { ClientPersistence } from '../client-persistence.js';
import { secretMatches } from '../ids.js';
import type { Metrics } from '../metrics.js';
import type { ModelAvailability } from '../model-availability.js';
import type { ServiceError, TaskService } from '../task-service.js';
import { ORCHESTRATOR_VERSION } from '../version.js';
import {
  callToWire,
  descriptorToWire,
  historyToWire,
  questionToWire,
  stepCallId,
  stepToWire,
  taskToWire,
  type WireObject,
} from '../wire.js';
import type { ClientRegistry } from '../clients/client-registry.js';
import { baseUrlFromHost, type LuaAssets } from './lua-assets.js';

/** A page of tasks (what `@ccagent/store`'s `listTasksPage` returns). */
export interface TaskPageSource {
  listTasksPage(q: {
    status?: TaskStatus | TaskStatus[];
    kind?: string;
    clientId?: string;
    limit?: number;
    offset?: number;
    order?: 'newest' | 'oldest';
  }): Promise<{ tasks: Task[]; total: number }>;
}

/** Dependencies of {@link HttpApi}. */
export interface HttpApiOptions {
  token: string | undefined;
  engine: Engine;
  store: TaskStore;
  pages: TaskPageSource | undefined;
  tasks: TaskService;
  clients: ClientPersistence;
  registry: ClientRegistry;
  metrics: Metrics;
  models: ModelAvailability;
  lua: LuaAssets;
  dbPath: string;
  /** DB health: answers a query, and writes are not failing (locked, disk full, I/O error). */
  checkDb: () => Promise<{ ok: true } | { ok: false; error: string; code?: string }>;
  startedAt: number;
  now: () => number;
  logger: { error(obj: unknown, msg?: string): void };
}

/** Largest accepted request body. */
const MAX_BODY_BYTES = 1024 * 1024;

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly path?: string,
  ) {
    super(message);
  }
}

const statusList = z
  .string()
  .transform((s) => s.split(',').filter((x) => x !== ''))
  .pipe(z.array(z.enum(TASK_STATUSES as [TaskStatus, ...TaskStatus[]])));

const listQuery = z.strictObject({
  status: statusList.optional(),
  kind: z.string().min(1).optional(),
  client: z.string().min(1).optional(),
  limit: z.coerce.number().int().min(1).max(1000).default(50),
  offset: z.coerce.number().int().min(0).default(0),
  order: z.enum(['newest', 'oldest']).default('newest'),
});

const createBody = z.strictObject({
  task_kind: z.string().min(1),
  prompt: z.string(),
  client_id: z.string().min(1).nullable().optional(),
  context: z.unknown().optional(),
  allowed_commands: z.array(z.string().min(1)).optional(),
  request_id: z.string().min(1).max(200).optional(),
});

/** Default `limit` of `GET /api/tasks/:id/steps`. */
export const STEP_PAGE_DEFAULT = 100;
/** Largest `limit` of `GET /api/tasks/:id/steps` (step records carry whole model inputs: pages stay bounded). */
export const STEP_PAGE_MAX = 500;

/** A query parameter that must be a whole number (no sign, exponent, blank or fraction). */
const wholeNumber = z
  .string()
  .regex(/^\d{1,15}$/, 'expected a whole number ≥ 0')
  .transform(Number);

const stepsQuery = z.strictObject({
  after_seq: wholeNumber.optional(),
  limit: wholeNumber.pipe(z.number().min(1).max(STEP_PAGE_MAX)).optional(),
});

const cancelBody = z.strictObject({ reason: z.string().max(1000).optional() });
const answerBody = z.strictObject({ text: z.string(), question_id: z.string().min(1).optional() });
const toolsQuery = z.strictObject({
  client: z.string().min(1).optional(),
  status: z.enum(['draft', 'test', 'active', 'retired']).optional(),
});

type Handler = (req: IncomingMessage, res: ServerResponse, params: string[], url: URL) => Promise<void>;

interface Route {
  method: string;
  pattern: RegExp;
  name: string;
  /** Routes anyone may call even when a token is set. */
  open?: boolean;
  handler: Handler;
}

/** The HTTP request handler. */
export class HttpApi {
  private readonly routes: Route[];

  constructor(private readonly o: HttpApiOptions) {
    this.routes = [
      {
        method: 'GET',
        pattern: /^\/health$/,
        name: 'health',
        open: true,
        handler: (q, s) => this.health(q, s),
      },
      {
        method: 'GET',
        pattern: /^\/api\/tasks$/,
        name: 'tasks.list',
        handler: (q, s, p, u) => this.listTasks(s, u),
      },
      {
        method: 'POST',
        pattern: /^\/api\/tasks$/,
        name: 'tasks.create',
        handler: (q, s) => this.createTask(q, s),
      },
      {
        method: 'GET',
        pattern: /^\/api\/tasks\/([^/]+)$/,
        name: 'tasks.get',
        handler: (q, s, p) => this.getTask(s, p),
      },
      {
        method: 'GET',
        pattern: /^\/api\/tasks\/([^/]+)\/steps$/,
        name: 'tasks.steps',
        handler: (q, s, p, u) => this.getSteps(s, p, u),
      },
      {
        method: 'POST',
        pattern: /^\/api\/tasks\/([^/]+)\/cancel$/,
        name: 'tasks.cancel',
        handler: (q, s, p) => this.cancel(q, s, p),
      },
      {
        method: 'POST',
        pattern: /^\/api\/tasks\/([^/]+)\/answer$/,
        name: 'tasks.answer',
        handler: (q, s, p) => this.answer(q, s, p),
      },
      { method: 'GET', pattern: /^\/api\/clients$/, name: 'clients', handler: (q, s) => this.clients(s) },
      { method: 'GET', pattern: /^\/api\/tools$/, name: 'tools', handler: (q, s, p, u) => this.tools(s, u) },
      { method: 'GET', pattern: /^\/metrics$/, name: 'metrics', handler: (q, s) => this.metricsText(s) },
      // CC's `wget run` cannot send an Authorization header, and the bundle holds no secret: open.
      {
        method: 'GET',
        pattern: /^\/lua\/install\.lua$/,
        name: 'lua.install',
        open: true,
        handler: (q, s) => this.installer(q, s),
      },
      {
        method: 'GET',
        pattern: /^\/lua\/manifest\.json$/,
        name: 'lua.manifest',
        open: true,
        handler: (q, s) => this.manifest(q, s),
      },
      {
        method: 'GET',
        pattern: /^\/lua\/files\/(.+)$/,
        name: 'lua.file',
        open: true,
        handler: (q, s, p) => this.luaFile(s, p),
      },
    ];
  }

  /** Node `request` listener. Never throws; unexpected failures become 500. */
  handle = (req: IncomingMessage, res: ServerResponse): void => {
    void this.dispatch(req, res);
  };

  private async dispatch(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let routeName = 'unmatched';
    try {
      const url = new URL(req.url ?? '/', 'http://localhost');
      const method = req.method === 'HEAD' ? 'GET' : (req.method ?? 'GET');
      let matchedPath = false;
      for (const r of this.routes) {
        const m = r.pattern.exec(url.pathname);
        if (!m) continue;
        matchedPath = true;
        if (r.method !== method) continue;
        routeName = r.name;
        if (!r.open && this.o.token !== undefined) this.authorize(req);
        const params = m.slice(1).map((p) => safeDecode(p));
        await r.handler(req, res, params, url);
        return;
      }
      if (matchedPath)
        throw new HttpError(405, 'method_not_allowed', `${req.method} is not allowed on ${url.pathname}`);
      throw new HttpError(404, 'not_found', `no route ${req.method} ${url.pathname}`);
    } catch (err) {
      if (err instanceof HttpError) {
        const extra: Record<string, string> = err.status === 401 ? { 'www-authenticate': 'Bearer' } : {};
        sendJson(
          res,
          err.status,
          { error: { code: err.code, message: err.message, ...(err.path ? { path: err.path } : {}) } },
          extra,
        );
      } else {
        const storage = findStorageFailure(err);
        this.o.logger.error({ err, route: routeName }, 'http handler failed');
        if (res.headersSent) res.destroy();
        else if (storage) {
          // The database cannot be used right now: say why, and that it is worth retrying.
          sendJson(
            res,
            503,
            { error: { code: 'unavailable', message: storage.message } },
            { 'retry-after': '5' },
          );
        } else sendJson(res, 500, { error: { code: 'internal', message: 'internal server error' } });
      }
    } finally {
      this.o.metrics.http(routeName, res.statusCode);
    }
  }

  private authorize(req: IncomingMessage): void {
    const h = req.headers.authorization;
    const m = h !== undefined ? /^Bearer\s+(.+)$/i.exec(h) : null;
    if (!m || !secretMatches(m[1], this.o.token as string)) {
      throw new HttpError(
        401,
        'unauthorized',
        m ? 'wrong token' : 'this server requires "Authorization: Bearer <token>"',
      );
    }
  }

  // ---------------------------------------------------------------- routes

  private async health(_req: IncomingMessage, res: ServerResponse): Promise<void> {
    const [db, models] = await Promise.all([this.o.checkDb(), this.o.models.check()]);
    const reachable = models.servers.every((s) => s.reachable);
    const body = {
      ok: db.ok,
      degraded: !reachable || models.missing.length > 0,
      version: ORCHESTRATOR_VERSION,
      uptime_s: Math.round((this.o.now() - this.o.startedAt) / 100) / 10,
      db: {
        ok: db.ok,
        path: this.o.dbPath,
        ...(db.ok ? {} : { error: db.error, ...(db.code !== undefined ? { code: db.code } : {}) }),
      },
      model_servers: models.servers.map((s) => ({
        provider: s.provider,
        url: s.url,
        reachable: s.reachable,
        ...(s.version !== undefined ? { version: s.version } : {}),
        ...(s.error !== undefined ? { error: s.error } : {}),
        present: s.present,
        missing: s.missing,
      })),
      models: { missing: models.missing.map((m) => m.name) },
      clients: { connected: this.o.registry.connectedCount() },
    };
    sendJson(res, db.ok ? 200 : 503, body);
  }

  private async listTasks(res: ServerResponse, url: URL): Promise<void> {
    const q = parseWith(listQuery, Object.fromEntries(url.searchParams), 'query');
    const status = q.status && q.status.length > 0 ? q.status : undefined;
    let tasks;
    let total: number;
    if (this.o.pages) {
      const page = await this.o.pages.listTasksPage({
        ...(status ? { status } : {}),
        ...(q.kind ? { kind: q.kind } : {}),
        ...(q.client ? { clientId: q.client } : {}),
        limit: q.limit,
        offset: q.offset,
        order: q.order,
      });
      tasks = page.tasks;
      total = page.total;
    } else {
      const all = await this.o.engine.listTasks({
        ...(status ? { status } : {}),
        ...(q.kind ? { kind: q.kind } : {}),
        ...(q.client ? { clientId: q.client } : {}),
      });
      if (q.order === 'newest') all.reverse();
      total = all.length;
      tasks = all.slice(q.offset, q.offset + q.limit);
    }
    sendJson(res, 200, { tasks: tasks.map(taskToWire), total, limit: q.limit, offset: q.offset });
  }

  private async getTask(res: ServerResponse, [id]: string[]): Promise<void> {
    const task = await this.o.engine.getTask(id as string);
    if (!task) throw new HttpError(404, 'not_found', `no task ${id}`);
    const [steps, history, calls, questions] = await Promise.all([
      this.o.store.getSteps(task.id),
      this.o.store.getHistory(task.id),
      this.o.store.listCommandCalls({ taskId: task.id }),
      this.o.store.listQuestions(task.id),
    ]);
    sendJson(res, 200, {
      task: taskToWire(task),
      steps: steps.map(stepToWire),
      history: history.map(historyToWire),
      command_calls: calls.map(callToWire),
      questions: questions.map(questionToWire),
    });
  }

  /**
   * One page of a task's step log (`seq > after_seq`, at most `limit`), with the task and its questions, so a follower
   * reads only what is new in one request per poll. The task is read before the steps: when it is seen finished, the
   * steps read after it hold every record it wrote.
   */
  private async getSteps(res: ServerResponse, [id]: string[], url: URL): Promise<void> {
    const q = parseWith(stepsQuery, Object.fromEntries(url.searchParams), 'query');
    const afterSeq = q.after_seq ?? 0;
    const limit = q.limit ?? STEP_PAGE_DEFAULT;
    const task = await this.o.engine.getTask(id as string);
    if (!task) throw new HttpError(404, 'not_found', `no task ${id}`);
    // One more than asked tells whether the page is the last.
    const steps = await this.o.store.getSteps(task.id, { afterSeq, limit: limit + 1 });
    const questions = await this.o.store.listQuestions(task.id);
    const hasMore = steps.length > limit;
    const page = hasMore ? steps.slice(0, limit) : steps;
    // The calls of this page's tool records (point reads by call id), so a follower sees where each went (sent_to).
    const callIds = [...new Set(page.map(stepCallId).filter((c): c is string => c !== undefined))];
    const calls = await Promise.all(callIds.map((c) => this.o.store.getCommandCall(c)));
    sendJson(res, 200, {
      task: taskToWire(task),
      steps: page.map(stepToWire),
      questions: questions.map(questionToWire),
      command_calls: calls.filter((c): c is CommandCallRecord => c !== undefined).map(callToWire),
      after_seq: afterSeq,
      limit,
      has_more: hasMore,
      next_after_seq: page.at(-1)?.seq ?? afterSeq,
    });
  }

  private async createTask(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const b = parseWith(createBody, await readJson(req), 'body');
    const r = await this.o.tasks.create({
      kind: b.task_kind,
      prompt: b.prompt,
      clientId: b.client_id ?? null,
      ...(b.context !== undefined ? { context: b.context } : {}),
      ...(b.allowed_commands !== undefined ? { allowedCommands: b.allowed_commands } : {}),
      ...(b.request_id !== undefined ? { requestId: b.request_id, requestNamespace: 'http' } : {}),
    });
    if (!r.ok) throw serviceError(r.error);
    sendJson(res, r.value.created ? 201 : 200, { task: taskToWire(r.value.task), created: r.value.created });
  }

  private async cancel(req: IncomingMessage, res: ServerResponse, [id]: string[]): Promise<void> {
    const b = parseWith(cancelBody, await readJson(req, true), 'body');
    const r = await this.o.tasks.cancel(id as string, b.reason ?? 'cancelled over HTTP');
    if (!r.ok) throw serviceError(r.error);
    sendJson(res, 200, { task: taskToWire(r.value) });
  }

  private async answer(req: IncomingMessage, res: ServerResponse, [id]: string[]): Promise<void> {
    const b = parseWith(answerBody, await readJson(req), 'body');
    const r = await this.o.tasks.answer(id as string, b.question_id, b.text);
    if (!r.ok) throw serviceError(r.error);
    sendJson(res, 200, { task: taskToWire(r.value) });
  }

  private async clients(res: ServerResponse): Promise<void> {
    const known = await this.o.clients.listClients();
    const out: WireObject[] = known.map((c) => {
      const live = this.o.registry.get(c.clientId);
      const commands = live && live.commands.size > 0 ? [...live.commands.values()] : c.commands;
      return {
        client_id: c.clientId,
        connected: live?.connection !== undefined,
        in_grace: live ? live.connection === undefined && live.inGrace : false,
        ...(c.clientVersion !== undefined ? { client_version: c.clientVersion } : {}),
        ...(c.firstSeenAt !== undefined ? { first_seen_at: c.firstSeenAt } : {}),
        last_seen_at: live?.connection ? this.o.now() : c.lastSeenAt,
        commands: commands.map(descriptorToWire),
      };
    });
    sendJson(res, 200, { clients: out });
  }

  private async tools(res: ServerResponse, url: URL): Promise<void> {
    const q = parseWith(toolsQuery, Object.fromEntries(url.searchParams), 'query');
    const tools = await this.o.clients.listTools({
      ...(q.client ? { clientId: q.client } : {}),
      ...(q.status ? { status: q.status } : {}),
    });
    sendJson(res, 200, {
      tools: tools.map((t) => ({
        client_id: t.clientId,
        name: t.name,
        status: t.status,
        version: t.version,
        ...(t.description !== undefined ? { description: t.description } : {}),
        ...(t.file !== undefined ? { file: t.file } : {}),
        ...(t.updatedAt !== undefined ? { updated_at: t.updatedAt } : {}),
        ...(t.recordedAt !== undefined ? { recorded_at: t.recordedAt } : {}),
      })),
    });
  }

  private async metricsText(res: ServerResponse): Promise<void> {
    const text = await this.o.metrics.render();
    res.writeHead(200, { 'content-type': this.o.metrics.contentType });
    res.end(text);
  }

  private installer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const host = req.headers.host;
    const proto = req.headers['x-forwarded-proto'];
    const base = baseUrlFromHost(host, typeof proto === 'string' ? proto : undefined);
    if (base === undefined) {
      throw new HttpError(400, 'invalid_host', 'the Host header is missing or not a plain host[:port]');
    }
    const text = this.o.lua.installer(base);
    if (text === undefined) {
      throw new HttpError(404, 'not_found', `install.lua is not in the Lua bundle (${this.o.lua.root})`);
    }
    res.writeHead(200, { 'content-type': 'text/x-lua; charset=utf-8', 'cache-control': 'no-store' });
    res.end(text);
    return Promise.resolve();
  }

  private manifest(_req: IncomingMessage, res: ServerResponse): Promise<void> {
    sendJson(res, 200, { version: ORCHESTRATOR_VERSION, files: this.o.lua.manifest() });
    return Promise.resolve();
  }

  private luaFile(res: ServerResponse, [rel]: string[]): Promise<void> {
    const body = this.o.lua.file(rel as string);
    if (!body) throw new HttpError(404, 'not_found', `no Lua file ${JSON.stringify(rel)}`);
    res.writeHead(200, { 'content-type': 'text/x-lua; charset=utf-8', 'content-length': body.length });
    res.end(body);
    return Promise.resolve();
  }
}

function safeDecode(p: string): string {
  try {
    return decodeURIComponent(p);
  } catch {
    throw new HttpError(400, 'invalid_path', 'the path is not valid percent-encoding');
  }
}

function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

async function readJson(req: IncomingMessage, emptyIsObject = false): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES)
      throw new HttpError(413, 'body_too_large', `request body exceeds ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') {
    if (emptyIsObject) return {};
    throw new HttpError(400, 'invalid_json', 'the request body is empty; send a JSON object');
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new HttpError(400, 'invalid_json', `the request body is not JSON: ${(err as Error).message}`);
  }
}

function parseWith<T extends z.ZodType>(schema: T, input: unknown, where: 'body' | 'query'): z.infer<T> {
  const r = schema.safeParse(input);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  const path = `$${(issue?.path ?? []).map((k) => (typeof k === 'number' ? `[${k}]` : `.${String(k)}`)).join('')}`;
  const message = (issue?.message ?? 'invalid').replace(/^Invalid input: /, '');
  throw new HttpError(400, where === 'body' ? 'invalid_body' : 'invalid_query', `${path}: ${message}`, path);
}

function serviceError(e: ServiceError): HttpError {
  const status =
    e.code === 'not_found'
      ? 404
      : e.code === 'forbidden'
        ? 403
        : e.code === 'conflict' || e.code === 'duplicate'
          ? 409
          : e.code === 'internal'
            ? 500
            : e.code === 'unavailable'
              ? 503
              : 400;
  const code = e.code === 'invalid_field' ? 'invalid_body' : e.code;
  return new HttpError(status, code, e.message, e.path);
}
