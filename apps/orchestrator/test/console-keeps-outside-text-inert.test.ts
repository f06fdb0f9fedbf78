/**
 * The server's console is a person's terminal too (issue 32, hole 2): the startup summary quotes the model server
 * (its version, its error text) and the readable log (`--log-format pretty`) quotes computers (client ids, refused
 * frames). Against the built `cc-orchestrator serve`, a model server and a computer that send ESC/OSC/CSI sequences,
 * CR, BEL and bidi overrides get them shown as visible symbols, never obeyed.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { serve, type Served } from './support/spawn.js';

/** Any character a terminal obeys, or that reorders or hides text, other than newline. */
const RAW = /(?!\n)[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;
const HOSTILE = '\u001b]0;pwned\u0007\u001b[31mRED\r\u009b2J\u202eevil';

let dir: string;
let fake: FakeOllama | undefined;
let server: Served | undefined;

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'cco-inert-'));
});
afterEach(async () => {
  await server?.kill9();
  server = undefined;
  await fake?.close();
  fake = undefined;
  rmSync(dir, { recursive: true, force: true });
});

async function until(what: () => boolean, label: string, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!what()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${label}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe('the server console keeps outside text inert', () => {
  it('shows a hostile model-server version in the startup summary and a hostile client id in the readable log as visible symbols (guards against a retitled, recoloured or cleared operator terminal)', async () => {
    fake = await startFakeOllama({ installed: ['qwen3:8b'], version: `0.9${HOSTILE}` });
    const s = await serve([
      '--port',
      '0',
      '--db',
      path.join(dir, 'x.db'),
      '--ollama-url',
      fake.url,
      '--log-format',
      'pretty',
      '--log-level',
      'debug',
    ]);
    server = s;
    await until(() => /models present/.test(s.stdout()), 'the model summary');
    expect(s.stdout()).toContain('(version 0.9␛]0;pwned␇␛[31mRED␍\\x9b2J\\u202eevil)');

    // A computer whose client id and commands are hostile: refused at the edge, and the log line about it is inert.
    const ws = new WebSocket(`${s.url.replace(/^http/, 'ws')}/ws`);
    const reply = new Promise<string>((resolve, reject) => {
      ws.once('message', (d: Buffer) => resolve(d.toString()));
      ws.once('error', reject);
    });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    ws.send(
      JSON.stringify({
        type: 'hello',
        client_id: `pc${HOSTILE}`,
        protocol_version: 1,
        commands: [{ name: `cmd${HOSTILE}` }],
        client_version: `v${HOSTILE}`,
      }),
    );
    const answer = JSON.parse(await reply) as { type: string; code: string; path: string };
    expect(answer).toMatchObject({ type: 'error', code: 'invalid_field', path: '$.client_id' });
    ws.close();
    // Wait for the log to say something about the connection, then check every line of both streams.
    await until(() => s.stderr().split('\n').length > 2, 'log lines');
    await new Promise((r) => setTimeout(r, 300));
    expect(s.stdout()).not.toMatch(RAW);
    expect(s.stderr()).not.toMatch(RAW);
  });
});
