import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

/** A certificate and its key, as files (for a `--tls-cert` flag) and as PEM bytes (for `tls` options and `ca`). */
export interface SelfSignedCert {
  certPath: string;
  keyPath: string;
  cert: Buffer;
  key: Buffer;
}

/**
 * A self-signed certificate for `127.0.0.1` and `localhost`, valid for one day, written as `cert.pem` and `key.pem`
 * into `dir` (made by `openssl` when the test runs: nothing secret is checked in). A client trusts it by passing
 * `cert` as its `ca`; one that does not is refused, as with any unknown certificate.
 */
export function selfSignedCert(dir: string): SelfSignedCert {
  const certPath = path.join(dir, 'cert.pem');
  const keyPath = path.join(dir, 'key.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=IP:127.0.0.1,DNS:localhost',
      '-keyout',
      keyPath,
      '-out',
      certPath,
    ],
    { stdio: 'ignore' },
  );
  return { certPath, keyPath, cert: readFileSync(certPath), key: readFileSync(keyPath) };
}
