// Text from outside never reaches the operator's terminal raw: the built CLI reads a database whose prompts, model
// replies, tool output, client ids, tool names, pairing requests and audit rows hold ESC/CSI/OSC sequences, CR, BEL,
// C1 controls and bidi overrides — from the SQLite file (--db) and through the built orchestrator (--url) — and every
// command prints them as visible symbols (␛[31m), with colour on or off, as JSON, and on stderr. `--raw` prints the
// bytes. The orchestrator refuses such a client id at the door.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HOSTILE, HOSTILE_ID, HOSTILE_TASKS, writeHostileDb } from './support/hostile-db.js';
import { orchestratorBuilt, startOrchestrator, type RunningOrchestrator } from './support/orchestrator.js';
import { runCli, type CliRun } from './support/run-cli.js';

/** Any character a terminal obeys, or that reorders or hides text, other than newline. */
const RAW = /(?!\n)[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;
/** The colour codes the CLI itself writes with colour on. */
// eslint-disable-next-line no-control-regex
const OUR_SGR = /\u001b\[(?:1|2|22|3[1-6]|39)m/g;
const SHOWN = '␛[31mRED␛[0m␍␛[2K␛]0;pwned␇\\x9b2J␡\\u202eevil\\u2066';
const SHOWN_ID = 'pc␛[31m-1␊forged  row␍';
const TOKEN = 'operator-s3cret';

function expectInert(r: CliRun, what: string, shows = SHOWN): void {
  expect(r.stdout, `${what}: stdout`).not.toMatch(RAW);
  expect(r.stderr, `${what}: stderr`).not.toMatch(RAW);
  // Shown, not dropped: the operator reads what was sent.
  expect(r.stdout, what).toContain(shows);
  // A newline inside an id never starts a line of its own.
  expect(r.stdout, what).not.toMatch(/^forged/m);
}

/** Every human read command, each over the given source flags. */
const READS: Array<[string, string[]]> = [
  ['tasks list', ['tasks', 'list']],
  ['tasks show (waiting, question)', ['tasks', 'show', HOSTILE_TASKS.waiting]],
  ['tasks show --full', ['tasks', 'show', '--full', HOSTILE_TASKS.failed]],
  ['tasks follow', ['tasks', 'follow', HOSTILE_TASKS.failed]],
  ['clients list', ['clients', 'list']],
  ['tools list', ['tools', 'list']],
  ['audit', ['audit']],
];

let dir: string;
let db: string;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'ccagent-hostile-'));
  db = path.join(dir, 'hostile.db');
  await writeHostileDb(db);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('from the SQLite file (--db)', () => {
  it.each(READS)(
    '%s shows control and bidi characters as visible symbols (guards against a recoloured, rewritten or retitled terminal)',
    async (what, args) => {
      const r = await runCli(['--db', db, ...args]);
      expect(r.code === 0 || (what === 'tasks follow' && r.code === 1), `${what}: ${r.stderr}`).toBe(true);
      expectInert(r, what, what === 'clients list' || what === 'audit' ? SHOWN_ID : SHOWN);
    },
  );

  it('with colour on, the only escape sequences are the CLI’s own colours', async () => {
    for (const [what, args] of READS) {
      const r = await runCli(['--db', db, '--color', ...args]);
      // (audit prints no colour)
      if (what !== 'audit') expect(r.stdout, what).toMatch(OUR_SGR);
      const own = r.stdout.replace(OUR_SGR, '');
      expect(own, what).not.toMatch(RAW);
      expect(r.stdout, what).not.toContain('\u001b[31mRED');
    }
  });

  it('--json keeps the exact values, with the characters JSON leaves raw escaped', async () => {
    const r = await runCli(['--db', db, '--json', 'tasks', 'show', HOSTILE_TASKS.failed]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).not.toMatch(RAW);
    const d = JSON.parse(r.stdout) as { task: { prompt: string; clientId: string } };
    expect(d.task.prompt).toBe(`prompt ${HOSTILE}\nsecond line ${HOSTILE}`);
    expect(d.task.clientId).toBe(HOSTILE_ID);
    const follow = await runCli(['--db', db, '--json', 'tasks', 'follow', HOSTILE_TASKS.failed]);
    expect(follow.stdout).not.toMatch(RAW);
    expect(follow.stdout.trim().split('\n').length).toBeGreaterThan(2);
  });

  it('--raw prints the bytes for those who ask', async () => {
    const r = await runCli(['--db', db, '--raw', 'tasks', 'show', HOSTILE_TASKS.failed]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`prompt ${HOSTILE}`);
  });

  it('an error message quoting outside text is inert on stderr', async () => {
    const r = await runCli(['--db', db, 'tasks', 'show', `nope${HOSTILE}`]);
    expect(r.code).toBe(3);
    expect(r.stderr).not.toMatch(RAW);
    expect(r.stderr).toContain('nopex␛[31mRED');
  });
});

describe.skipIf(!orchestratorBuilt)('through a running orchestrator (--url)', () => {
  let fake: FakeOllama;
  let server: RunningOrchestrator;
  // The token from the environment, as the docs recommend (a --token argument is visible in the process list).
  const cli = (...args: string[]) => runCli(['--url', server.url, ...args], { CCAGENT_TOKEN: TOKEN });

  beforeAll(async () => {
    fake = await startFakeOllama();
    server = await startOrchestrator({ db, ollamaUrl: fake.url, token: TOKEN });
  });
  afterAll(async () => {
    await server?.stop();
    await fake?.close();
  });

  it.each([
    ...READS,
    ['clients pending', ['clients', 'pending']] as [string, string[]],
    ['clients pending --all', ['clients', 'pending', '--all']] as [string, string[]],
  ])('%s shows outside text as visible symbols', async (what, args) => {
    const r = await cli(...args);
    // (following a failed task ends with 1)
    expect(r.code, `${what}: ${r.stderr}`).toBe(what === 'tasks follow' ? 1 : 0);
    const id = ['clients list', 'audit', 'clients pending', 'clients pending --all'].includes(what);
    expectInert(r, what, id ? SHOWN_ID : SHOWN);
  });

  it('clients pending prints one line per request, whatever the id holds (guards against a forged approval list)', async () => {
    const r = await cli('clients', 'pending');
    expect(r.stdout.trimEnd().split('\n')).toHaveLength(1);
    expect(r.stdout).toMatch(/^pair_hostile {2}pc␛\[31m-1␊forged {2}row␍ /);
  });

  it('the orchestrator refuses a pairing request whose client id is not printable, with a structured error', async () => {
    for (const bad of [HOSTILE_ID, 'pc\u001b]0;title\u0007', 'pc\u202e1', 'my computer']) {
      const res = await fetch(`${server.url}/api/pair/request`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ client_id: bad }),
      });
      expect(res.status, JSON.stringify(bad)).toBe(400);
      const body = (await res.json()) as { error: { code: string; message: string } };
      expect(body.error.message).toMatch(/client_id.*use only ASCII letters, digits/);
    }
    const pending = await cli('--json', 'clients', 'pending');
    expect((JSON.parse(pending.stdout) as { pairings: unknown[] }).pairings).toHaveLength(1);
  });
});
