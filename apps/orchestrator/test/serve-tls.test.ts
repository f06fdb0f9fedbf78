/**
 * Native TLS: the built `cc-orchestrator serve --tls-cert --tls-key` with a self-signed certificate made by openssl
 * for this test serves https:// and wss://; a computer enrolled over https drives a whole task over wss with its own
 * key, and the certificate is checked (no `rejectUnauthorized: false`).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { selfSignedCert, startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { serve, type Served } from './support/spawn.js';

let dir: string;
let fake: FakeOllama;
let server: Served | undefined;

beforeEach(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'cco-tls-'));
  fake = await startFakeOllama();
});
afterEach(async () => {
  await server?.kill9();
  server = undefined;
  await fake.close();
  rmSync(dir, { recursive: true, force: true });
});

function https(
  url: string,
  ca: Buffer,
  method: string,
  body?: unknown,
  token?: string,
): Promise<{ status: number; json: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method,
        ca,
        headers: {
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
          ...(token !== undefined ? { authorization: `Bearer ${token}` } : {}),
        },
      },
      (res) => {
        let text = '';
        res.on('data', (b: Buffer) => (text += b.toString()));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, json: JSON.parse(text || '{}') as Record<string, unknown> }),
        );
      },
    );
    req.on('error', reject);
    req.end(body !== undefined ? JSON.stringify(body) : undefined);
  });
}

describe('cc-orchestrator serve with --tls-cert/--tls-key', () => {
  it('drives a task over wss:// with an enrolled key and refuses a client that does not trust the certificate', async () => {
    const tls = selfSignedCert(dir);
    fake.script('qwen3:8b', [
      { toolCalls: [{ name: 'fs_write', arguments: { path: '/t.lua', content: 'print(1)' } }] },
      'done over TLS',
    ]);
    const token = 'operator-secret-1';
    server = await serve([
      '--port',
      '0',
      '--db',
      path.join(dir, 'db.sqlite'),
      '--ollama-url',
      fake.url,
      '--log-level',
      'warn',
      '--token',
      token,
      '--tls-cert',
      tls.certPath,
      '--tls-key',
      tls.keyPath,
    ]);
    expect(server.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(server.stdout()).toMatch(/websocket: {2}wss:\/\/127\.0\.0\.1:\d+\/ws/);

    const issued = await https(
      `${server.url}/api/credentials/enroll`,
      tls.cert,
      'POST',
      { client_id: 'pc-tls' },
      token,
    );
    expect(issued.status).toBe(201);
    const paired = await https(`${server.url}/api/pair`, tls.cert, 'POST', {
      code: issued.json.code,
      client_id: 'pc-tls',
    });
    expect(paired.status).toBe(200);
    const key = String(paired.json.key);

    // Without the certificate as a trust anchor the handshake fails.
    const untrusted = await new Promise<string>((resolve) => {
      const ws = new WebSocket(`${server!.url.replace(/^https/, 'wss')}/ws`);
      ws.on('open', () => resolve('open'));
      ws.on('error', (e) => resolve(String((e as NodeJS.ErrnoException).code ?? e.message)));
    });
    expect(untrusted).toMatch(/SELF_SIGNED|CERT|certificate/i);

    const ws = new WebSocket(`${server.url.replace(/^https/, 'wss')}/ws`, { ca: tls.cert });
    const messages: Array<Record<string, unknown>> = [];
    const waitFor = (pred: (m: Record<string, unknown>) => boolean): Promise<Record<string, unknown>> =>
      new Promise((resolve, reject) => {
        const seen = messages.find(pred);
        if (seen) return resolve(seen);
        const t = setTimeout(() => reject(new Error(`timeout; got ${JSON.stringify(messages)}`)), 20_000);
        ws.on('message', () => {
          const m = messages.find(pred);
          if (m) {
            clearTimeout(t);
            resolve(m);
          }
        });
      });
    ws.on('message', (data: Buffer) => {
      const m = JSON.parse(data.toString('utf8')) as Record<string, unknown>;
      messages.push(m);
      if (m.type === 'command_call') {
        ws.send(
          JSON.stringify({
            type: 'command_result',
            task_id: m.task_id,
            call_id: m.call_id,
            ok: true,
            result: { ok: true },
          }),
        );
      }
    });
    await new Promise((r) => ws.once('open', r));
    ws.send(
      JSON.stringify({
        type: 'hello',
        client_id: 'pc-tls',
        token: key,
        protocol_version: 1,
        commands: [{ name: 'fs_write', args_schema: { type: 'object', required: ['path', 'content'] } }],
      }),
    );
    await waitFor((m) => m.type === 'welcome');
    ws.send(
      JSON.stringify({
        type: 'create_task',
        request_id: 'r1',
        task_kind: 'general',
        client_id: 'pc-tls',
        prompt: 'write t.lua',
        allowed_commands: [],
      }),
    );
    const created = await waitFor((m) => m.type === 'task_created');
    const done = await waitFor((m) => m.type === 'task_completed');
    expect(done.result).toMatchObject({ message: 'done over TLS' });
    expect(messages.filter((m) => m.type === 'command_call').map((m) => m.command)).toEqual(['fs_write']);
    const detail = await https(
      `${server.url}/api/tasks/${String(created.task_id)}`,
      tls.cert,
      'GET',
      undefined,
      token,
    );
    expect(detail.json.task).toMatchObject({ status: 'completed' });
    ws.close();
  });
});
