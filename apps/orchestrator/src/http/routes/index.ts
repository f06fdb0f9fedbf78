/**
 * The route table: one entry per HTTP route, matched in order against the URL path. Each entry says what the route
 * is — its method and path (named groups are its path parameters), who may call it (`access`, decided by a lookup
 * in security/route-access.ts on the one parsed request), the query it reads (a @ccagent/protocol schema, parsed
 * once by the server), whether its success is audited — and its handler. A new route: its handler in the module of
 * its concern (or a new one in this folder) and one entry here; docs/http-api.md lists it.
 */
import {
  AuditQuerySchema,
  EventsQuerySchema,
  StepsQuerySchema,
  TaskDetailQuerySchema,
  TaskListQuerySchema,
  ToolsQuerySchema,
} from '@ccagent/protocol';
import { route, type Route } from '../route.js';
import { listClients, listTools } from './clients.js';
import { dashboardFeatures, dashboardFile, eventStream } from './dashboard.js';
import { health, metricsText } from './health.js';
import { installer, luaFile, manifest } from './lua.js';
import { listModels } from './models.js';
import { createMinecraftTask, listInstances, retryMinecraftTask, stopInstance } from './minecraft.js';
import { instanceActivity } from './minecraft-activity.js';
import {
  connectInstance,
  detectInstances,
  getActionPolicy,
  getStatus,
  sendPrompt,
  setActionPolicy,
  stopTask,
} from './minecraft-channels.js';
import {
  approvePairing,
  createKey,
  denyPairing,
  enroll,
  listAudit,
  listCredentials,
  listPairings,
  pair,
  pairCollect,
  pairRequest,
  revoke,
  rotate,
} from './security.js';
import { getScreen, getScreenSwitch, setScreenSwitch, watchScreen } from './screens.js';
import { addSchedule, listSchedules, pauseSchedule, removeSchedule, resumeSchedule } from './schedules.js';
import { listTaskKinds, removeTaskKind, saveTaskKind } from './task-kinds.js';
import { postAgentEvent, postEvent, postMessage, retryTask } from './steering.js';
import { answerTask, cancelTask, createTask, getSteps, getTask, listTasks } from './tasks.js';

/** Why keys, pairing decisions and the audit log are refused to others. */
const KEYS_ONLY = {
  viewer: 'only an operator manages keys and reads the audit log',
  computer: 'only an operator manages keys and reads the audit log',
};

/** Every route of the HTTP API. */
export const ROUTES: readonly Route[] = [
  route({ method: 'GET', pattern: /^\/health$/, name: 'health', access: 'public', handler: health }),
  route({
    method: 'GET',
    pattern: /^\/api\/tasks$/,
    name: 'tasks.list',
    access: 'task_list',
    query: TaskListQuerySchema,
    handler: listTasks,
  }),
  route({
    method: 'POST',
    pattern: /^\/api\/tasks$/,
    name: 'tasks.create',
    access: 'task_create',
    audit: 'task.create',
    handler: createTask,
  }),
  route({
    method: 'GET',
    pattern: /^\/api\/tasks\/(?<id>[^/]+)$/,
    name: 'tasks.get',
    access: 'task_read',
    query: TaskDetailQuerySchema,
    handler: getTask,
  }),
  route({
    method: 'GET',
    pattern: /^\/api\/tasks\/(?<id>[^/]+)\/steps$/,
    name: 'tasks.steps',
    access: 'task_read',
    query: StepsQuerySchema,
    handler: getSteps,
  }),
  route({
    method: 'POST',
    pattern: /^\/api\/tasks\/(?<id>[^/]+)\/cancel$/,
    name: 'tasks.cancel',
    access: 'task_act',
    audit: 'task.cancel',
    handler: cancelTask,
  }),
  route({
    method: 'POST',
    pattern: /^\/api\/tasks\/(?<id>[^/]+)\/answer$/,
    name: 'tasks.answer',
    access: 'task_act',
    audit: 'task.answer',
    handler: answerTask,
  }),
  route({
    method: 'POST',
    pattern: /^\/api\/tasks\/(?<id>[^/]+)\/messages$/,
    name: 'tasks.message',
    access: 'operator',
    handler: postMessage,
  }),
  route({
    method: 'POST',
    pattern: /^\/api\/tasks\/(?<id>[^/]+)\/events$/,
    name: 'tasks.event',
    access: 'operator',
    handler: postEvent,
  }),
  route({
    method: 'POST',
    pattern: /^\/api\/agents\/(?<name>[^/]+)\/events$/,
    name: 'agents.event',
    access: 'operator',
    handler: postAgentEvent,
  }),
  route({
    method: 'POST',
    pattern: /^\/api\/tasks\/(?<id>[^/]+)\/retry$/,
    name: 'tasks.retry',
    access: 'operator',
    handler: retryTask,
  }),
  route({
    method: 'GET',
    pattern: /^\/api\/task-kinds$/,
    name: 'task_kinds.list',
    access: 'read',
    handler: listTaskKinds,
  }),
  route({
    method: 'POST',
    pattern: /^\/api\/task-kinds\/(?<name>[^/]+)$/,
    name: 'task_kinds.save',
    access: 'operator',
    audit: 'task_kind.save',
    handler: saveTaskKind,
  }),
  route({
    method: 'POST',
    pattern: /^\/api\/task-kinds\/(?<name>[^/]+)\/remove$/,
    name: 'task_kinds.remove',
    access: 'operator',
    audit: 'task_kind.remove',
    handler: removeTaskKind,
  }),
  route({
    method: 'GET',
    pattern: /^\/api\/schedules$/,
    name: 'schedules.list',
    access: 'read',
    handler: listSchedules,
  }),
  route({
    method: 'POST',
    pattern: /^\/api\/schedules$/,
    name: 'schedules.add',
    access: 'operator',
    audit: 'schedule.add',
    handler: addSchedule,
  }),
  route({
    method: 'POST',
    pattern: /^\/api\/schedules\/(?<id>[^/]+)\/pause$/,
    name: 'schedules.pause',
    access: 'operator',
    audit: 'schedule.pause',
    handler: pauseSchedule,
  }),
  route({
    method: 'POST',
    pattern: /^\/api\/schedules\/(?<id>[^/]+)\/resume$/,
    name: 'schedules.resume',
    access: 'operator',
    audit: 'schedule.resume',
    handler: resumeSchedule,
  }),
  route({
    method: 'POST',
    pattern: /^\/api\/schedules\/(?<id>[^/]+)\/remove$/,
    name: 'schedules.remove',
    access: 'operator',
    audit: 'schedule.remove',
    handler: removeSchedule,
  }),
  route({
    method: 'GET',
    pattern: /^\/api\/events$/,
    name: 'events',
    access: 'view',
    query: EventsQuerySchema,
    handler: eventStream,
  }),
  route({
    method: 'GET',
    pattern: /^\/api\/dashboard$/,
    name: 'dashboard.features',
    access: 'view',
    handler: dashboardFeatures,
  }),
  // The page and its hashed assets hold no secret; the API requests it makes carry the key.
  route({
    method: 'GET',
    pattern: /^\/(?:index\.html|assets\/[^/]+)?$/,
    name: 'dashboard',
    access: 'public',
    handler: dashboardFile,
  }),
  route({
    method: 'GET',
    pattern: /^\/api\/clients$/,
    name: 'clients',
    access: 'read',
    handler: listClients,
  }),
  // The screen mirror is read-only: whoever may read the clients may watch their screens.
  route({
    method: 'GET',
    pattern: /^\/api\/clients\/(?<id>[^/]+)\/screen$/,
    name: 'clients.screen',
    access: 'read',
    handler: getScreen,
  }),
  route({
    method: 'GET',
    pattern: /^\/api\/clients\/(?<id>[^/]+)\/screen\/stream$/,
    name: 'clients.screen_stream',
    access: 'read',
    handler: watchScreen,
  }),
  route({
    method: 'GET',
    pattern: /^\/api\/clients\/(?<id>[^/]+)\/screen\/switch$/,
    name: 'clients.screen_switch',
    access: 'read',
    handler: getScreenSwitch,
  }),
  // Turning a screen on or off is the operator's: a viewer watches, a computer decides only its own side locally.
  route({
    method: 'POST',
    pattern: /^\/api\/clients\/(?<id>[^/]+)\/screen\/switch$/,
    name: 'clients.screen_switch_set',
    access: 'operator',
    refusal: {
      viewer: 'only an operator switches a screen mirror at the server',
      computer:
        'only an operator switches a screen mirror at the server (a computer turns its own off locally)',
    },
    audit: 'screen.switch',
    handler: setScreenSwitch,
  }),
  route({
    method: 'GET',
    pattern: /^\/api\/models$/,
    name: 'models',
    access: 'read',
    handler: listModels,
  }),
  route({
    method: 'GET',
    pattern: /^\/api\/tools$/,
    name: 'tools',
    access: 'read',
    query: ToolsQuerySchema,
    handler: listTools,
  }),
  // Pairing needs no key (the enrollment code, or the pairing request's secret, is the credential); keys, pairing
  // decisions and the audit log are for operators.
  route({
    method: 'POST',
    pattern: /^\/api\/pair$/,
    name: 'security.pair',
    access: 'pairing',
    handler: pair,
  }),
  route({
    method: 'POST',
    pattern: /^\/api\/pair\/request$/,
    name: 'security.pair_request',
    access: 'pairing',
    handler: pairRequest,
  }),
  route({
    method: 'POST',
    pattern: /^\/api\/pair\/collect$/,
    name: 'security.pair_collect',
    access: 'pairing',
    handler: pairCollect,
  }),
  route({
    method: 'GET',
    pattern: /^\/api\/credentials$/,
    name: 'security.credentials',
    access: 'operator',
    refusal: KEYS_ONLY,
    handler: listCredentials,
  }),
  route({
    method: 'POST',
    pattern: /^\/api\/credentials\/enroll$/,
    name: 'security.enroll',
    access: 'operator',
    refusal: KEYS_ONLY,
    handler: enroll,
  }),
  route({
    method: 'POST',
    pattern: /^\/api\/credentials\/revoke$/,
    name: 'security.revoke',
    access: 'operator',
    refusal: KEYS_ONLY,
    handler: revoke,
  }),
  route({
    method: 'POST',
    pattern: /^\/api\/credentials\/rotate$/,
    name: 'security.rotate',
    access: 'operator',
    refusal: KEYS_ONLY,
    handler: rotate,
  }),
  route({
    method: 'POST',
    pattern: /^\/api\/credentials\/keys$/,
    name: 'security.keys',
    access: 'operator',
    refusal: KEYS_ONLY,
    handler: createKey,
  }),
  route({
    method: 'GET',
    pattern: /^\/api\/credentials\/pairings$/,
    name: 'security.pairings',
    access: 'operator',
    refusal: KEYS_ONLY,
    handler: listPairings,
  }),
  route({
    method: 'POST',
    pattern: /^\/api\/credentials\/pairings\/approve$/,
    name: 'security.approve',
    access: 'operator',
    refusal: KEYS_ONLY,
    handler: approvePairing,
  }),
  route({
    method: 'POST',
    pattern: /^\/api\/credentials\/pairings\/deny$/,
    name: 'security.deny',
    access: 'operator',
    refusal: KEYS_ONLY,
    handler: denyPairing,
  }),
  route({
    method: 'GET',
    pattern: /^\/api\/audit$/,
    name: 'security.audit',
    access: 'operator',
    refusal: KEYS_ONLY,
    query: AuditQuerySchema,
    handler: listAudit,
  }),
  route({
    method: 'GET',
    pattern: /^\/api\/minecraft\/instances$/,
    name: 'minecraft.instances',
    access: 'view',
    handler: listInstances,
  }),
  // The instance page: what is happening now; `GET /api/events` streams what follows. A viewer may watch.
  route({
    method: 'GET',
    pattern: /^\/api\/minecraft\/instances\/(?<id>[^/]+)\/activity$/,
    name: 'minecraft.activity',
    access: 'view',
    handler: instanceActivity,
  }),
  route({
    method: 'POST',
    pattern: /^\/api\/minecraft\/instances\/(?<id>[^/]+)\/stop$/,
    name: 'minecraft.stop',
    access: 'operator',
    audit: 'minecraft.stop',
    handler: stopInstance,
  }),
  route({
    method: 'POST',
    pattern: /^\/api\/minecraft\/tasks$/,
    name: 'minecraft.create',
    access: 'operator',
    audit: 'minecraft.create',
    handler: createMinecraftTask,
  }),
  route({
    method: 'POST',
    pattern: /^\/api\/minecraft\/tasks\/(?<id>[^/]+)\/retry$/,
    name: 'minecraft.retry',
    access: 'operator',
    audit: 'minecraft.retry',
    handler: retryMinecraftTask,
  }),
  // The seed's channels (same roles as the routes above: reading is a viewer's, changing an operator's, audited).
  route({
    method: 'GET',
    pattern: /^\/api\/minecraft\/detect-instances$/,
    name: 'minecraft.detect',
    access: 'view',
    handler: detectInstances,
  }),
  route({
    method: 'POST',
    pattern: /^\/api\/minecraft\/connect-instance$/,
    name: 'minecraft.connect',
    access: 'operator',
    audit: 'minecraft.connect',
    handler: connectInstance,
  }),
  route({
    method: 'POST',
    pattern: /^\/api\/minecraft\/send-prompt$/,
    name: 'minecraft.prompt',
    access: 'operator',
    audit: 'minecraft.prompt',
    handler: sendPrompt,
  }),
  route({
    method: 'POST',
    pattern: /^\/api\/minecraft\/stop-task$/,
    name: 'minecraft.stop_task',
    access: 'operator',
    audit: 'minecraft.stop_task',
    handler: stopTask,
  }),
  route({
    method: 'GET',
    pattern: /^\/api\/minecraft\/get-status$/,
    name: 'minecraft.status',
    access: 'view',
    handler: getStatus,
  }),
  route({
    method: 'GET',
    pattern: /^\/api\/minecraft\/instances\/(?<id>[^/]+)\/actions$/,
    name: 'minecraft.actions',
    access: 'view',
    handler: getActionPolicy,
  }),
  route({
    method: 'POST',
    pattern: /^\/api\/minecraft\/instances\/(?<id>[^/]+)\/actions$/,
    name: 'minecraft.set_actions',
    access: 'operator',
    audit: 'minecraft.set_actions',
    handler: setActionPolicy,
  }),
  route({ method: 'GET', pattern: /^\/metrics$/, name: 'metrics', access: 'read', handler: metricsText }),
  // CC's `wget run` cannot send an Authorization header, and the bundle holds no secret: public.
  route({
    method: 'GET',
    pattern: /^\/lua\/install\.lua$/,
    name: 'lua.install',
    access: 'public',
    handler: installer,
  }),
  route({
    method: 'GET',
    pattern: /^\/lua\/manifest\.json$/,
    name: 'lua.manifest',
    access: 'public',
    handler: manifest,
  }),
  route({
    method: 'GET',
    pattern: /^\/lua\/files\/(?<path>.+)$/,
    name: 'lua.file',
    access: 'public',
    handler: luaFile,
  }),
];
