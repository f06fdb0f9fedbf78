/**
 * The Lua client files the orchestrator serves to CC computers: a manifest (path, size, sha256) and each file by
 * its manifest path only — no path from a request ever touches the filesystem, so traversal is impossible.
 * `install.lua` is served with `__CCAGENT_SERVER_URL__` replaced by the server's URL as the requester sees it.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

/** Placeholder in install.lua replaced by the server's base URL. */
export const SERVER_URL_PLACEHOLDER = '__CCAGENT_SERVER_URL__';

/** One served file. */
export interface LuaFile {
  /** POSIX path relative to the Lua root, e.g. `ccagent/json.lua`. */
  path: string;
  size: number;
  sha256: string;
}

/** Largest file served (a CC computer has little disk; anything bigger is a packaging mistake). */
const MAX_FILE_BYTES = 1024 * 1024;
const MAX_FILES = 500;

/** The Lua client bundle, read once from a directory. */
export class LuaAssets {
  private readonly files = new Map<string, { info: LuaFile; body: Buffer }>();

  /** Reads every regular file below `root` (missing root = empty bundle). */
  constructor(readonly root: string) {
    let st;
    try {
      st = statSync(root);
    } catch {
      return;
    }
    if (!st.isDirectory()) return;
    this.walk(root, '');
  }

  private walk(dir: string, rel: string): void {
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) =>
      a.name.localeCompare(b.name),
    )) {
      if (entry.name.startsWith('.')) continue;
      const abs = path.join(dir, entry.name);
      const relPath = rel === '' ? entry.name : `${rel}/${entry.name}`;
      if (entry.isDirectory()) this.walk(abs, relPath);
      else if (entry.isFile() && this.files.size < MAX_FILES) {
        const body = readFileSync(abs);
        if (body.length > MAX_FILE_BYTES) continue;
        const sha256 = createHash('sha256').update(body).digest('hex');
        this.files.set(relPath, { info: { path: relPath, size: body.length, sha256 }, body });
      }
    }
  }

  /** Every file, sorted by path. */
  manifest(): LuaFile[] {
    return [...this.files.values()].map((f) => f.info);
  }

  /** A file's bytes by its exact manifest path, or undefined. */
  file(relPath: string): Buffer | undefined {
    return this.files.get(relPath)?.body;
  }

  /** install.lua with the server URL filled in, or undefined when the bundle has none. */
  installer(serverUrl: string): string | undefined {
    const body = this.files.get('install.lua')?.body;
    if (!body) return undefined;
    return body.toString('utf8').split(SERVER_URL_PLACEHOLDER).join(serverUrl);
  }
}

/**
 * The server's base URL as the requester addressed it (`Host` header), or undefined when the header is missing or
 * could inject anything into Lua source (only host names, IPv4/IPv6 literals and a port are accepted).
 */
export function baseUrlFromHost(
  host: string | undefined,
  forwardedProto: string | undefined,
): string | undefined {
  if (host === undefined) return undefined;
  if (!/^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252})|\[[0-9A-Fa-f:.]{2,45}\])(?::\d{1,5})?$/.test(host))
    return undefined;
  const proto = forwardedProto === 'https' ? 'https' : 'http';
  return `${proto}://${host}`;
}
