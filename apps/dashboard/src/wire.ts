/** The JSON shapes of the orchestrator's HTTP API that the dashboard reads (snake_case, as on the wire). */

/** Task statuses, in the order the filter shows them. */
export const STATUSES = [
  'queued',
  'running',
  'waiting_for_command',
  'waiting_for_user',
  'completed',
  'failed',
  'cancelled',
] as const;

/** A task as `GET /api/tasks` and the `task` event carry it. */
export interface WireTask {
  id: string;
  kind: string;
  status: string;
  client_id: string | null;
  prompt: string;
  prompt_truncated?: boolean;
  counters: { steps: number; tool_calls: number; questions: number };
  created_at: number;
  updated_at: number;
  progress?: number;
  progress_message?: string;
  error?: { code: string; message: string };
  result?: unknown;
  budgets?: Record<string, number>;
  allowed_commands?: string[];
  metadata?: Record<string, unknown>;
  settings?: Record<string, unknown>;
}

/** One step-log record (`summary=1` replaces input/output with their sizes). */
export interface WireStep {
  seq: number;
  step: number;
  kind: string;
  at: number;
  model?: string;
  input?: unknown;
  output?: unknown;
  input_chars?: number;
  output_chars?: number;
  directive?: unknown;
  validation_errors?: string[];
  tool_call?: unknown;
  tool_result?: unknown;
  error?: { code?: string; message?: string };
  started_at?: number;
  duration_ms?: number;
  usage?: { prompt_tokens?: number; completion_tokens?: number; total_duration_ms?: number };
  /** A `model_request` record (summary form): the kind of the call it announces. */
  role?: string;
}

/** A question to the user. */
export interface WireQuestion {
  question_id: string;
  question: string;
  why?: string;
  answer?: string;
  asked_at: number;
  answered_at?: number;
}

/** A command call. */
export interface WireCall {
  call_id: string;
  command: string;
  args: unknown;
  status: string;
  outcome?: unknown;
  sent_to?: string;
  created_at: number;
  completed_at?: number;
}

/** `GET /api/tasks/:id`. */
export interface TaskDetail {
  task: WireTask;
  questions: WireQuestion[];
  command_calls: WireCall[];
}

/** `GET /api/tasks/:id/steps`. */
export interface StepsPage {
  task: WireTask;
  steps: WireStep[];
  questions: WireQuestion[];
  has_more: boolean;
  next_after_seq: number;
}

/** `GET /api/clients` entry. */
export interface WireClient {
  client_id: string;
  connected: boolean;
  in_grace: boolean;
  client_version?: string;
  first_seen_at?: number;
  last_seen_at: number;
  commands: { name: string; description?: string; timeout_ms?: number }[];
}

/** `GET /api/tools` entry. */
export interface WireTool {
  client_id: string;
  name: string;
  status: string;
  version: number;
  description?: string;
  file?: string;
  updated_at?: number;
}

/** `GET /health`. */
export interface WireHealth {
  ok: boolean;
  degraded: boolean;
  version: string;
  uptime_s: number;
  db: { ok: boolean; path: string; error?: string };
  model_servers: {
    provider: string;
    url: string;
    reachable: boolean;
    version?: string;
    error?: string;
    present: string[];
    missing: string[];
  }[];
  models: { missing: string[] };
  clients: { connected: number };
}
