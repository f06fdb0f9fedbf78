/**
 * `serve` options: command-line flags with environment equivalents, validated, plus the safety rule that a
 * non-loopback bind needs a token.
 */
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { DEFAULT_OLLAMA_HOST, parseOllamaHost } from '@ccagent/models';
import { OrchestratorError } from './orchestrator-error.js';

/** Log levels accepted by `--log-level`. */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
/** One of {@link LOG_LEVELS}. */
export type LogLevel = (typeof LOG_LEVELS)[number];

/** `--log-format` choices: readable lines for a person at a terminal, or JSON lines for a program. */
export const LOG_FORMATS = ['pretty', 'json'] as const;
/** One of {@link LOG_FORMATS}. */
export type LogFormat = (typeof LOG_FORMATS)[number];

/** `--durability` choices: when an acknowledged write is safe (see {@link ServeOptions.durability}). */
export const DURABILITY_LEVELS = ['full', 'normal'] as const;
/** One of {@link DURABILITY_LEVELS}. */
export type Durability = (typeof DURABILITY_LEVELS)[number];

/** Raw `serve` flags as commander hands them over (all strings, all optional). */
export interface ServeFlags {
  host?: string;
  port?: string;
  db?: string;
  config?: string;
  ollamaUrl?: string;
  token?: string;
  tokenFile?: string;
  logLevel?: string;
  logFormat?: string;
  durability?: string;
  tlsCert?: string;
  tlsKey?: string;
  mcHost?: string;
  mcPort?: string;
}

/** Resolved `serve` options. `dbPath` undefined means "the per-user default". */
export interface ServeOptions {
  host: string;
  port: number;
  dbPath: string | undefined;
  configPath: string | undefined;
  ollamaUrl: string;
  token: string | undefined;
  logLevel: LogLevel;
  /** `pretty` (default on a terminal): readable lines, each problem once; `json` (default otherwise): every line. */
  logFormat: LogFormat;
  /**
   * `full` (default): every acknowledged change survives a power loss (SQLite `synchronous = FULL`, an fsync per
   * commit). `normal`: survives a crash or `kill -9` of the server but the last commits may be lost if the machine
   * loses power (`synchronous = NORMAL` in WAL mode) — faster on slow disks.
   */
  durability: Durability;
  /** PEM files of the certificate and private key: serve `https://` and `wss://` (both or neither). */
  tls: { certPath: string; keyPath: string } | undefined;
  /**
   * The Minecraft mod endpoint (docs/minecraft.md): loopback only, port 9876 by default. `required` when the port was
   * given explicitly (a busy port then fails startup; the default one is skipped with a warning). Undefined: off.
   */
  minecraft:
    | {
        host: string;
        port: number;
        required: boolean;
        /** `CCAGENT_MC_KEEP_ACTIONS`, `CCAGENT_MC_KEEP_LOG_LINES`: activity kept per instance in the database. */
        activity?: { actions?: number; logLines?: number };
      }
    | undefined;
}

/** Default port of the Minecraft mod endpoint (the seed's `ws://localhost:9876`). */
export const DEFAULT_MC_PORT = 9876;

/** Default orchestrator port. */
export const DEFAULT_PORT = 7420;

/** True for addresses only reachable from this machine (127.0.0.0/8, ::1, localhost). */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (h === 'localhost' || h === '::1' || h === '0:0:0:0:0:0:0:1') return true;
  if (isIP(h) === 4) return h.startsWith('127.');
  if (h.startsWith('::ffff:')) return h.slice(7).startsWith('127.');
  return false;
}

/**
 * Flags win over env (`CCAGENT_HOST`, `CCAGENT_PORT`, `CCAGENT_DB`, `CCAGENT_CONFIG`, `OLLAMA_HOST`, `CCAGENT_TOKEN`,
 * `CCAGENT_TOKEN_FILE`,
 * `CCAGENT_LOG_LEVEL`, `CCAGENT_LOG_FORMAT`, `CCAGENT_DURABILITY`, `CCAGENT_TLS_CERT`, `CCAGENT_TLS_KEY`,
 * `CCAGENT_MC_HOST`, `CCAGENT_MC_PORT`, `CCAGENT_MC_KEEP_ACTIONS`, `CCAGENT_MC_KEEP_LOG_LINES`), env over defaults. Refuses (`unsafe_bind`) a non-loopback host without a token.
 */
export function resolveServeOptions(
  flags: ServeFlags,
  env: NodeJS.ProcessEnv,
  /** Whether the log goes to a terminal (the default log format is `pretty` there). */
  tty = false,
): { ok: true; value: ServeOptions } | { ok: false; error: OrchestratorError } {
  const bad = (message: string): { ok: false; error: OrchestratorError } => ({
    ok: false,
    error: new OrchestratorError('config_invalid', message),
  });
  const host = flags.host ?? env.CCAGENT_HOST ?? '127.0.0.1';
  const portText = flags.port ?? env.CCAGENT_PORT ?? String(DEFAULT_PORT);
  const port = Number(portText);
  if (!/^\d+$/.test(portText) || port > 65535)
    return bad(`--port: expected an integer 0..65535, got "${portText}"`);
  const logLevel = (flags.logLevel ?? env.CCAGENT_LOG_LEVEL ?? 'info').toLowerCase();
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel)) {
    return bad(`--log-level: expected one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  }
  const logFormat = (flags.logFormat ?? env.CCAGENT_LOG_FORMAT ?? (tty ? 'pretty' : 'json')).toLowerCase();
  if (!(LOG_FORMATS as readonly string[]).includes(logFormat)) {
    return bad(`--log-format: expected one of ${LOG_FORMATS.join(', ')}, got "${logFormat}"`);
  }
  const durability = (flags.durability ?? env.CCAGENT_DURABILITY ?? 'full').toLowerCase();
  if (!(DURABILITY_LEVELS as readonly string[]).includes(durability)) {
    return bad(`--durability: expected one of ${DURABILITY_LEVELS.join(', ')}, got "${durability}"`);
  }
  const rawOllama = flags.ollamaUrl ?? env.OLLAMA_HOST ?? DEFAULT_OLLAMA_HOST;
  // Same forms the Ollama CLI accepts for OLLAMA_HOST (host, host:port, URL, bind-all → loopback).
  const ollamaUrl = parseOllamaHost(rawOllama);
  if (ollamaUrl === undefined) return bad(`--ollama-url: not a usable address: "${rawOllama}"`);
  const certPath = flags.tlsCert ?? (env.CCAGENT_TLS_CERT || undefined);
  const keyPath = flags.tlsKey ?? (env.CCAGENT_TLS_KEY || undefined);
  if ((certPath === undefined) !== (keyPath === undefined)) {
    return bad('--tls-cert and --tls-key go together: give both PEM files, or neither');
  }
  const mcPortText = flags.mcPort ?? env.CCAGENT_MC_PORT;
  const mcHost = flags.mcHost ?? env.CCAGENT_MC_HOST ?? '127.0.0.1';
  let minecraft: ServeOptions['minecraft'];
  if (mcPortText !== 'off') {
    const mcPort = Number(mcPortText ?? DEFAULT_MC_PORT);
    if (mcPortText !== undefined && (!/^\d+$/.test(mcPortText) || mcPort > 65535)) {
      return bad(`--mc-port: expected an integer 0..65535 or off, got "${mcPortText}"`);
    }
    // The mod protocol has no authentication (the seed's): anyone reaching it could play as the bot.
    if (!isLoopbackHost(mcHost))
      return bad(`--mc-host: the mod endpoint listens on loopback only, got "${mcHost}"`);
    minecraft = { host: mcHost, port: mcPort, required: mcPortText !== undefined };
    const activity: { actions?: number; logLines?: number } = {};
    for (const [name, key] of [
      ['CCAGENT_MC_KEEP_ACTIONS', 'actions'],
      ['CCAGENT_MC_KEEP_LOG_LINES', 'logLines'],
    ] as const) {
      const text = env[name];
      if (text === undefined || text === '') continue;
      if (!/^\d+$/.test(text) || Number(text) < 1 || Number(text) > 10_000)
        return bad(`${name}: expected an integer 1..10000, got "${text}"`);
      activity[key] = Number(text);
    }
    if (Object.keys(activity).length > 0) minecraft.activity = activity;
  }
  // A flag wins over the environment; the same secret given twice at one level is refused, not guessed between.
  if (flags.token !== undefined && flags.tokenFile !== undefined)
    return bad('give the token once: --token or --token-file, not both');
  if (
    flags.token === undefined &&
    flags.tokenFile === undefined &&
    env.CCAGENT_TOKEN &&
    env.CCAGENT_TOKEN_FILE
  )
    return bad('give the token once: CCAGENT_TOKEN or CCAGENT_TOKEN_FILE, not both');
  const tokenFile =
    flags.token !== undefined
      ? undefined
      : (flags.tokenFile ?? (env.CCAGENT_TOKEN ? undefined : env.CCAGENT_TOKEN_FILE || undefined));
  let token = tokenFile === undefined ? (flags.token ?? (env.CCAGENT_TOKEN || undefined)) : undefined;
  if (tokenFile !== undefined) {
    const read = readTokenFile(tokenFile);
    if (!read.ok) return bad(read.message);
    token = read.token;
  }
  if (token !== undefined && token.length < 8) return bad('--token: use at least 8 characters');
  if (!isLoopbackHost(host) && token === undefined) {
    return {
      ok: false,
      error: new OrchestratorError(
        'unsafe_bind',
        `refusing to listen on ${host} without a token: anyone who can reach this address could run commands on ` +
          `your ComputerCraft computers and use your models. Set CCAGENT_TOKEN (or --token-file <file>; a --token ` +
          `on the command line is visible in the process list) and give the ` +
          `same token to the Lua client, or bind to 127.0.0.1.`,
      ),
    };
  }
  return {
    ok: true,
    value: {
      host,
      port,
      dbPath: flags.db ?? env.CCAGENT_DB,
      configPath: flags.config ?? env.CCAGENT_CONFIG,
      ollamaUrl,
      token,
      logLevel: logLevel as LogLevel,
      logFormat: logFormat as LogFormat,
      durability: durability as Durability,
      tls: certPath !== undefined && keyPath !== undefined ? { certPath, keyPath } : undefined,
      minecraft,
    },
  };
}

/**
 * The token in `file` (`--token-file`): its first line, without surrounding whitespace, so a secret never has to be
 * on a command line (where every user of the machine sees it in the process list) or in the environment.
 */
export function readTokenFile(file: string): { ok: true; token: string } | { ok: false; message: string } {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    return { ok: false, message: `--token-file: cannot read ${file}: ${(e as Error).message}` };
  }
  const token = (text.split(/\r?\n/)[0] ?? '').trim();
  if (token === '') return { ok: false, message: `--token-file: ${file} is empty` };
  return { ok: true, token };
}
