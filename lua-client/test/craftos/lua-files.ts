// The installer's HTTP contract, as the orchestrator must serve it (a reference for apps/orchestrator):
//   GET /lua/install.lua      src/install.lua with the literal __CCAGENT_SERVER_URL__ replaced by the base URL
//   GET /lua/manifest.json    { files: [{ path, size, sha256 }] }, paths relative to lua-client/src, '/'-separated
//   GET /lua/files/<path>     the raw bytes of one listed file
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import path from 'node:path';

/** The placeholder in install.lua that the server replaces with its own base URL. */
export const SERVER_URL_PLACEHOLDER = '__CCAGENT_SERVER_URL__';

/** One file of the manifest. */
export interface ManifestFile {
  path: string;
  size: number;
  sha256: string;
}

/** Every file under `dir` (sorted, '/'-separated relative paths) with its size and SHA-256. */
export function buildManifest(dir: string): { files: ManifestFile[] } {
  const files: ManifestFile[] = [];
  const walk = (rel: string): void => {
    for (const name of readdirSync(path.join(dir, rel)).sort()) {
      const relPath = rel ? `${rel}/${name}` : name;
      const full = path.join(dir, relPath);
      if (statSync(full).isDirectory()) walk(relPath);
      else {
        const data = readFileSync(full);
        files.push({
          path: relPath,
          size: data.length,
          sha256: createHash('sha256').update(data).digest('hex'),
        });
      }
    }
  };
  walk('');
  return { files };
}

/** Options of {@link luaRoutes}. */
export interface LuaRoutesOptions {
  /** Directory served (lua-client/src). */
  dir: string;
  /** Base URL written into install.lua, e.g. `http://127.0.0.1:7420`. */
  baseUrl: () => string;
  /** Change a manifest before it is served (tests use it to simulate a corrupt download). */
  editManifest?: (m: { files: ManifestFile[] }) => { files: ManifestFile[] };
}

/** An HTTP handler for the three /lua routes; returns false for any other URL. */
export function luaRoutes(opts: LuaRoutesOptions): (req: IncomingMessage, res: ServerResponse) => boolean {
  return (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (req.method !== 'GET' || !url.pathname.startsWith('/lua/')) return false;
    const send = (status: number, type: string, body: string | Buffer): void => {
      res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
      res.end(body);
    };
    if (url.pathname === '/lua/install.lua') {
      const text = readFileSync(path.join(opts.dir, 'install.lua'), 'utf8');
      send(200, 'text/x-lua', text.split(SERVER_URL_PLACEHOLDER).join(opts.baseUrl()));
    } else if (url.pathname === '/lua/manifest.json') {
      const m = buildManifest(opts.dir);
      send(200, 'application/json', JSON.stringify(opts.editManifest ? opts.editManifest(m) : m));
    } else if (url.pathname.startsWith('/lua/files/')) {
      const rel = decodeURIComponent(url.pathname.slice('/lua/files/'.length));
      const listed = buildManifest(opts.dir).files.some((f) => f.path === rel);
      if (!listed) send(404, 'text/plain', 'not found');
      else send(200, 'application/octet-stream', readFileSync(path.join(opts.dir, rel)));
    } else {
      send(404, 'text/plain', 'not found');
    }
    return true;
  };
}
