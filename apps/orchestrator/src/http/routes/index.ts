/**
 * The route table: one entry per HTTP route, matched in order against the URL path. A new route: its handler in the
 * module of its concern (or a new one in this folder) and one entry here; docs/http-api.md lists it.
 */
import type { Route } from '../route.js';
import { listClients, listTools } from './clients.js';
import { dashboardFeatures, dashboardFile, eventStream } from './dashboard.js';
import { health, metricsText } from './health.js';
import { installer, luaFile, manifest } from './lua.js';
import { createMinecraftTask, listInstances, retryMinecraftTask, stopInstance } from './minecraft.js';
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
import { postEvent, postMessage, retryTask } from './steering.js';
import { answerTask, cancelTask, createTask, getSteps, getTask, listTasks } from './tasks.js';

/** Every route of the HTTP API. */
export const ROUTES: readonly Route[] = [
  { method: 'GET', pattern: /^\/health$/, name: 'health', open: true, handler: health },
  { method: 'GET', pattern: /^\/api\/tasks$/, name: 'tasks.list', handler: listTasks },
  { method: 'POST', pattern: /^\/api\/tasks$/, name: 'tasks.create', handler: createTask },
  { method: 'GET', pattern: /^\/api\/tasks\/([^/]+)$/, name: 'tasks.get', handler: getTask },
  { method: 'GET', pattern: /^\/api\/tasks\/([^/]+)\/steps$/, name: 'tasks.steps', handler: getSteps },
  { method: 'POST', pattern: /^\/api\/tasks\/([^/]+)\/cancel$/, name: 'tasks.cancel', handler: cancelTask },
  { method: 'POST', pattern: /^\/api\/tasks\/([^/]+)\/answer$/, name: 'tasks.answer', handler: answerTask },
  {
    method: 'POST',
    pattern: /^\/api\/tasks\/([^/]+)\/messages$/,
    name: 'tasks.message',
    handler: postMessage,
  },
  { method: 'POST', pattern: /^\/api\/tasks\/([^/]+)\/events$/, name: 'tasks.event', handler: postEvent },
  { method: 'POST', pattern: /^\/api\/tasks\/([^/]+)\/retry$/, name: 'tasks.retry', handler: retryTask },
  { method: 'GET', pattern: /^\/api\/events$/, name: 'events', handler: eventStream },
  { method: 'GET', pattern: /^\/api\/dashboard$/, name: 'dashboard.features', handler: dashboardFeatures },
  // The page and its hashed assets hold no secret; the API requests it makes carry the token.
  {
    method: 'GET',
    pattern: /^\/(?:index\.html|assets\/[^/]+)?$/,
    name: 'dashboard',
    open: true,
    handler: dashboardFile,
  },
  { method: 'GET', pattern: /^\/api\/clients$/, name: 'clients', handler: listClients },
  { method: 'GET', pattern: /^\/api\/tools$/, name: 'tools', handler: listTools },
  // Pairing is open (the enrollment code is the credential); keys and the audit log are for operators (the front
  // checks the role before the API sees the request).
  { method: 'POST', pattern: /^\/api\/pair$/, name: 'security.pair', open: true, handler: pair },
  {
    method: 'POST',
    pattern: /^\/api\/pair\/request$/,
    name: 'security.pair_request',
    open: true,
    handler: pairRequest,
  },
  {
    method: 'POST',
    pattern: /^\/api\/pair\/collect$/,
    name: 'security.pair_collect',
    open: true,
    handler: pairCollect,
  },
  { method: 'GET', pattern: /^\/api\/credentials$/, name: 'security.credentials', handler: listCredentials },
  { method: 'POST', pattern: /^\/api\/credentials\/enroll$/, name: 'security.enroll', handler: enroll },
  { method: 'POST', pattern: /^\/api\/credentials\/revoke$/, name: 'security.revoke', handler: revoke },
  { method: 'POST', pattern: /^\/api\/credentials\/rotate$/, name: 'security.rotate', handler: rotate },
  { method: 'POST', pattern: /^\/api\/credentials\/keys$/, name: 'security.keys', handler: createKey },
  {
    method: 'GET',
    pattern: /^\/api\/credentials\/pairings$/,
    name: 'security.pairings',
    handler: listPairings,
  },
  {
    method: 'POST',
    pattern: /^\/api\/credentials\/pairings\/approve$/,
    name: 'security.approve',
    handler: approvePairing,
  },
  {
    method: 'POST',
    pattern: /^\/api\/credentials\/pairings\/deny$/,
    name: 'security.deny',
    handler: denyPairing,
  },
  { method: 'GET', pattern: /^\/api\/audit$/, name: 'security.audit', handler: listAudit },
  {
    method: 'GET',
    pattern: /^\/api\/minecraft\/instances$/,
    name: 'minecraft.instances',
    handler: listInstances,
  },
  {
    method: 'POST',
    pattern: /^\/api\/minecraft\/instances\/([^/]+)\/stop$/,
    name: 'minecraft.stop',
    handler: stopInstance,
  },
  {
    method: 'POST',
    pattern: /^\/api\/minecraft\/tasks$/,
    name: 'minecraft.create',
    handler: createMinecraftTask,
  },
  {
    method: 'POST',
    pattern: /^\/api\/minecraft\/tasks\/([^/]+)\/retry$/,
    name: 'minecraft.retry',
    handler: retryMinecraftTask,
  },
  { method: 'GET', pattern: /^\/metrics$/, name: 'metrics', handler: metricsText },
  // CC's `wget run` cannot send an Authorization header, and the bundle holds no secret: open.
  { method: 'GET', pattern: /^\/lua\/install\.lua$/, name: 'lua.install', open: true, handler: installer },
  { method: 'GET', pattern: /^\/lua\/manifest\.json$/, name: 'lua.manifest', open: true, handler: manifest },
  { method: 'GET', pattern: /^\/lua\/files\/(.+)$/, name: 'lua.file', open: true, handler: luaFile },
];
