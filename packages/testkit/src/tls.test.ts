import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, request } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { selfSignedCert } from './index.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function get(url: string, ca?: Buffer, servername?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(url, { ca, ...(servername ? { servername } : {}) }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('selfSignedCert', () => {
  it('writes a certificate for 127.0.0.1 and localhost that a client trusting it accepts, and no other client', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'testkit-tls-'));
    dirs.push(dir);
    const tls = selfSignedCert(dir);
    expect([tls.certPath, tls.keyPath]).toEqual([path.join(dir, 'cert.pem'), path.join(dir, 'key.pem')]);
    expect(tls.cert.toString('utf8')).toMatch(/^-----BEGIN CERTIFICATE-----/);
    expect(tls.key.toString('utf8')).toMatch(/-----BEGIN PRIVATE KEY-----/);
    const server = createServer({ cert: tls.cert, key: tls.key }, (_req, res) => res.end('hello over tls'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    try {
      expect(await get(`https://127.0.0.1:${port}/`, tls.cert)).toBe('hello over tls');
      // The name `localhost` is in it too (checked by the name the client asks for, on the same address).
      expect(await get(`https://127.0.0.1:${port}/`, tls.cert, 'localhost')).toBe('hello over tls');
      await expect(get(`https://127.0.0.1:${port}/`, tls.cert, 'example.com')).rejects.toThrow(
        /altnames|not in the cert/i,
      );
      await expect(get(`https://127.0.0.1:${port}/`)).rejects.toThrow(/self.signed|certificate/i);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
