/**
 * Requests to the orchestrator that serves this page (same origin). The token, when the server needs one, goes in the
 * `Authorization` header only — never in a URL — and is kept in sessionStorage (or localStorage when the user asks
 * the browser to remember it).
 */
import type {
  StepsPage,
  TaskDetail,
  TaskDetailWhole,
  WireClient,
  WireFeatures,
  WireHealth,
  WireStep,
  WireTask,
  WireModels,
  WireTool,
  WireServerTool,
} from './wire.js';

const TOKEN_KEY = 'ccagent.token';

/** A refused or failed request, with the server's error code when it sent one. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** The field the server named (`$.definition.strategy`), when it named one. */
    readonly path?: string,
  ) {
    super(message);
  }
}

type AuthListener = () => void;
const authListeners = new Set<AuthListener>();

/** Called when the server answers 401 (the login field should show). Returns the unsubscribe function. */
export function onAuthNeeded(l: AuthListener): () => void {
  authListeners.add(l);
  return () => authListeners.delete(l);
}

function storage(kind: 'session' | 'local'): Storage | undefined {
  try {
    return kind === 'session' ? window.sessionStorage : window.localStorage;
  } catch {
    return undefined;
  }
}

/** The token in use, if any. */
export function getToken(): string | undefined {
  return storage('session')?.getItem(TOKEN_KEY) ?? storage('local')?.getItem(TOKEN_KEY) ?? undefined;
}

/** Use `token` from now on (`remember`: keep it after the browser closes). Empty forgets it. */
export function setToken(token: string, remember: boolean): void {
  storage('session')?.removeItem(TOKEN_KEY);
  storage('local')?.removeItem(TOKEN_KEY);
  if (token === '') return;
  storage(remember ? 'local' : 'session')?.setItem(TOKEN_KEY, token);
}

/** Headers every request carries. */
export function authHeaders(): Record<string, string> {
  const t = getToken();
  return t ? { authorization: `Bearer ${t}` } : {};
}

/** One JSON request; throws {@link ApiError} on a non-2xx answer or a network failure. */
export async function request<T>(
  path: string,
  init: { method?: string; body?: unknown; signal?: AbortSignal } = {},
): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json', ...authHeaders() };
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(path, {
      method: init.method ?? 'GET',
      headers,
      ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
      ...(init.signal ? { signal: init.signal } : {}),
      credentials: 'same-origin',
    });
  } catch (err) {
    if ((err as Error).name === 'AbortError') throw err;
    throw new ApiError(0, 'network', 'the orchestrator is not reachable (is it running?)');
  }
  const text = await res.text();
  let body: unknown = undefined;
  try {
    body = text === '' ? undefined : JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (!res.ok) {
    const e = (body as { error?: { code?: string; message?: string; path?: string } } | undefined)?.error;
    if (res.status === 401) for (const l of authListeners) l();
    throw new ApiError(
      res.status,
      e?.code ?? `http_${res.status}`,
      e?.message ?? `${res.status} ${res.statusText}`,
      e?.path,
    );
  }
  return body as T;
}

/** Query of `GET /api/tasks`. */
export interface TaskQuery {
  status?: string[];
  kind?: string;
  client?: string;
  q?: string;
  limit: number;
  offset: number;
}

function qs(params: Record<string, string | number | undefined>): string {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') u.set(k, String(v));
  const s = u.toString();
  return s === '' ? '' : `?${s}`;
}

/** The API the pages use. */
export const api = {
  listTasks: (q: TaskQuery, signal?: AbortSignal) =>
    request<{ tasks: WireTask[]; total: number }>(
      `/api/tasks${qs({
        status: q.status && q.status.length > 0 ? q.status.join(',') : undefined,
        kind: q.kind,
        client: q.client,
        q: q.q,
        limit: q.limit,
        offset: q.offset,
      })}`,
      signal ? { signal } : {},
    ),
  /** The task without its log; `messages`: with its follow-up messages (the conversation view shows them). */
  task: (id: string, messages = false) =>
    request<TaskDetail>(`/api/tasks/${encodeURIComponent(id)}?steps=0${messages ? '&messages=1' : ''}`),
  steps: (id: string, afterSeq: number, limit: number, summary: boolean) =>
    request<StepsPage>(
      `/api/tasks/${encodeURIComponent(id)}/steps${qs({ after_seq: afterSeq, limit, ...(summary ? { summary: 1 } : {}) })}`,
    ),
  /** Whole records without the model input (`input=0`): the conversation view. */
  records: (id: string, afterSeq: number, limit: number) =>
    request<StepsPage>(
      `/api/tasks/${encodeURIComponent(id)}/steps${qs({ after_seq: afterSeq, limit, input: 0 })}`,
    ),
  /** The task whole: every record with its model input, history, calls and questions (the JSON export). */
  taskWhole: (id: string) => request<TaskDetailWhole>(`/api/tasks/${encodeURIComponent(id)}`),
  step: async (id: string, seq: number): Promise<WireStep | undefined> => {
    const p = await request<StepsPage>(
      `/api/tasks/${encodeURIComponent(id)}/steps${qs({ after_seq: seq - 1, limit: 1 })}`,
    );
    return p.steps.find((s) => s.seq === seq);
  },
  create: (body: Record<string, unknown>) =>
    request<{ task: WireTask }>('/api/tasks', { method: 'POST', body }),
  cancel: (id: string) =>
    request<{ task: WireTask }>(`/api/tasks/${encodeURIComponent(id)}/cancel`, {
      method: 'POST',
      body: { reason: 'cancelled from the dashboard' },
    }),
  answer: (id: string, text: string, questionId?: string) =>
    request<{ task: WireTask }>(`/api/tasks/${encodeURIComponent(id)}/answer`, {
      method: 'POST',
      body: questionId !== undefined ? { text, question_id: questionId } : { text },
    }),
  message: (id: string, text: string) =>
    request<{ task: WireTask }>(`/api/tasks/${encodeURIComponent(id)}/messages`, {
      method: 'POST',
      body: { text, from: 'dashboard' },
    }),
  retry: (id: string) =>
    request<{ task: WireTask }>(`/api/tasks/${encodeURIComponent(id)}/retry`, { method: 'POST', body: {} }),
  clients: () => request<{ clients: WireClient[] }>('/api/clients'),
  tools: () => request<{ tools: WireTool[]; server_tools?: WireServerTool[] }>('/api/tools'),
  models: () => request<WireModels>('/api/models'),
  health: () => request<WireHealth>('/health'),
  features: () => request<WireFeatures>('/api/dashboard'),
};
