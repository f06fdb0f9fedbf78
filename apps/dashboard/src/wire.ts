/**
 * The JSON shapes of the orchestrator's HTTP API that the dashboard reads (snake_case, as on the wire): the types of
 * `@ccagent/protocol`, imported as types only, and its lists from `@ccagent/protocol/constants`, which imports
 * nothing. Neither brings the protocol's zod schemas into the bundle (importing the main entry's values would: +34 KB
 * gzip, measured), so the page trusts the shapes its own server sends instead of checking them at run time.
 */
import type {
  DashboardFeaturesResponse,
  HealthResponse,
  ModelsResponse,
  HttpClient,
  HttpCommandCall,
  HttpQuestion,
  HttpStep,
  HttpStepSummary,
  HttpTask,
  HttpTool,
  HttpServerTool,
  TaskDetailResponse,
  TaskStepsResponse,
  TaskWithoutStepsResponse,
} from '@ccagent/protocol';
import { TASK_STATUSES } from '@ccagent/protocol/constants';

/** Task statuses, in the order the filter shows them (lifecycle order). */
export const STATUSES = TASK_STATUSES;

/** A task as `GET /api/tasks` sends it; a `task` event's fields are merged into it (their prompt cut, then flagged). */
export type WireTask = HttpTask & { prompt_truncated?: boolean };

/**
 * One step-log record, whole (the selected record) or in its short form (`summary=1`, the timeline's rows: no input
 * or output, their sizes and a preview instead, and for a `model_request` record the role of the call it announces).
 */
export type WireStep = HttpStep &
  Partial<Pick<HttpStepSummary, 'input_chars' | 'output_chars' | 'preview' | 'role'>>;

/** A question to the user. */
export type WireQuestion = HttpQuestion;

/** A command call. */
export type WireCall = HttpCommandCall;

/** `GET /api/tasks/:id?steps=0`: the task, its questions and calls, without its step log and history. */
export type TaskDetail = TaskWithoutStepsResponse;

/** `GET /api/tasks/:id`: the task with its whole step log, history, calls and questions. */
export type TaskDetailWhole = TaskDetailResponse;

/** `GET /api/tasks/:id/steps` (the timeline asks for the `summary=1` rows). */
export type StepsPage = Omit<TaskStepsResponse, 'steps'> & { steps: WireStep[] };

/** `GET /api/clients` entry. */
export type WireClient = HttpClient;

/** `GET /api/tools` entry. */
export type WireTool = HttpTool;
/** `GET /api/tools` `server_tools` entry: a tool the server runs itself. */
export type WireServerTool = HttpServerTool;

/** `GET /health`. */
export type WireHealth = HealthResponse;
/** `GET /api/models`: the roles' models and each pool of servers. */
export type WireModels = ModelsResponse;

/** `GET /api/dashboard` (`role` and `version` are missing from an older server). */
export type WireFeatures = Omit<DashboardFeaturesResponse, 'role' | 'version'> &
  Partial<Pick<DashboardFeaturesResponse, 'role' | 'version'>>;
