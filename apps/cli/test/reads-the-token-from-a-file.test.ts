// A token on the command line is visible to every user of the machine in the process list (`ps`). The built CLI and
// the built orchestrator both read it from a file instead (`--token-file`, `CCAGENT_TOKEN_FILE`), and their `--help`
// says why; giving it twice at one level is a usage error, not a guess.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  orchestratorBuilt,
  ORCHESTRATOR_BIN,
  startOrchestrator,
  type RunningOrchestrator,
} from './support/orchestrator.js';
import { runCli } from './support/run-cli.js';
import { spawnSync } from 'node:child_process';

const TOKEN = 'file-s3cret-token';

describe.skipIf(!orchestratorBuilt)('--token-file', () => {
  let fake: FakeOllama;
  let server: RunningOrchestrator;
  let dir: string;
  let tokenFile: string;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'ccagent-token-file-'));
    tokenFile = path.join(dir, 'token');
    writeFileSync(tokenFile, `${TOKEN}\n`, { mode: 0o600 });
    fake = await startFakeOllama();
    server = await startOrchestrator({ db: path.join(dir, 't.db'), ollamaUrl: fake.url, tokenFile });
  });
  afterAll(async () => {
    await server?.stop();
    await fake?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the orchestrator takes its token from the file and the CLI sends it from the file or CCAGENT_TOKEN_FILE (guards against a secret that can only be passed on the command line)', async () => {
    // The server requires the file's token: without it the operator route is refused.
    expect((await fetch(`${server.url}/api/credentials`)).status).toBe(401);
    const viaFlag = await runCli(['--url', server.url, '--token-file', tokenFile, 'clients', 'keys']);
    expect(viaFlag.code, viaFlag.stderr).toBe(0);
    expect(viaFlag.stdout).toBe('no keys\n');
    const viaEnv = await runCli(['--url', server.url, 'clients', 'keys'], { CCAGENT_TOKEN_FILE: tokenFile });
    expect(viaEnv.code, viaEnv.stderr).toBe(0);
    // A flag wins over the environment.
    const flagOverEnv = await runCli(['--url', server.url, '--token-file', tokenFile, 'clients', 'keys'], {
      CCAGENT_TOKEN: 'wrong-token-123',
    });
    expect(flagOverEnv.code, flagOverEnv.stderr).toBe(0);
    const wrong = path.join(dir, 'wrong');
    writeFileSync(wrong, 'not-the-token\n');
    const refused = await runCli(['--url', server.url, '--token-file', wrong, 'clients', 'keys']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/token/);
  });

  it('refuses the token twice at one level, and a missing or empty file, as usage errors', async () => {
    const twice = await runCli([
      '--url',
      server.url,
      '--token',
      TOKEN,
      '--token-file',
      tokenFile,
      'tasks',
      'list',
    ]);
    expect(twice.code).toBe(2);
    expect(twice.stderr).toContain('give the token once: --token or --token-file, not both');
    const envTwice = await runCli(['--url', server.url, 'tasks', 'list'], {
      CCAGENT_TOKEN: TOKEN,
      CCAGENT_TOKEN_FILE: tokenFile,
    });
    expect(envTwice.code).toBe(2);
    expect(envTwice.stderr).toContain('CCAGENT_TOKEN or CCAGENT_TOKEN_FILE, not both');
    const missing = await runCli([
      '--url',
      server.url,
      '--token-file',
      path.join(dir, 'nope'),
      'tasks',
      'list',
    ]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/--token-file: cannot read/);
    const empty = path.join(dir, 'empty');
    writeFileSync(empty, '\n');
    const none = await runCli(['--url', server.url, '--token-file', empty, 'tasks', 'list']);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/is empty/);
  });

  it('--help of both commands says that --token is visible in the process list', async () => {
    const cli = await runCli(['--help']);
    expect(cli.stdout.replace(/\s+/g, ' ')).toMatch(/--token <token> .*visible .* process list/);
    expect(cli.stdout).toContain('--token-file <file>');
    const serve = spawnSync(process.execPath, [ORCHESTRATOR_BIN, 'serve', '--help'], { encoding: 'utf8' });
    expect(serve.stdout.replace(/\s+/g, ' ')).toMatch(/--token <secret> .*visible .* process list/);
    expect(serve.stdout).toContain('--token-file <file>');
  });
});
