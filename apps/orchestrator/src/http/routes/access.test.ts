import { HTTP_ROUTES } from '@ccagent/protocol';
import { describe, expect, it } from 'vitest';
import { ROUTE_ACCESS } from '../../security/route-access.js';
import { ROUTES } from './index.js';

/** A concrete path for a documented path pattern. */
const sample = (path: string): string => path.replace(':id', 'task-1').replace('<path>', 'ccagent/json.lua');

describe('who may call each route', () => {
  it('is declared on every route of the table, and this is the list (guards against a route without an access, or one whose access changed unseen)', () => {
    for (const r of ROUTES) expect(ROUTE_ACCESS, `${r.method} ${r.name}`).toContain(r.access);
    expect(ROUTES.map((r) => `${r.method} ${r.name}: ${r.access}`)).toEqual([
      'GET health: public',
      'GET tasks.list: task_list',
      'POST tasks.create: task_create',
      'GET tasks.get: task_read',
      'GET tasks.steps: task_read',
      'POST tasks.cancel: task_act',
      'POST tasks.answer: task_act',
      'POST tasks.message: operator',
      'POST tasks.event: operator',
      'POST agents.event: operator',
      'POST tasks.retry: operator',
      'GET task_kinds.list: read',
      'POST task_kinds.save: operator',
      'POST task_kinds.remove: operator',
      'GET schedules.list: read',
      'POST schedules.add: operator',
      'POST schedules.pause: operator',
      'POST schedules.resume: operator',
      'POST schedules.remove: operator',
      'GET events: view',
      'GET dashboard.features: view',
      'GET dashboard: public',
      'GET clients: read',
      'GET clients.screen: read',
      'GET clients.screen_stream: read',
      'GET clients.screen_switch: read',
      'POST clients.screen_switch_set: operator',
      'GET models: read',
      'GET tools: read',
      'POST security.pair: pairing',
      'POST security.pair_request: pairing',
      'POST security.pair_collect: pairing',
      'GET security.credentials: operator',
      'POST security.enroll: operator',
      'POST security.revoke: operator',
      'POST security.rotate: operator',
      'POST security.keys: operator',
      'GET security.pairings: operator',
      'POST security.approve: operator',
      'POST security.deny: operator',
      'GET security.audit: operator',
      'GET minecraft.instances: view',
      'GET minecraft.activity: view',
      'POST minecraft.stop: operator',
      'POST minecraft.create: operator',
      'POST minecraft.retry: operator',
      'GET minecraft.detect: view',
      'POST minecraft.connect: operator',
      'POST minecraft.prompt: operator',
      'POST minecraft.stop_task: operator',
      'GET minecraft.status: view',
      'GET minecraft.actions: view',
      'POST minecraft.set_actions: operator',
      'GET metrics: read',
      'GET lua.install: public',
      'GET lua.manifest: public',
      'GET lua.file: public',
    ]);
  });

  it('never lets a reading access change state, and names the task a task access is about (guards against a viewer or another computer reaching a write through a mis-declared route)', () => {
    for (const r of ROUTES) {
      const where = `${r.method} ${r.name}`;
      // A POST changes something: only an operator, a computer on its own task (or creating one for itself or its
      // group, decided on the body), or pairing's own credential.
      if (r.method === 'POST')
        expect(['operator', 'task_act', 'task_create', 'pairing'], where).toContain(r.access);
      // Public routes are only read, and carry no query a check could disagree on.
      if (r.access === 'public') expect([r.method, r.query], where).toEqual(['GET', undefined]);
      // A task access decides on the task the path names.
      if (r.access === 'task_read' || r.access === 'task_act')
        expect(r.pattern.source, where).toContain('(?<id>');
      // The task list's own-client rule reads the parsed `client` parameter.
      if (r.access === 'task_list') expect(r.query?.safeParse({ client: 'pc-1' }).success, where).toBe(true);
    }
  });

  it('parses each route’s query with the schema @ccagent/protocol documents for it (guards against a check and a route, or the reference and the server, reading different parameters)', () => {
    for (const spec of HTTP_ROUTES) {
      const r = ROUTES.find((x) => x.method === spec.method && x.pattern.test(sample(spec.path)));
      expect(r?.query, `${spec.method} ${spec.path}`).toBe(spec.query);
    }
  });
});
