/**
 * The Lua client bundle: the installer (with this server's URL filled in from the Host header), the manifest and
 * each file. Open even when a token is set: CC's `wget run` cannot send an Authorization header, and the bundle
 * holds no secret.
 */
import type { LuaManifestResponse } from '@ccagent/protocol';
import { ORCHESTRATOR_VERSION } from '../../version.js';
import { HttpError, sendJson } from '../http-kit.js';
import { baseUrlFromHost } from '../lua-assets.js';
import type { HttpApiOptions, RouteRequest } from '../route.js';

/** `GET /lua/install.lua`. */
export function installer(d: HttpApiOptions, { req, res }: RouteRequest): Promise<void> {
  const host = req.headers.host;
  const proto = req.headers['x-forwarded-proto'];
  const base = baseUrlFromHost(host, typeof proto === 'string' ? proto : undefined);
  if (base === undefined) {
    throw new HttpError(400, 'invalid_host', 'the Host header is missing or not a plain host[:port]');
  }
  const text = d.lua.installer(base);
  if (text === undefined) {
    throw new HttpError(404, 'not_found', `install.lua is not in the Lua bundle (${d.lua.root})`);
  }
  res.writeHead(200, { 'content-type': 'text/x-lua; charset=utf-8', 'cache-control': 'no-store' });
  res.end(text);
  return Promise.resolve();
}

/** `GET /lua/manifest.json`. */
export function manifest(d: HttpApiOptions, { res }: RouteRequest): Promise<void> {
  const body: LuaManifestResponse = { version: ORCHESTRATOR_VERSION, files: d.lua.manifest() };
  sendJson(res, 200, body);
  return Promise.resolve();
}

/** `GET /lua/files/<path>`. */
export function luaFile(d: HttpApiOptions, { res, params }: RouteRequest): Promise<void> {
  const rel = params['path'] ?? '';
  const body = d.lua.file(rel);
  if (!body) throw new HttpError(404, 'not_found', `no Lua file ${JSON.stringify(rel)}`);
  res.writeHead(200, { 'content-type': 'text/x-lua; charset=utf-8', 'content-length': body.length });
  res.end(body);
  return Promise.resolve();
}
