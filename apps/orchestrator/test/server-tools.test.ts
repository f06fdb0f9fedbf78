/**
 * Server-side tools in the orchestrator: docs/tools.md's examples run as printed (the embedding one in Node, the
 * tool module through the built server's config), a module that re-registers a name or cannot be loaded stops the
 * startup naming it, and a computer registering a command under a server tool's name has that command refused.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from './support/spawn.js';
import { useHarness } from './support/session.js';

const doc = readFileSync(fileURLToPath(new URL('../../../docs/tools.md', import.meta.url)), 'utf8');
/** The blocks of docs/tools.md whose first line is `// example: NAME`. */
const examples = new Map(
  [...doc.matchAll(/```(?:js|ts)\n\/\/ example: (\S+)\n([\s\S]*?)```/g)].map((m) => [
    m[1] as string,
    `// example: ${m[1] as string}\n${m[2] as string}`,
  ]),
);

// Inside the package, so `@ccagent/engine` resolves through the workspace's node_modules as it does for a user.
const dir = mkdtempSync(path.join(fileURLToPath(new URL('.', import.meta.url)), '.examples-'));
writeFileSync(path.join(dir, 'package.json'), '{ "type": "module" }\n');
const tmp = mkdtempSync(path.join(tmpdir(), 'ccagent-server-tools-'));
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
  rmSync(tmp, { recursive: true, force: true });
});

const t = useHarness();

describe('docs/tools.md', () => {
  it('has both examples (guards: the test silently running nothing)', () => {
    expect([...examples.keys()].sort()).toEqual(['dice.ts', 'engine-server-tools.mjs']);
  });

  it('the embedding example prints what the page says: the duplicate refused, a call run, bad arguments refused', () => {
    const file = path.join(dir, 'engine-server-tools.mjs');
    writeFileSync(file, examples.get('engine-server-tools.mjs') as string);
    const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1' };
    delete env.FORCE_COLOR;
    const out = execFileSync(process.execPath, [file], { cwd: dir, encoding: 'utf8', timeout: 20_000, env });
    const printed = /Prints:\n\n```\n([\s\S]*?)```/.exec(doc)?.[1];
    expect(printed).toBeDefined();
    expect(out).toBe(printed);
    expect(out).toContain('tool_exists a server tool named "add" is already registered');
  });

  it('the tool module loads through the config and runs with its defaults filled in', async () => {
    const moduleDir = path.join(tmp, 'tools');
    mkdirSync(moduleDir, { recursive: true });
    writeFileSync(path.join(moduleDir, 'dice.ts'), examples.get('dice.ts') as string);
    const { loadServerTools } = await import('../src/server-tools.js');
    const { loadConfig } = await import('../src/config.js');
    const cfgFile = path.join(tmp, 'ccagent.json');
    writeFileSync(cfgFile, JSON.stringify({ serverTools: { modules: ['tools/dice.ts'] } }));
    const cfg = loadConfig({ file: cfgFile });
    if (!cfg.ok) throw cfg.error;
    const silent = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
    const { systemClock } = await import('@ccagent/engine');
    const registry = await loadServerTools(cfg.value, { clock: systemClock, logger: silent });
    expect(registry.names()).toEqual(['echo', 'get_time', 'get_system_info', 'roll_dice']);
    const run = (args: unknown) =>
      registry.run({
        command: 'roll_dice',
        args: args as never,
        taskId: 't',
        callId: 't:1',
        attempt: 1,
        signal: new AbortController().signal,
      });
    const two = await run({ count: 2 });
    expect(two.ok).toBe(true);
    const r = (two.ok ? two.result : {}) as { sides: number; faces: number[]; total: number };
    expect(r.sides).toBe(6);
    expect(r.faces).toHaveLength(2);
    for (const f of r.faces) expect(f >= 1 && f <= 6).toBe(true);
    expect(r.total).toBe((r.faces[0] ?? 0) + (r.faces[1] ?? 0));
    expect(await run({ sides: 7 })).toMatchObject({ ok: false, error: { code: 'invalid_args' } });
  });
});

describe('the server refuses a server tool configuration it cannot use, naming the module', () => {
  const start = async (modules: Record<string, string>) => {
    const d = mkdtempSync(path.join(tmp, 'cfg-'));
    for (const [name, code] of Object.entries(modules)) writeFileSync(path.join(d, name), code);
    writeFileSync(
      path.join(d, 'ccagent.json'),
      JSON.stringify({ serverTools: { modules: Object.keys(modules) } }),
    );
    return runCli([
      'serve',
      '--port',
      '0',
      '--db',
      path.join(d, 'db.sqlite'),
      '--config',
      path.join(d, 'ccagent.json'),
    ]);
  };

  it('a module registering a built-in’s name again (guards: the second silently replacing the first)', async () => {
    const r = await start({
      'mine.mjs':
        "export default { name: 'echo', description: 'mine', parameters: { type: 'object' }, execute: () => 1 };\n",
    });
    expect(r.code).not.toBe(0);
    expect(r.stdout + r.stderr).toMatch(
      /serverTools\.modules\[0\] \(.*mine\.mjs\): a server tool named "echo" is already registered/,
    );
  });

  it('a module that cannot be loaded, and one exporting no tool', async () => {
    const broken = await start({ 'broken.mjs': 'export default {;\n' });
    expect(broken.code).not.toBe(0);
    expect(broken.stdout + broken.stderr).toMatch(
      /serverTools\.modules\[0\] \(.*broken\.mjs\): cannot load it/,
    );
    const empty = await start({ 'empty.mjs': 'export const x = 1;\n' });
    expect(empty.stdout + empty.stderr).toMatch(/empty\.mjs\): exports no tool/);
  });
});

describe('a computer registering a command under a server tool’s name', () => {
  it('has that command refused with an error naming it, and its other commands registered', async () => {
    const h = await t.start();
    const c = t.open();
    await c.opened;
    c.send({
      type: 'hello',
      client_id: 'pc-1',
      protocol_version: 1,
      commands: [{ name: 'fs_read' }, { name: 'get_time' }, { name: 'echo' }],
    });
    await c.waitFor('welcome');
    const err = await c.waitFor('error');
    expect(err).toEqual({
      type: 'error',
      code: 'invalid_field',
      path: '$.commands[1].name',
      message:
        'commands "get_time", "echo" not registered: the orchestrator has server-side tools of the same name, which tasks call instead; rename them on this computer to offer them',
    });
    const body = (await (await h.http('/api/clients')).json()) as {
      clients: Array<{ client_id: string; commands: Array<{ name: string }> }>;
    };
    expect(body.clients[0]?.commands.map((x) => x.name)).toEqual(['fs_read']);
  });
});

describe('GET /api/tools', () => {
  it('lists the server-side tools (name, description, parameters, timeout) beside the model-written ones', async () => {
    const h = await t.start();
    const body = (await (await h.http('/api/tools')).json()) as {
      tools: unknown[];
      server_tools: Array<{ name: string; description?: string; parameters?: unknown; timeout_ms?: number }>;
    };
    expect(body.tools).toEqual([]);
    expect(body.server_tools.map((x) => x.name)).toEqual(['echo', 'get_time', 'get_system_info']);
    const time = body.server_tools.find((x) => x.name === 'get_time');
    expect(time?.description).toMatch(/time/i);
    expect(time?.timeout_ms).toBe(5_000);
    expect(JSON.stringify(time?.parameters)).toContain('"enum":["iso","readable","timestamp"]');
  });
});
