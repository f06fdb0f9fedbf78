// `npm start -- --demo`: a whole task to watch in the dashboard, with no GPU and no Minecraft. Starts the scripted
// fake model server (@ccagent/testkit, a test double replaying what a small model wrote for the broken-TODO.lua
// scenario), the built orchestrator on a fresh database in .ccagent-data/demo, and a simulated CC computer holding
// the broken TODO.lua: the real headless CraftOS-PC running the real Lua client when ../shared/craftos or
// CRAFTOS_PC_DIR has one, else the client's commands run by a real Lua 5.2 interpreter on a scratch folder. Then it
// creates the task and prints the dashboard address. Ctrl-C stops everything.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { root } from './ensure-installed.mjs';
import { realModelServer } from './real-model-server.mjs';

const say = (line) => process.stdout.write(`[demo] ${line}\n`);
const CLIENT_ID = 'demo-computer';
/** Each scripted reply arrives this late, so a person sees the steps come in one by one. */
const REPLY_DELAY_MS = 1500;

/** CraftOS-PC the way the lua-client tests find it: CRAFTOS_PC_DIR, then ../shared/craftos. */
function findCraftos() {
  const dirs = [process.env.CRAFTOS_PC_DIR, path.resolve(root, '..', 'shared', 'craftos')].filter(Boolean);
  for (const dir of dirs) {
    const bin = path.join(dir, 'bin', 'craftos');
    if (!existsSync(bin)) continue;
    const probe = spawnSync(bin, ['--version'], { encoding: 'utf8', timeout: 10_000 });
    if (probe.status !== 0) {
      say(
        `CraftOS-PC at ${bin} does not start (${(probe.stderr ?? '').trim() || 'no output'}); run its install-deps.sh`,
      );
      continue;
    }
    const rom = path.join(dir, 'share', 'craftos');
    return { bin, rom: existsSync(rom) ? rom : undefined, version: probe.stdout.trim(), dir };
  }
  return undefined;
}

/** A real CC computer: CraftOS-PC headless, the client library mounted read-only, the agent host connected. */
function startCraftos(craftos, dataDir, wsUrl, files) {
  const disk = path.join(dataDir, 'computer', '0');
  mkdirSync(path.join(dataDir, 'config'), { recursive: true });
  mkdirSync(disk, { recursive: true });
  const lastVersion = /CraftOS-PC (v\S+)/.exec(craftos.version)?.[1];
  writeFileSync(
    path.join(dataDir, 'config', 'global.json'),
    JSON.stringify({
      ...(lastVersion ? { lastVersion } : {}),
      checkUpdates: false,
      http_enable: true,
      http_websocket_enabled: true,
      http_whitelist: ['*'],
      http_blacklist: [],
    }),
  );
  writeFileSync(
    path.join(disk, '.settings'),
    '{ [ "motd.enable" ] = false, [ "bios.use_multishell" ] = false, }',
  );
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(disk, name), text);
  writeFileSync(
    path.join(dataDir, 'host.lua'),
    [
      'package.path = "/ccagent/?.lua;/ccagent/?/init.lua;" .. package.path',
      'local ccagent = require "ccagent"',
      `local client = ccagent.connect(${JSON.stringify(wsUrl)}, { client_id = ${JSON.stringify(CLIENT_ID)},`,
      '  reconnect_min = 0.5, reconnect_max = 2, state_dir = "/.ccagent/state" })',
      'require("ccagent.host").new(client, { shell = shell })',
      'client:run()',
      '',
    ].join('\n'),
  );
  const argv = ['--headless', '-d', dataDir, '-i', '0', '--script', path.join(dataDir, 'host.lua')];
  if (craftos.rom) argv.push('--rom', craftos.rom);
  argv.push('--mount-ro', `/ccagent=${path.join(root, 'lua-client', 'src')}`);
  const child = spawn(craftos.bin, argv, { stdio: ['ignore', 'ignore', 'ignore'] });
  return { describe: `CraftOS-PC (${craftos.dir}), disk ${disk}`, disk, stop: () => child.kill('SIGKILL') };
}

/** The Lua client's commands run by Lua 5.2 on a scratch folder, over a real WebSocket to the orchestrator. */
async function startLuaComputer(scratch, wsUrl, files) {
  const { default: WebSocket } = await import('ws');
  const { createLuaToolExecutor, CORE_COMMANDS } = await import('@ccagent/agent/testing');
  mkdirSync(scratch, { recursive: true });
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(scratch, name), text);
  const exec = createLuaToolExecutor({ root: scratch });
  let ws;
  let stopped = false;
  const connect = () => {
    ws = new WebSocket(wsUrl);
    ws.on('open', () =>
      ws.send(
        JSON.stringify({
          type: 'hello',
          client_id: CLIENT_ID,
          client_version: 'demo-lua5.2',
          commands: CORE_COMMANDS.map((c) => ({
            name: c.name,
            ...(c.description ? { description: c.description } : {}),
            ...(c.argsSchema ? { args_schema: c.argsSchema } : {}),
          })),
        }),
      ),
    );
    ws.on('message', (data) => {
      const m = JSON.parse(String(data));
      if (m.type === 'ping') ws.send(JSON.stringify({ type: 'pong', id: m.id }));
      if (m.type !== 'command_call') return;
      void exec
        .execute({
          taskId: m.task_id,
          callId: m.call_id,
          command: m.command,
          args: m.args,
          timeoutMs: m.timeout_ms,
        })
        .then((o) =>
          ws.send(
            JSON.stringify({
              type: 'command_result',
              task_id: m.task_id,
              call_id: m.call_id,
              ok: o.ok,
              ...(o.ok ? { result: o.result } : { error: o.error }),
            }),
          ),
        );
    });
    ws.on('error', () => {});
    ws.on('close', () => {
      if (!stopped) setTimeout(connect, 1000);
    });
  };
  connect();
  return {
    describe: `the Lua client's commands under Lua 5.2 on ${scratch}`,
    disk: scratch,
    stop: () => {
      stopped = true;
      ws?.close();
    },
  };
}

/** Run the demo; `serveArgs` are passed to `cc-orchestrator serve` (e.g. --port). Resolves when stopped. */
export async function runDemo(serveArgs, { real = false } = {}) {
  const { startFakeOllama } = await import('@ccagent/testkit');
  const scenario = (await import('@ccagent/agent/testing')).todo;
  const dir = path.join(root, '.ccagent-data', 'demo');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });

  const fake = await startFakeOllama({ installed: ['demo-planner', 'demo-executor'] });
  let modelUrl = fake.url;
  let models = {
    planner: { name: 'demo-planner' },
    executor: { name: 'demo-executor' },
    native: { name: 'demo-planner' },
  };
  if (real) {
    if (!process.env.CCAGENT_TEST_OLLAMA_URL) {
      say(
        'starting the real small model (tools/ollama-test-server.sh; the first time builds Ollama: minutes)…',
      );
    }
    const server = realModelServer();
    if (!server) {
      say('the real model server could not be started (see above; docs/models.md says what it needs)');
      await fake.close();
      process.exit(1);
    }
    modelUrl = server.url;
    const role = { name: server.model, options: { temperature: 0, numCtx: 8192, numPredict: 300 } };
    models = { planner: role, executor: role, native: role };
    say(`REAL model: ${server.model} on Ollama at ${server.url}.`);
    say(
      'A 135M-parameter model on a CPU is a smoke test of the plumbing, not a coding agent: expect it to fail the',
    );
    say('task, within its budget (20 steps, 10 minutes), with every prompt and reply in the step log. Point');
    say('--ollama-url and the config at a 7B+ model for real work.');
  } else {
    const slow = (content) => ({ content, fault: { latencyMs: REPLY_DELAY_MS }, chunkChars: 24 });
    fake.script('demo-planner', scenario.PLANNER_REPLIES.map(slow), { repeat: true });
    fake.script('demo-executor', scenario.EXECUTOR_REPLIES.map(slow), { repeat: true });
    say(
      `scripted model server (a test double replaying a small model's replies; no GPU needed): ${fake.url}`,
    );
  }

  const config = path.join(dir, 'ccagent.json');
  writeFileSync(
    config,
    JSON.stringify({
      models,
      taskKinds: {
        code_job: {
          completion: scenario.COMPLETION,
          ...(real ? { budgets: { maxSteps: 20, maxToolCalls: 20, deadlineMs: 600_000 } } : {}),
        },
      },
    }),
  );
  const portArg = serveArgs.includes('--port') ? [] : ['--port', '7420'];
  const server = spawn(
    process.execPath,
    [
      path.join(root, 'apps', 'orchestrator', 'dist', 'main.js'),
      'serve',
      '--db',
      path.join(dir, 'ccagent.db'),
      '--ollama-url',
      modelUrl,
      '--config',
      config,
      ...portArg,
      ...serveArgs,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const url = await new Promise((resolve, reject) => {
    let out = '';
    server.stdout.on('data', (b) => {
      process.stdout.write(b);
      out += String(b);
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1]);
    });
    server.once('exit', (code) => reject(new Error(`the orchestrator exited (${code}) before listening`)));
  });

  const wsUrl = `${url.replace(/^http/, 'ws')}/ws`;
  const files = { 'TODO.lua': scenario.BROKEN };
  const craftos = findCraftos();
  const computer = craftos
    ? startCraftos(craftos, path.join(dir, 'craftos'), wsUrl, files)
    : await startLuaComputer(path.join(dir, 'computer'), wsUrl, files);
  say(`simulated CC computer "${CLIENT_ID}": ${computer.describe}`);
  say('waiting for it to connect…');
  const stop = async () => {
    computer.stop();
    server.kill('SIGTERM');
    await fake.close();
  };
  process.once('SIGINT', () => void stop().then(() => process.exit(0)));
  process.once('SIGTERM', () => void stop().then(() => process.exit(0)));

  const get = async (route) => (await fetch(`${url}${route}`)).json();
  const deadline = Date.now() + 60_000;
  for (;;) {
    const { clients } = await get('/api/clients');
    if (clients.some((c) => c.client_id === CLIENT_ID && c.connected)) break;
    if (Date.now() > deadline) {
      say('the simulated computer did not connect within 60 s; stopping');
      await stop();
      process.exit(1);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  const created = await (
    await fetch(`${url}/api/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        task_kind: 'code_job',
        prompt: scenario.PROMPT,
        client_id: CLIENT_ID,
        request_id: 'demo-broken-todo',
      }),
    })
  ).json();
  const id = created.task.id;
  const started = Date.now();
  say(`task created: fix the broken TODO.lua. Watch it in the dashboard: ${url}/#/tasks/${id}`);
  say(`(or: npx ccagent tasks follow ${id} --url ${url})`);
  let last = '';
  for (;;) {
    const { task } = await get(`/api/tasks/${id}?steps=0`);
    if (task.status !== last) {
      last = task.status;
      say(`task is ${task.status.replace(/_/g, ' ')}`);
    }
    if (['completed', 'failed', 'cancelled'].includes(task.status)) {
      const secs = ((Date.now() - started) / 1000).toFixed(1);
      if (task.status === 'completed') {
        say(`done in ${secs} s. The fixed file is ${path.join(computer.disk, 'TODO.lua')}`);
      } else say(`the task ended ${task.status} after ${secs} s: ${JSON.stringify(task.error ?? {})}`);
      break;
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  say('the dashboard stays up; Ctrl-C stops the demo');
  const fixed = path.join(computer.disk, 'TODO.lua');
  if (existsSync(fixed) && readFileSync(fixed, 'utf8') === scenario.FIXED)
    say('TODO.lua on the computer is the fixed version');
  await new Promise((resolve) => server.once('exit', resolve));
  await stop();
}
