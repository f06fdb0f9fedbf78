// `ccagent kinds` through the built CLI against the built orchestrator: list the config file's kinds, save a new
// kind from a file and over a config kind, show it, refuse a bad definition with the field named and nothing saved,
// remove a saved kind so the file's applies again; a viewer key lists but cannot save; hostile text prints inert.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { orchestratorBuilt, startOrchestrator, type RunningOrchestrator } from './support/orchestrator.js';
import { runCli } from './support/run-cli.js';

const TOKEN = 'operator-s3cret';

describe.skipIf(!orchestratorBuilt)('ccagent kinds list / show / save / remove', () => {
  let fake: FakeOllama;
  let server: RunningOrchestrator;
  let dir: string;
  const cli = (...args: string[]) => runCli(['--url', server.url, '--token', TOKEN, ...args]);

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'ccagent-kinds-cli-'));
    fake = await startFakeOllama({ installed: ['qwen3:8b'] });
    server = await startOrchestrator({ db: path.join(dir, 'k.db'), ollamaUrl: fake.url, token: TOKEN });
  });
  afterAll(async () => {
    await server?.stop();
    await fake?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('lists, saves, shows, refuses and removes kinds; a viewer only reads (guards against kinds changed outside the operator role)', async () => {
    const listed = await cli('kinds', 'list');
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(/^chat {2}chat {2}\[config file\] {2}chat=qwen3:8b/m);
    expect(listed.stdout).toMatch(
      /^code_job {2}planner_executor {2}\[config file\] {2}planner=qwen3:8b executor=qwen3:8b/m,
    );

    const file = path.join(dir, 'pirate.json');
    writeFileSync(
      file,
      JSON.stringify({
        strategy: 'chat',
        description: 'Pirate \u001b[31mred\u001b[0m',
        systemPrompt: 'Arr.',
      }),
    );
    const saved = await cli('kinds', 'save', 'pirate_chat', '--file', file, '--expected-revision', '0');
    expect(saved.code, saved.stderr).toBe(0);
    expect(saved.stdout).toContain('saved pirate_chat  chat  [saved r1]  chat=qwen3:8b  Pirate ␛[31mred␛[0m');
    expect(saved.stdout).not.toContain('\u001b');

    const bad = await cli(
      'kinds',
      'save',
      'broken',
      '--definition',
      '{"strategy":"native","budgets":{"maxSteps":0}}',
    );
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('budgets.maxSteps');
    expect((await cli('kinds', 'list')).stdout).not.toContain('broken');

    // a kind's own model per role: a model the server does not allow is refused naming the field; a role moved to
    // another configured role's server shows where it runs
    const secret = await cli(
      'kinds',
      'save',
      'secret_model',
      '--definition',
      '{"strategy":"native","models":{"native":{"name":"secret:70b"}}}',
    );
    expect(secret.code).not.toBe(0);
    expect(secret.stderr).toContain('models.native.name');
    expect(secret.stderr).toContain('limits.models');
    const moved = await cli(
      'kinds',
      'save',
      'moved_exec',
      '--definition',
      '{"strategy":"planner_executor","models":{"executor":{"name":"qwen3:8b","endpoint":"native"}}}',
    );
    expect(moved.code, moved.stderr).toBe(0);
    expect(moved.stdout).toContain(
      'saved moved_exec  planner_executor  [saved r1]  planner=qwen3:8b executor=qwen3:8b@native',
    );
    expect((await cli('kinds', 'list')).stdout).not.toContain('secret_model');

    const over = await cli(
      'kinds',
      'save',
      'chat',
      '--definition',
      '{"strategy":"chat","systemPrompt":"Be brief."}',
    );
    expect(over.stdout).toContain('[saved, over the config file r1]');
    const shown = await cli('--json', 'kinds', 'show', 'chat');
    expect(JSON.parse(shown.stdout)).toMatchObject({
      name: 'chat',
      source: 'stored_over_config',
      definition: { systemPrompt: 'Be brief.' },
    });
    const removed = await cli('kinds', 'remove', 'chat');
    expect(removed.stdout).toContain('removed chat (now: config file)');
    expect((await cli('kinds', 'show', 'nope')).code).toBe(3);

    const made = await fetch(`${server.url}/api/credentials/keys`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify({ role: 'viewer', name: 'wall' }),
    });
    const viewer = ((await made.json()) as { key: string }).key;
    const asViewer = (...args: string[]) => runCli(['--url', server.url, '--token', viewer, ...args]);
    expect((await asViewer('kinds', 'list')).stdout).toContain('pirate_chat');
    const refused = await asViewer('kinds', 'save', 'x_kind', '--definition', '{"strategy":"chat"}');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/viewer|forbidden|403/i);
  });
});
