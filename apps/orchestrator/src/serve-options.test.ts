import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { isLoopbackHost, resolveServeOptions } from './serve-options.js';

describe('resolveServeOptions', () => {
  it('uses the defaults: 127.0.0.1:7420, OLLAMA_HOST default, info', () => {
    const r = resolveServeOptions({}, {});
    expect(r).toEqual({
      ok: true,
      value: {
        host: '127.0.0.1',
        port: 7420,
        dbPath: undefined,
        configPath: undefined,
        ollamaUrl: 'http://127.0.0.1:11434',
        token: undefined,
        logLevel: 'info',
        logFormat: 'json',
        durability: 'full',
        minecraft: { host: '127.0.0.1', port: 9876, required: false },
      },
    });
  });

  it('takes env equivalents, and flags win over env', () => {
    const env = {
      CCAGENT_HOST: '::1',
      CCAGENT_PORT: '9000',
      CCAGENT_DB: '/tmp/a.db',
      CCAGENT_CONFIG: '/tmp/c.json',
      OLLAMA_HOST: 'gpu-box:11500',
      CCAGENT_TOKEN: 'env-token-123',
      CCAGENT_LOG_LEVEL: 'debug',
      CCAGENT_DURABILITY: 'normal',
      CCAGENT_LOG_FORMAT: 'pretty',
      CCAGENT_MC_PORT: '9900',
    };
    const r = resolveServeOptions({ port: '0', db: '/tmp/b.db' }, env);
    expect(r.ok && r.value).toEqual({
      host: '::1',
      port: 0,
      dbPath: '/tmp/b.db',
      configPath: '/tmp/c.json',
      ollamaUrl: 'http://gpu-box:11500',
      token: 'env-token-123',
      logLevel: 'debug',
      logFormat: 'pretty',
      durability: 'normal',
      minecraft: { host: '127.0.0.1', port: 9900, required: true },
    });
    const flag = resolveServeOptions({ durability: 'full' }, env);
    expect(flag.ok && flag.value.durability).toBe('full');
  });

  it('logs readable lines on a terminal and JSON elsewhere unless told (guards against JSON lines in a person’s console)', () => {
    const at = (tty: boolean, flags = {}, env = {}) => {
      const r = resolveServeOptions(flags, env, tty);
      return r.ok ? r.value.logFormat : r.error.message;
    };
    expect(at(true)).toBe('pretty');
    expect(at(false)).toBe('json');
    expect(at(true, { logFormat: 'json' })).toBe('json');
    expect(at(false, {}, { CCAGENT_LOG_FORMAT: 'pretty' })).toBe('pretty');
    expect(at(true, { logFormat: 'yaml' })).toMatch(/--log-format: expected one of pretty, json/);
  });

  it('turns the Minecraft mod endpoint off with --mc-port off, and refuses a bad port or a non-loopback host', () => {
    const off = resolveServeOptions({ mcPort: 'off' }, {});
    expect(off.ok && off.value.minecraft).toBeUndefined();
    const bad = resolveServeOptions({ mcPort: '99999' }, {});
    expect(!bad.ok && bad.error.message).toMatch(/--mc-port: expected an integer 0\.\.65535 or off/);
    // Mods on a server without a token connect without a credential: the endpoint stays unreachable from elsewhere.
    const open = resolveServeOptions({ mcHost: '0.0.0.0', token: 'long-enough-token' }, {});
    expect(!open.ok && open.error.message).toMatch(/--mc-host: the mod endpoint listens on loopback only/);
  });

  it('takes how much Minecraft activity the database keeps from the environment, and refuses a number out of range', () => {
    const r = resolveServeOptions({}, { CCAGENT_MC_KEEP_ACTIONS: '3', CCAGENT_MC_KEEP_LOG_LINES: '50' });
    expect(r.ok && r.value.minecraft).toEqual({
      host: '127.0.0.1',
      port: 9876,
      required: false,
      activity: { actions: 3, logLines: 50 },
    });
    const plain = resolveServeOptions({}, {});
    expect(plain.ok && plain.value.minecraft).toEqual({ host: '127.0.0.1', port: 9876, required: false });
    for (const bad of ['0', '10001', '-1', '2.5', 'lots']) {
      const no = resolveServeOptions({}, { CCAGENT_MC_KEEP_LOG_LINES: bad });
      expect(no.ok ? 'accepted' : no.error.message).toBe(
        `CCAGENT_MC_KEEP_LOG_LINES: expected an integer 1..10000, got "${bad}"`,
      );
    }
  });

  it('refuses an unknown durability level (guards against a typo silently weakening or keeping durability)', () => {
    const r = resolveServeOptions({ durability: 'fast' }, {});
    expect(r.ok).toBe(false);
    expect(!r.ok && r.error.message).toMatch(/--durability: expected one of full, normal, got "fast"/);
  });

  it('refuses a non-loopback bind without a token and explains why (guards an open command runner)', () => {
    const r = resolveServeOptions({ host: '0.0.0.0' }, {});
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error.code).toBe('unsafe_bind');
    expect(r.error.message).toMatch(/refusing to listen on 0\.0\.0\.0 without a token/);
    expect(r.error.message).toMatch(/--token/);
    expect(resolveServeOptions({ host: '0.0.0.0', token: 'long-enough' }, {}).ok).toBe(true);
  });

  it('rejects bad ports, log levels, short tokens and unusable Ollama addresses', () => {
    for (const [flags, re] of [
      [{ port: '70000' }, /--port/],
      [{ port: 'abc' }, /--port/],
      [{ logLevel: 'loud' }, /--log-level/],
      [{ token: 'short' }, /--token/],
      [{ ollamaUrl: 'ftp://x' }, /--ollama-url/],
    ] as const) {
      const r = resolveServeOptions(flags, {});
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.error.message).toMatch(re);
    }
  });

  it('recognises loopback addresses', () => {
    for (const h of ['127.0.0.1', '127.1.2.3', 'localhost', '::1', '[::1]', '::ffff:127.0.0.1']) {
      expect(isLoopbackHost(h), h).toBe(true);
    }
    for (const h of ['0.0.0.0', '::', '192.168.1.2', 'example.com']) expect(isLoopbackHost(h), h).toBe(false);
  });

  it('reads the token from --token-file / CCAGENT_TOKEN_FILE, so it need not be on the command line (visible in the process list)', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'cco-token-'));
    try {
      const file = path.join(dir, 'token');
      writeFileSync(file, '  file-token-123  \nignored second line\n');
      const viaFlag = resolveServeOptions({ host: '0.0.0.0', tokenFile: file }, {});
      expect(viaFlag.ok && viaFlag.value.token).toBe('file-token-123');
      const viaEnv = resolveServeOptions({}, { CCAGENT_TOKEN_FILE: file });
      expect(viaEnv.ok && viaEnv.value.token).toBe('file-token-123');
      // A flag wins over the environment, either way round.
      const flagOverEnv = resolveServeOptions({ tokenFile: file }, { CCAGENT_TOKEN: 'env-token-123' });
      expect(flagOverEnv.ok && flagOverEnv.value.token).toBe('file-token-123');
      const tokenOverFileEnv = resolveServeOptions({ token: 'flag-token-123' }, { CCAGENT_TOKEN_FILE: file });
      expect(tokenOverFileEnv.ok && tokenOverFileEnv.value.token).toBe('flag-token-123');
      // Refused: both at one level, a missing or empty file, a short token in the file.
      writeFileSync(path.join(dir, 'empty'), '\n');
      writeFileSync(path.join(dir, 'short'), 'abc\n');
      for (const [flags, env, re] of [
        [{ token: 'flag-token-123', tokenFile: file }, {}, /--token or --token-file, not both/],
        [{}, { CCAGENT_TOKEN: 'env-token-123', CCAGENT_TOKEN_FILE: file }, /not both/],
        [{ tokenFile: path.join(dir, 'missing') }, {}, /--token-file: cannot read/],
        [{ tokenFile: path.join(dir, 'empty') }, {}, /--token-file: .* is empty/],
        [{ tokenFile: path.join(dir, 'short') }, {}, /at least 8 characters/],
      ] as const) {
        const r = resolveServeOptions(flags, env);
        expect(r.ok, JSON.stringify(flags)).toBe(false);
        if (!r.ok) expect(r.error.message).toMatch(re);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
