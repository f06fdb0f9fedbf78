/**
 * The web dashboard's files (built by `apps/dashboard` and copied into `dist/dashboard` by this package's build),
 * read once at startup and served from memory, gzip-compressed when the browser accepts it. Nothing is fetched from
 * anywhere else: the page works offline. Every answer carries a Content-Security-Policy that allows only this origin
 * and no inline script, so even a rendering bug could not run a script that a task's content smuggled in.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

/** Headers on every dashboard file. */
export const DASHBOARD_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
    "font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
};

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
};

interface Asset {
  type: string;
  body: Buffer;
  gzip: Buffer | undefined;
  immutable: boolean;
}

/** Where the build puts the dashboard: `dist/dashboard` next to the bundled entry. */
export function defaultDashboardDir(): string {
  return path.join(path.dirname(fileURLToPath(import.meta.url)), 'dashboard');
}

/** The loaded bundle. `available` is false when the directory has no `index.html` (a build without the dashboard). */
export class DashboardAssets {
  private readonly files = new Map<string, Asset>();

  constructor(readonly root: string) {
    if (!existsSync(path.join(root, 'index.html'))) return;
    const walk = (dir: string): void => {
      for (const name of readdirSync(dir)) {
        const full = path.join(dir, name);
        if (statSync(full).isDirectory()) walk(full);
        else {
          const rel = path.relative(root, full).split(path.sep).join('/');
          const body = readFileSync(full);
          const type = TYPES[path.extname(name).toLowerCase()] ?? 'application/octet-stream';
          const compressible = /^(text\/|application\/json|image\/svg)/.test(type) && body.length > 512;
          this.files.set(`/${rel}`, {
            type,
            body,
            gzip: compressible ? gzipSync(body, { level: 9 }) : undefined,
            // Vite names built assets by content hash: they never change under the same name.
            immutable: rel.startsWith('assets/'),
          });
        }
      }
    };
    walk(root);
  }

  /** Whether the bundle was found. */
  get available(): boolean {
    return this.files.has('/index.html');
  }

  /** Total size of the shipped files, raw and gzip-compressed (bytes). */
  sizes(): { raw: number; gzip: number } {
    let raw = 0;
    let gzip = 0;
    for (const a of this.files.values()) {
      raw += a.body.length;
      gzip += (a.gzip ?? a.body).length;
    }
    return { raw, gzip };
  }

  /**
   * Answer `pathname` (`/` is the page) and return true, or return false when it is not a dashboard file. HEAD gets
   * the headers only.
   */
  serve(req: IncomingMessage, res: ServerResponse, pathname: string): boolean {
    if (!this.available && pathname === '/') {
      res.writeHead(503, { 'content-type': 'text/plain; charset=utf-8', ...DASHBOARD_SECURITY_HEADERS });
      res.end(
        `The dashboard is not in this build (${this.root} has no index.html).\n` +
          'Build it with: npx nx run orchestrator:build\n',
      );
      return true;
    }
    const asset = this.files.get(pathname === '/' ? '/index.html' : pathname);
    if (asset === undefined) return false;
    const accept = req.headers['accept-encoding'];
    const gzip = asset.gzip !== undefined && typeof accept === 'string' && /\bgzip\b/.test(accept);
    const body = gzip ? (asset.gzip as Buffer) : asset.body;
    res.writeHead(200, {
      'content-type': asset.type,
      'content-length': body.length,
      'cache-control': asset.immutable ? 'public, max-age=31536000, immutable' : 'no-cache',
      vary: 'accept-encoding',
      ...(gzip ? { 'content-encoding': 'gzip' } : {}),
      ...DASHBOARD_SECURITY_HEADERS,
    });
    res.end(req.method === 'HEAD' ? undefined : body);
    return true;
  }
}
