// The operator's side of per-computer keys through the built CLI against the built orchestrator: `clients enroll`
// issues a code a computer trades for its key, `clients keys` lists keys (never a hash or a key), `clients rotate`
// and `clients revoke` change them, `audit` (over --url, and read-only from the SQLite file with --db) shows who
// did what. A viewer key can read but neither act nor manage keys.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { orchestratorBuilt, startOrchestrator, type RunningOrchestrator } from './support/orchestrator.js';
import { runCli } from './support/run-cli.js';

const TOKEN = 'operator-s3cret';

describe.skipIf(!orchestratorBuilt)(
  'ccagent clients enroll / keys / rotate / revoke and ccagent audit',
  () => {
    let fake: FakeOllama;
    let server: RunningOrchestrator;
    let dir: string;
    const cli = (...args: string[]) => runCli(['--url', server.url, '--token', TOKEN, ...args]);

    beforeAll(async () => {
      dir = mkdtempSync(path.join(tmpdir(), 'ccagent-keys-'));
      fake = await startFakeOllama();
      server = await startOrchestrator({ db: path.join(dir, 'keys.db'), ollamaUrl: fake.url, token: TOKEN });
    });
    afterAll(async () => {
      await server?.stop();
      await fake?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it('enrolls, pairs, lists, rotates, revokes and audits; a viewer key reads only (guards against keys managed or used beyond their role)', async () => {
      const enrolled = await cli('clients', 'enroll', '--name', 'pc-1', '--kinds', 'code_job');
      expect(enrolled.code, enrolled.stderr).toBe(0);
      const code = /enrollment code (\S+)/.exec(enrolled.stdout)?.[1] ?? '';
      expect(code).toMatch(/^[A-Z2-9]{5}-[A-Z2-9]{5}$/);
      expect(enrolled.stdout).toContain(`wget run ${server.url}/lua/install.lua --code ${code} --id pc-1`);

      const paired = await fetch(`${server.url}/api/pair`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ code, client_id: 'whatever' }),
      });
      expect(paired.status).toBe(200);
      const pair = (await paired.json()) as { client_id: string; key: string };
      expect(pair.client_id).toBe('pc-1');

      const keys = await cli('--json', 'clients', 'keys');
      expect(keys.code, keys.stderr).toBe(0);
      const listed = JSON.parse(keys.stdout) as { credentials: Array<Record<string, unknown>> };
      expect(listed.credentials).toEqual([
        expect.objectContaining({ role: 'computer', client_id: 'pc-1', grants: { kinds: ['code_job'] } }),
      ]);
      expect(keys.stdout).not.toContain(pair.key);
      expect(keys.stdout).not.toMatch(/hash/i);

      const rotated = await cli('clients', 'rotate', 'pc-1');
      expect(rotated.code, rotated.stderr).toBe(0);
      expect(rotated.stdout).toMatch(/new key for pc-1: cck_\S+/);

      const viewer = await cli('clients', 'keys', '--create', 'viewer', '--name', 'wall display');
      expect(viewer.code, viewer.stderr).toBe(0);
      const viewerKey = /: (cck_\S+)/.exec(viewer.stdout)?.[1] ?? '';
      const asViewer = (...args: string[]) => runCli(['--url', server.url, '--token', viewerKey, ...args]);
      expect((await asViewer('tasks', 'list')).code).toBe(0);
      const create = await asViewer('tasks', 'create', '--kind', 'code_job', '--prompt', 'x');
      expect(create.code).toBe(1);
      expect(create.stderr).toMatch(/403|read-only/);
      const manage = await asViewer('clients', 'enroll');
      expect(manage.code).toBe(1);
      expect(manage.stderr).toMatch(/403|operator/);

      const revoked = await cli('clients', 'revoke', 'pc-1');
      expect(revoked.code, revoked.stderr).toBe(0);
      expect(revoked.stdout.match(/^revoked cred_\S+ \(pc-1\)$/gm)).toHaveLength(2);
      expect((await cli('clients', 'revoke', 'pc-1')).code).toBe(3); // not found: nothing live left

      const audit = await cli('--json', 'audit');
      expect(audit.code, audit.stderr).toBe(0);
      const actions = (
        JSON.parse(audit.stdout) as { entries: Array<{ action: string; outcome: string }> }
      ).entries.map((e) => `${e.action}:${e.outcome}`);
      expect(actions).toEqual([
        'client.revoke:refused',
        'client.revoke:ok',
        'key.create:ok',
        'client.rotate:ok',
        'client.pair:ok',
        'client.enroll:ok',
      ]);
      // The same log, read from the database file while the server runs.
      const fromDb = await runCli([
        '--db',
        path.join(dir, 'keys.db'),
        '--json',
        'audit',
        '--action',
        'client.enroll',
      ]);
      expect(fromDb.code, fromDb.stderr).toBe(0);
      expect(JSON.parse(fromDb.stdout)).toMatchObject({
        entries: [{ action: 'client.enroll', actor: 'token', role: 'operator' }],
      });
    });

    it('lists a computer that asked to pair, approves one and denies another; only the approved one collects a key, once (guards against a computer pairing without an operator)', async () => {
      const ask = async (id: string) => {
        const r = await fetch(`${server.url}/api/pair/request`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ client_id: id }),
        });
        expect(r.status).toBe(202);
        return (await r.json()) as { request_id: string; secret: string; match: string; state: string };
      };
      const collect = (t: { request_id: string; secret: string }) =>
        fetch(`${server.url}/api/pair/collect`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ request_id: t.request_id, secret: t.secret }),
        });
      const a = await ask('turtle-a');
      const b = await ask('turtle-b');
      expect(a.state).toBe('pending');
      expect((await collect(a)).status).toBe(202);

      const pending = await cli('clients', 'pending');
      expect(pending.code, pending.stderr).toBe(0);
      expect(pending.stdout).toContain(`${a.request_id}  turtle-a`);
      expect(pending.stdout).toContain(`match ${a.match}`);
      expect(pending.stdout).toContain(b.request_id);
      expect(pending.stdout).not.toContain(a.secret);

      const approved = await cli('clients', 'approve', a.request_id, '--kinds', 'code_job');
      expect(approved.code, approved.stderr).toBe(0);
      expect(approved.stdout).toContain('approved turtle-a');
      const denied = await cli('clients', 'deny', b.request_id);
      expect(denied.code, denied.stderr).toBe(0);
      // Deciding twice is refused and changes nothing.
      expect((await cli('clients', 'approve', b.request_id)).code).toBe(3);

      const got = await collect(a);
      expect(got.status).toBe(200);
      const key = ((await got.json()) as { key: string; client_id: string }).key;
      expect(key).toMatch(/^cck_/);
      expect((await collect(a)).status).toBe(409);
      expect((await collect(b)).status).toBe(403);

      const keys = JSON.parse((await cli('--json', 'clients', 'keys')).stdout) as {
        credentials: Array<{ client_id?: string; grants: unknown }>;
      };
      expect(keys.credentials.filter((k) => k.client_id === 'turtle-a')).toEqual([
        expect.objectContaining({ grants: { kinds: ['code_job'] } }),
      ]);
      expect(keys.credentials.some((k) => k.client_id === 'turtle-b')).toBe(false);
      expect((await cli('clients', 'pending')).stdout).toContain('no computer waits for approval');
      const log = await cli('--json', 'audit', '--limit', '20');
      const actions = (
        JSON.parse(log.stdout) as { entries: Array<{ action: string; outcome: string }> }
      ).entries.map((e) => `${e.action}:${e.outcome}`);
      expect(actions).toEqual(
        expect.arrayContaining([
          'client.pair_request:ok',
          'client.approve:ok',
          'client.deny:ok',
          'client.pair:ok',
        ]),
      );
    });
  },
);
