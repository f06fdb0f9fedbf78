import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

const bin = fileURLToPath(new URL('../dist/main.js', import.meta.url));
let child: ChildProcess | undefined;

afterEach(() => {
  child?.kill('SIGKILL');
});

function waitForUrl(proc: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    proc.stdout?.on('data', (b: Buffer) => {
      out += b.toString();
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m?.[1]) resolve(m[1]);
    });
    proc.once('exit', (code) => reject(new Error(`exited ${code}: ${out}`)));
  });
}

describe('cc-orchestrator serve', () => {
  it('starts from the built binary and answers /health (guards the published entry point)', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'cco-'));
    child = spawn(process.execPath, [bin, 'serve', '--port', '0', '--db', path.join(dir, 'x.db')], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const url = await waitForUrl(child);
    const res = await fetch(`${url}/health`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { ok: boolean; version: string };
    expect(body).toMatchObject({ ok: true, version: '0.1.0' });
  });
});
