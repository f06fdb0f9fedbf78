// Model-written tools on a real CC:Tweaked computer: the lifecycle draft → test → active → retired driven through
// the host's commands, exactly as a model would, and a broken tool file that must not take the host down.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { ClientMessage } from '@ccagent/protocol';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HOST_PROGRAM } from './host-program.js';
import { Scenario, craftos } from './scenario.js';

type Obj = Record<string, unknown>;
interface Result {
  ok: boolean;
  result: Obj;
  error: Obj;
}
type Hello = Extract<ClientMessage, { type: 'hello' }>;
type ToolsUpdate = Extract<ClientMessage, { type: 'tools_update' }>;

const GREET_V1 = `return function(args, ctx)
  print("greeting " .. args.who)
  return { greeting = "hello " .. args.who, version = ctx.version }
end`;
const GREET_V2 = `return { run = function(args, ctx) return { greeting = "hi " .. args.who, version = ctx.version } end }`;

describe.skipIf(!craftos)('model-written tools in CraftOS', () => {
  let s: Scenario;
  beforeEach(async () => {
    s = await Scenario.start();
  });
  afterEach(async () => {
    expect(await s.end()).toEqual([]);
  });

  const call = async (command: string, args: Obj = {}): Promise<Result> =>
    (await s.server.call(command, args)) as unknown as Result;
  /** The newest tools_update once it shows `name` with `status`. */
  const toolsUpdate = (name: string, status: string, version: number): Promise<ToolsUpdate> =>
    s.server.waitFor<ToolsUpdate>(
      (m) =>
        m.type === 'tools_update' &&
        m.tools.some((t) => t.name === name && t.status === status && t.version === version),
    );
  /** The newest hello received so far. */
  const lastHello = (): Hello => s.server.received.filter((m): m is Hello => m.type === 'hello').at(-1)!;
  const helloCount = (): number => s.server.received.filter((m) => m.type === 'hello').length;

  it('is created as a draft, tested, activated, called, replaced without downtime and retired', async () => {
    const c = s.boot(HOST_PROGRAM, { args: [s.server.url] });
    await s.server.hello();

    const created = await call('tool_create', {
      name: 'greet',
      code: GREET_V1,
      description: 'Greets someone',
      args_schema: { type: 'object', properties: { who: { type: 'string' } }, required: ['who'] },
    });
    expect(created.result).toMatchObject({ name: 'greet', status: 'draft', version: 1 });
    const draftUpdate = await toolsUpdate('greet', 'draft', 1);
    expect(draftUpdate.tools).toEqual([
      expect.objectContaining({ name: 'greet', status: 'draft', version: 1, file: '/tools/greet.lua' }),
    ]);
    expect(draftUpdate.tools[0]?.updated_at).toBeGreaterThan(1_600_000_000_000); // os.epoch("utc") ms

    // guards: a draft offered to tasks
    expect((await call('greet', { who: 'x' })).error.code).toBe('not_found');
    // guards: skipping the test step
    expect((await call('tool_set_status', { name: 'greet', status: 'active' })).error.code).toBe(
      'invalid_transition',
    );

    const tested = await call('tool_test', { name: 'greet', args: { who: 'bob' } });
    expect(tested.result).toMatchObject({
      ok: true,
      version: 1,
      output: 'greeting bob',
      result: { greeting: 'hello bob', version: 1 },
    });
    await toolsUpdate('greet', 'test', 1);

    const hellosBefore = helloCount();
    const activated = await call('tool_set_status', { name: 'greet', status: 'active' });
    expect(activated.result).toMatchObject({ status: 'active', version: 1 });
    await toolsUpdate('greet', 'active', 1);
    await s.server.waitFor(() => helloCount() > hellosBefore);
    const offered = lastHello().commands.find((x) => x.name === 'greet');
    expect(offered).toMatchObject({
      description: 'Greets someone',
      args_schema: { type: 'object', properties: { who: { type: 'string' } }, required: ['who'] },
    });
    expect((await call('greet', { who: 'ann' })).result).toEqual({ greeting: 'hello ann', version: 1 });

    // A new version is a draft; the active v1 keeps serving until v2 is activated (guards: downtime, or an
    // untested rewrite going live).
    const v2 = await call('tool_create', { name: 'greet', code: GREET_V2 });
    expect(v2.result).toMatchObject({ status: 'draft', version: 2, offered_version: 1 });
    await toolsUpdate('greet', 'draft', 2);
    expect((await call('greet', { who: 'ann' })).result).toEqual({ greeting: 'hello ann', version: 1 });
    expect(readFileSync(path.join(c.disk, 'tools', 'archive', 'greet.v1.lua'), 'utf8')).toBe(GREET_V1);
    expect((await call('tool_test', { name: 'greet', args: { who: 'cy' } })).result).toMatchObject({
      ok: true,
    });
    await call('tool_set_status', { name: 'greet', status: 'active' });
    await toolsUpdate('greet', 'active', 2);
    expect((await call('greet', { who: 'ann' })).result).toEqual({ greeting: 'hi ann', version: 2 });

    // Retired: no longer offered, archived, never deleted.
    const hellosBeforeRetire = helloCount();
    await call('tool_set_status', { name: 'greet', status: 'retired' });
    await toolsUpdate('greet', 'retired', 2);
    await s.server.waitFor(() => helloCount() > hellosBeforeRetire);
    expect(lastHello().commands.map((x) => x.name)).not.toContain('greet');
    expect((await call('greet', { who: 'ann' })).error.code).toBe('not_found');
    expect(existsSync(path.join(c.disk, 'tools', 'greet.lua'))).toBe(false);
    expect(readFileSync(path.join(c.disk, 'tools', 'archive', 'greet.v2.lua'), 'utf8')).toBe(GREET_V2);
    expect(readFileSync(path.join(c.disk, 'tools', 'archive', 'greet.v1.lua'), 'utf8')).toBe(GREET_V1);
    const list = await call('tool_list');
    expect(list.result.tools).toEqual([
      expect.objectContaining({ name: 'greet', status: 'retired', version: 2 }),
    ]);
  });

  it('a failing tool_test keeps the tool out of service and reports the error with its traceback', async () => {
    s.boot(HOST_PROGRAM, { args: [s.server.url] });
    await s.server.hello();
    await call('tool_create', { name: 'oops', code: 'return function(args) local t = nil return t.x end' });
    const t = await call('tool_test', { name: 'oops' });
    expect(t.ok).toBe(true);
    expect(t.result.ok).toBe(false);
    expect(t.result.error).toContain('attempt to index');
    expect(t.result.error).toContain('stack traceback');
    expect((await call('tool_set_status', { name: 'oops', status: 'active' })).error.message).toContain(
      'no passing tool_test',
    );
    const syntax = await call('tool_create', { name: 'oops', code: 'return function(' });
    expect(syntax.result).toMatchObject({ version: 2, status: 'draft' });
    const t2 = await call('tool_test', { name: 'oops' });
    expect(t2.result).toMatchObject({ ok: false });
    expect(t2.result.error).toContain('syntax error');
  });

  it('a broken or missing tool file is reported and skipped; the host and the other tools keep working', async () => {
    const registry = {
      good: { file: 'good.lua', status: 'active', version: 1, description: 'Good tool' },
      broken: { file: 'broken.lua', status: 'active', version: 1 },
      missing: { file: 'missing.lua', status: 'active', version: 1 },
      'Bad Name': { file: 'x.lua', status: 'active', version: 1 },
    };
    const c = s.boot(HOST_PROGRAM, {
      args: [s.server.url],
      files: {
        'tools/registry.json': JSON.stringify(registry),
        'tools/good.lua': 'return function() return { fine = true } end',
        'tools/broken.lua': 'return function( oops',
      },
    });
    const hello = await s.server.hello();
    const names = hello.commands.map((x) => x.name);
    expect(names).toContain('good');
    expect(names).not.toContain('broken');
    expect(names).not.toContain('missing');
    expect(c.stdout()).toContain('tool problem: broken');
    expect((await call('good')).result).toEqual({ fine: true });
    const list = await call('tool_list');
    const problems = (list.result.problems as { name: string; error: string }[]).map((p) => p.name).sort();
    expect(problems).toEqual(['broken', 'missing', 'registry']);
    expect(JSON.stringify(list.result.problems)).toContain('Bad Name');

    // the model repairs the file and reloads: the tool comes into service without restarting the host
    await call('fs_write', {
      path: '/tools/broken.lua',
      content: 'return function() return { fixed = true } end',
    });
    const reload = await call('tools_reload');
    expect(reload.result.loaded).toEqual(['broken', 'good']);
    expect((await call('broken')).result).toEqual({ fixed: true });
  });
});
