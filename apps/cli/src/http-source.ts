import type { ModelsResponse } from '@ccagent/protocol';
import type { z } from 'zod';
import { openTaskWatch, type DeltaListener, type TaskWatch } from './task-watch.js';
import { CliError } from './errors.js';
import type {
  ClientView,
  CreateTaskInput,
  TaskActions,
  TaskDetail,
  TaskListQuery,
  TaskPageView,
  TaskSource,
  TaskUpdates,
  TaskView,
  ToolView,
} from './source.js';
import { wireBodies } from './wire-views.js';

/** Options of {@link HttpTaskSource}. */
export interface HttpSourceOptions {
  /** Orchestrator base URL, e.g. `http://127.0.0.1:7420`. */
  url: string;
  /** Sent as `Authorization: Bearer <token>` when set. */
  token?: string;
  /** Per-request timeout (default 10 s). */
  timeoutMs?: number;
}

/**
 * Reads and acts through a running orchestrator's HTTP API (`--url`, `--token`). Every response body is checked
 * (zod) and mapped to the same views the SQLite source produces.
 */
export class HttpTaskSource implements TaskSource, TaskActions {
  readonly label: string;
  private readonly base: URL;
  private readonly token: string | undefined;
  private readonly timeoutMs: number;

  constructor(opts: HttpSourceOptions) {
    try {
      this.base = new URL(opts.url);
    } catch {
      throw new CliError('usage', `--url: '${opts.url}' is not a URL (expected e.g. http://127.0.0.1:7420)`);
    }
    if (this.base.protocol !== 'http:' && this.base.protocol !== 'https:') {
      throw new CliError('usage', `--url: '${opts.url}' must start with http:// or https://`);
    }
    this.label = this.base.origin;
    this.token = opts.token;
    this.timeoutMs = opts.timeoutMs ?? 10_000;
  }

  /** One request whose answer body must match `schema` (errors as for every other call). */
  call<S extends z.ZodType>(
    schema: S,
    method: 'GET' | 'POST',
    path: string,
    body?: unknown,
  ): Promise<z.output<S>> {
    return this.request(schema, method, path, body);
  }

  private async request<S extends z.ZodType>(
    schema: S,
    method: 'GET' | 'POST',
    path: string,
    body?: unknown,
  ): Promise<z.output<S>> {
    const url = new URL(path, this.base);
    let res: Response;
    try {
      res = await fetch(url, {
        method,
        headers: {
          accept: 'application/json',
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
          ...(this.token ? { authorization: `Bearer ${this.token}` } : {}),
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (cause) {
      const why =
        cause instanceof Error && cause.name === 'TimeoutError'
          ? `no answer within ${this.timeoutMs} ms`
          : 'connection failed';
      throw new CliError(
        'unavailable',
        `cannot reach the orchestrator at ${this.label} (${why}; is it running?)`,
        {
          cause,
        },
      );
    }
    const text = await res.text();
    let json: unknown;
    try {
      json = text === '' ? undefined : JSON.parse(text);
    } catch {
      json = undefined;
    }
    if (!res.ok) throw this.httpError(res.status, method, url.pathname, json);
    const parsed = schema.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const where = issue
        ? `$${issue.path.map((k) => (typeof k === 'number' ? `[${k}]` : `.${String(k)}`)).join('')}`
        : '$';
      throw new CliError(
        'error',
        `unexpected answer from ${this.label} to ${method} ${url.pathname} (${where}: ${issue?.message ?? 'invalid'}); is it a ccagent orchestrator of the same version?`,
      );
    }
    return parsed.data;
  }

  private httpError(status: number, method: string, path: string, json: unknown): CliError {
    const body = wireBodies.error.safeParse(json);
    if (!body.success) {
      return new CliError(
        'error',
        `${this.label} answered ${method} ${path} with HTTP ${status} and no ccagent error body; is it a ccagent orchestrator?`,
      );
    }
    const { code, message } = body.data.error;
    if (status === 401) return new CliError('error', `${message} (set CCAGENT_TOKEN or pass --token-file)`);
    if (status === 404 && message.startsWith('no route')) {
      return new CliError(
        'error',
        `${this.label} does not serve ${method} ${path}; is it an older orchestrator?`,
      );
    }
    if (status === 404) return new CliError('not_found', message);
    if (status === 400) return new CliError('usage', message);
    return new CliError(code === 'unavailable' ? 'unavailable' : 'error', message);
  }

  async listTasks(q: TaskListQuery): Promise<TaskPageView> {
    const params = new URLSearchParams();
    if (q.status?.length) params.set('status', q.status.join(','));
    if (q.kind) params.set('kind', q.kind);
    if (q.client) params.set('client', q.client);
    params.set('limit', String(q.limit));
    params.set('offset', String(q.offset));
    return this.request(wireBodies.taskPage, 'GET', `/api/tasks?${params}`);
  }

  async getTask(id: string): Promise<TaskDetail> {
    return this.request(wireBodies.taskDetail, 'GET', `/api/tasks/${encodeURIComponent(id)}`);
  }

  async getTaskUpdates(id: string, afterSeq: number, limit: number): Promise<TaskUpdates> {
    const params = new URLSearchParams({ after_seq: String(afterSeq), limit: String(limit) });
    return this.request(wireBodies.taskSteps, 'GET', `/api/tasks/${encodeURIComponent(id)}/steps?${params}`);
  }

  async listClients(): Promise<ClientView[]> {
    return this.request(wireBodies.clients, 'GET', '/api/clients');
  }

  async listModels(): Promise<ModelsResponse> {
    return this.request(wireBodies.models, 'GET', '/api/models');
  }

  async listTools(): Promise<ToolView[]> {
    return this.request(wireBodies.tools, 'GET', '/api/tools');
  }

  async createTask(input: CreateTaskInput): Promise<{ task: TaskView; created: boolean }> {
    return this.request(wireBodies.created, 'POST', '/api/tasks', {
      task_kind: input.kind,
      prompt: input.prompt,
      ...(input.clientId !== undefined ? { client_id: input.clientId } : {}),
      ...(input.allowedCommands !== undefined ? { allowed_commands: input.allowedCommands } : {}),
      ...(input.settings !== undefined ? { settings: input.settings } : {}),
      ...(input.name !== undefined ? { name: input.name } : {}),
    });
  }

  async event(agent: string, name: string, data?: unknown, clientId?: string): Promise<TaskView> {
    return this.request(wireBodies.task, 'POST', `/api/agents/${encodeURIComponent(agent)}/events`, {
      name,
      ...(data !== undefined ? { data } : {}),
      ...(clientId !== undefined ? { client_id: clientId } : {}),
    });
  }

  async message(id: string, text: string): Promise<TaskView> {
    return this.request(wireBodies.task, 'POST', `/api/tasks/${encodeURIComponent(id)}/messages`, { text });
  }

  async retry(id: string): Promise<TaskView> {
    return this.request(wireBodies.task, 'POST', `/api/tasks/${encodeURIComponent(id)}/retry`, {});
  }

  async cancelTask(id: string, reason?: string): Promise<TaskView> {
    return this.request(
      wireBodies.task,
      'POST',
      `/api/tasks/${encodeURIComponent(id)}/cancel`,
      reason !== undefined ? { reason } : {},
    );
  }

  async answer(id: string, text: string, questionId?: string): Promise<TaskView> {
    return this.request(wireBodies.task, 'POST', `/api/tasks/${encodeURIComponent(id)}/answer`, {
      text,
      ...(questionId !== undefined ? { question_id: questionId } : {}),
    });
  }

  /** Wake-ups from the server's event stream for `tasks follow` (undefined from a server without one). */
  watchTask(
    id: string,
    onDelta?: DeltaListener,
    options: { summaries?: boolean } = {},
  ): Promise<TaskWatch | undefined> {
    // CCAGENT_EVENTS_WAIT_MS: how long the event stream may take to say hello before follow polls (a proxy that
    // buffers responses holds it back); default FIRST_RECORD_MS.
    const wait = Number(process.env['CCAGENT_EVENTS_WAIT_MS']);
    return openTaskWatch(this.base, id, this.token, {
      ...(onDelta ? { onDelta } : {}),
      ...(options.summaries ? { summaries: true } : {}),
      ...(Number.isInteger(wait) && wait > 0 ? { firstRecordMs: wait } : {}),
    });
  }

  async close(): Promise<void> {}
}
