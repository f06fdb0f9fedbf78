/**
 * The published artifact works, not just the workspace: `npm pack` every package the server needs, install the
 * tarballs into an empty project (dependencies from the npm registry), and `npx cc-orchestrator serve` from there
 * answers /health and serves the Lua installer.
 *
 * better-sqlite3 normally downloads a prebuilt binary from GitHub, which CI cannot reach; without one it compiles
 * SQLite from source (1–2 minutes on 2 cores). To keep this test inside the CI budget, it serves the binary the
 * workspace install already built through better-sqlite3's own prebuilt-mirror setting
 * (`npm_config_better_sqlite3_binary_host`) — the same download path users take. Set CCAGENT_PACK_FROM_SOURCE=1
 * to exercise the source build instead; CCAGENT_SKIP_PACK_TEST=1 skips the test (it is tagged `pack` in its name).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import {
  createReadStream,
  existsSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import { afterAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const PACKAGES = [
  '@ccagent/protocol',
  '@ccagent/engine',
  '@ccagent/store-core',
  '@ccagent/security',
  '@ccagent/store',
  '@ccagent/store-postgres',
  '@ccagent/agent',
  '@ccagent/models',
  '@ccagent/minecraft',
  'cc-orchestrator',
];

let dir: string | undefined;
let mirror: Server | undefined;
let fake: FakeOllama | undefined;
let server: ChildProcess | undefined;

afterAll(async () => {
  if (server?.pid !== undefined) {
    try {
      process.kill(-server.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  await new Promise<void>((r) => (mirror ? mirror.close(() => r()) : r()));
  await fake?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Environment for npm in the temp project: no npm_* variables from a surrounding `npm test` (they would point
 * npm at the workspace). */
function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (
      k.toLowerCase().startsWith('npm_') ||
      k.startsWith('CCAGENT_') ||
      k === 'OLLAMA_HOST' ||
      k === 'INIT_CWD'
    )
      continue;
    env[k] = v;
  }
  return { ...env, ...extra };
}

function run(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv, timeoutMs: number): string {
  const r = spawnSync(cmd, args, {
    cwd,
    env,
    encoding: 'utf8',
    timeout: timeoutMs,
    maxBuffer: 64 * 1024 * 1024,
  });
  if (r.status !== 0) {
    throw new Error(`${cmd} ${args.join(' ')} failed (${r.status ?? r.signal}):\n${r.stdout}\n${r.stderr}`);
  }
  return r.stdout;
}

/** Like {@link run} but without blocking the event loop (the prebuilt mirror lives in this process). */
function runAsync(
  cmd: string,
  args: string[],
  cwd: string,
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(stdout);
      else reject(new Error(`${cmd} ${args.join(' ')} failed (${code ?? signal}):\n${stdout}\n${stderr}`));
    });
  });
}

/** Serves the workspace's compiled better-sqlite3 binary as a prebuilt tarball; counts the downloads. */
async function startPrebuiltMirror(work: string): Promise<{ url: string; hits: () => number }> {
  const moduleDir = path.join(root, 'node_modules', 'better-sqlite3');
  const tarball = path.join(work, 'better-sqlite3-prebuilt.tar.gz');
  run(
    'tar',
    ['czf', tarball, '-C', moduleDir, 'build/Release/better_sqlite3.node'],
    work,
    process.env,
    30_000,
  );
  let hits = 0;
  mirror = createServer((req, res) => {
    if (!req.url?.endsWith('.tar.gz')) {
      res.writeHead(404).end();
      return;
    }
    hits++;
    res.writeHead(200, { 'content-type': 'application/gzip' });
    createReadStream(tarball).pipe(res);
  });
  await new Promise<void>((r) => mirror?.listen(0, '127.0.0.1', () => r()));
  return { url: `http://127.0.0.1:${(mirror.address() as AddressInfo).port}`, hits: () => hits };
}

describe.skipIf(process.env.CCAGENT_SKIP_PACK_TEST === '1')('pack: npm-packed artifacts', () => {
  it(
    'install into an empty project and `npx cc-orchestrator serve` answers /health',
    { timeout: 240_000 },
    async () => {
      dir = mkdtempSync(path.join(tmpdir(), 'cco-pack-'));
      const tgz = path.join(dir, 'tgz');
      const project = path.join(dir, 'project');
      for (const d of [tgz, project]) spawnSync('mkdir', ['-p', d]);

      // 1. Pack (the packages must be built: the test target depends on build).
      const packArgs = ['pack', '--pack-destination', tgz, '--json', ...PACKAGES.flatMap((p) => ['-w', p])];
      const packed = JSON.parse(run('npm', packArgs, root, cleanEnv({}), 120_000)) as Array<{
        name: string;
        filename: string;
        files: Array<{ path: string }>;
      }>;
      expect(packed.map((p) => p.name).sort()).toEqual([...PACKAGES].sort());
      const orch = packed.find((p) => p.name === 'cc-orchestrator');
      const orchFiles = orch?.files.map((f) => f.path) ?? [];
      expect(orchFiles).toContain('dist/main.js');
      expect(orchFiles).toContain('dist/lua/ccagent.lua');
      expect(orchFiles).toContain('README.md');
      const orchPkg = JSON.parse(readFileSync(path.join(root, 'apps/orchestrator/package.json'), 'utf8')) as {
        dependencies: Record<string, string>;
      };
      expect(Object.keys(orchPkg.dependencies)).not.toContain('@ccagent/testkit');

      // 2. Install the tarballs into an empty project.
      writeFileSync(
        path.join(project, 'package.json'),
        JSON.stringify({
          name: 'cco-pack-check',
          private: true,
          version: '0.0.0',
          allowScripts: { 'better-sqlite3': true },
        }),
      );
      const extra: Record<string, string> = {};
      let prebuilt: { url: string; hits: () => number } | undefined;
      if (process.env.CCAGENT_PACK_FROM_SOURCE !== '1') {
        prebuilt = await startPrebuiltMirror(dir);
        extra.npm_config_better_sqlite3_binary_host = prebuilt.url;
      }
      const tarballs = readdirSync(tgz).map((f) => path.join(tgz, f));
      await runAsync(
        'npm',
        ['install', '--no-audit', '--no-fund', '--prefer-offline', ...tarballs],
        project,
        cleanEnv(extra),
        200_000,
      );
      expect(
        existsSync(path.join(project, 'node_modules/better-sqlite3/build/Release/better_sqlite3.node')),
      ).toBe(true);
      if (prebuilt) expect(prebuilt.hits()).toBe(1);
      // Nothing was resolved from the workspace.
      expect(existsSync(path.join(project, 'node_modules/cc-orchestrator/dist/lua/ccagent.lua'))).toBe(true);

      // 3. Run it.
      fake = await startFakeOllama({ installed: ['qwen3:8b'] });
      const db = path.join(dir, 'data', 'ccagent.db');
      server = spawn(
        'npx',
        ['--no-install', 'cc-orchestrator', 'serve', '--port', '0', '--db', db, '--ollama-url', fake.url],
        {
          cwd: project,
          env: cleanEnv({}),
          stdio: ['ignore', 'pipe', 'pipe'],
          detached: true,
        },
      );
      let out = '';
      let err = '';
      server.stderr?.on('data', (b: Buffer) => (err += b.toString()));
      const url = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no listening line:\n${out}\n${err}`)), 30_000);
        server?.stdout?.on('data', (b: Buffer) => {
          out += b.toString();
          const m = /listening on (http:\/\/\S+)/.exec(out);
          if (m?.[1]) {
            clearTimeout(timer);
            resolve(m[1]);
          }
        });
        server?.once('exit', (code) => reject(new Error(`exited ${code}:\n${out}\n${err}`)));
      });
      const health = (await (await fetch(`${url}/health`)).json()) as Record<string, unknown>;
      expect(health).toMatchObject({
        ok: true,
        version: '0.1.0',
        db: { ok: true, path: db },
        models: { missing: [] },
      });
      const install = await fetch(`${url}/lua/install.lua`);
      expect(install.status).toBe(200);
      expect(await install.text()).toContain(url);
    },
  );
});
