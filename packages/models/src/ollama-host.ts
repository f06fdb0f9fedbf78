/**
 * `OLLAMA_HOST` parsing, with the forms the Ollama CLI itself accepts.
 */

/** Where Ollama listens when nothing is configured. */
export const DEFAULT_OLLAMA_HOST = 'http://127.0.0.1:11434';

const DEFAULT_PORT = '11434';

/**
 * Turns an `OLLAMA_HOST`-style value into a base URL without a trailing slash, as the Ollama CLI reads it:
 * `host:port`, `host` (port 11434), `:port` (127.0.0.1), `http://host[:port][/path]` (port 80 when absent),
 * `https://…` (443), IPv6 in brackets. Empty or absent → `http://127.0.0.1:11434`. A bind-all address
 * (`0.0.0.0`, `::`), common in server configs, is turned into the matching loopback address so it can be dialled.
 * Returns `undefined` when the value cannot be a host (e.g. a bad port), so the caller can report it.
 */
export function parseOllamaHost(value: string | undefined): string | undefined {
  const raw = (value ?? '').trim();
  if (raw === '') return DEFAULT_OLLAMA_HOST;
  let scheme = 'http';
  let rest = raw;
  let defaultPort = DEFAULT_PORT;
  const sep = raw.indexOf('://');
  if (sep >= 0) {
    scheme = raw.slice(0, sep).toLowerCase();
    rest = raw.slice(sep + 3);
    if (scheme === 'http') defaultPort = '80';
    else if (scheme === 'https') defaultPort = '443';
    else return undefined;
  }
  const slash = rest.indexOf('/');
  const hostPort = slash >= 0 ? rest.slice(0, slash) : rest;
  const path = slash >= 0 ? rest.slice(slash).replace(/\/+$/, '') : '';
  let host: string;
  let port: string;
  const bracketed = /^\[([^\]]+)\](?::(.*))?$/.exec(hostPort);
  if (bracketed) {
    host = bracketed[1] ?? '';
    port = bracketed[2] ?? defaultPort;
  } else if ((hostPort.match(/:/g) ?? []).length > 1) {
    host = hostPort; // bare IPv6 without brackets, no port
    port = defaultPort;
  } else {
    const colon = hostPort.lastIndexOf(':');
    host = colon >= 0 ? hostPort.slice(0, colon) : hostPort;
    port = colon >= 0 ? hostPort.slice(colon + 1) : defaultPort;
  }
  if (host === '') host = '127.0.0.1';
  if (!/^\d{1,5}$/.test(port) || Number(port) > 65535) return undefined;
  if (host === '0.0.0.0') host = '127.0.0.1';
  if (host === '::') host = '::1';
  const hostText = host.includes(':') ? `[${host}]` : host;
  try {
    const url = new URL(`${scheme}://${hostText}:${port}${path}`);
    return `${url.protocol}//${hostText}:${port}${url.pathname === '/' ? '' : url.pathname}`;
  } catch {
    return undefined;
  }
}

/**
 * The Ollama base URL to use: `explicit` when given, else `env.OLLAMA_HOST` (default `process.env`), else
 * `http://127.0.0.1:11434`. Throws a `TypeError` naming the value when it cannot be parsed: a misconfigured host is a
 * startup error, not a model failure.
 */
export function resolveOllamaHost(
  explicit?: string,
  env: Record<string, string | undefined> = process.env,
): string {
  const source = explicit ?? env['OLLAMA_HOST'];
  const parsed = parseOllamaHost(source);
  if (parsed === undefined) {
    throw new TypeError(
      `invalid Ollama host ${JSON.stringify(source)}${explicit === undefined ? ' (from OLLAMA_HOST)' : ''}: ` +
        'expected host, host:port, :port or http(s)://host[:port]',
    );
  }
  return parsed;
}
