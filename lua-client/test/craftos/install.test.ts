// The one-command install on an empty CC:Tweaked computer: `wget run <server>/lua/install.lua`, served the way the
// orchestrator serves it (lua-files.ts), then the installed host connecting with the configured token.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SRC_DIR, screenText } from './craftos.js';
import { buildManifest } from './lua-files.js';
import { Scenario, craftos } from './scenario.js';

const INSTALL_THEN_HOST = `
local base = ...
local ok = shell.run("wget", "run", base .. "/lua/install.lua", "--token", "s3cret", "--id", "installed-1")
print("resolves to " .. tostring(shell.resolveProgram("ccagent-host"))) -- on the path the installer set
-- what the next boot does (basic computer: the host runs quietly beside a new shell)
shell.run("/startup/ccagent.lua")
`;

const INSTALL_ONLY = `
local base = ...
shell.run("wget", "run", base .. "/lua/install.lua", "--no-token") -- wget prints a program's error itself
`;

describe.skipIf(!craftos)('installer in CraftOS', () => {
  let s: Scenario;
  afterEach(async () => {
    expect(await s.end()).toEqual([]);
  });

  it('downloads and verifies every file, writes config and startup; the startup file starts the host', async () => {
    s = await Scenario.start({ token: 's3cret' });
    const c = s.boot(INSTALL_THEN_HOST, { args: [s.server.httpUrl], mountLibrary: false });
    const hello = await s.server.hello();
    expect(hello).toMatchObject({ client_id: 'installed-1', token: 's3cret' });
    expect(hello.commands.map((x) => x.name)).toContain('shell_exec');

    const files = buildManifest(SRC_DIR).files.filter((f) => f.path !== 'install.lua');
    expect(files.length).toBeGreaterThan(8);
    for (const f of files) {
      // byte-identical to the source tree (guards: truncated or re-encoded downloads)
      expect(
        readFileSync(path.join(c.disk, 'ccagent', f.path)).equals(readFileSync(path.join(SRC_DIR, f.path))),
        f.path,
      ).toBe(true);
    }
    expect(existsSync(path.join(c.disk, 'ccagent.new'))).toBe(false);
    const config = JSON.parse(readFileSync(path.join(c.disk, '.ccagent', 'config.json'), 'utf8')) as unknown;
    expect(config).toEqual({
      server_url: s.server.httpUrl,
      ws_url: s.server.url,
      token: 's3cret',
      client_id: 'installed-1',
    });
    const startup = readFileSync(path.join(c.disk, 'startup', 'ccagent.lua'), 'utf8');
    expect(startup).toContain('shell.setPath(shell.path() .. ":/ccagent/programs")');
    expect(startup).toContain('ccagent-host.lua');
    expect(screenText(c)).toContain(`ccagent: ${files.length} files in /ccagent`);
    expect(screenText(c)).toContain('resolves to ccagent/programs/ccagent-host.lua');
  });

  it('a corrupt download aborts the install and leaves the previous one untouched', async () => {
    s = await Scenario.start({
      editManifest: (m) => ({
        files: m.files.map((f) => (f.path === 'ccagent/json.lua' ? { ...f, sha256: '0'.repeat(64) } : f)),
      }),
    });
    const c = s.boot(INSTALL_ONLY, {
      args: [s.server.httpUrl],
      mountLibrary: false,
      files: { 'ccagent/ccagent.lua': '-- the previous install' },
    });
    expect((await c.exited).code).toBe(0);
    expect(screenText(c)).toContain('install failed, nothing changed');
    expect(screenText(c)).toContain('SHA-256 mismatch');
    expect(readFileSync(path.join(c.disk, 'ccagent', 'ccagent.lua'), 'utf8')).toBe('-- the previous install');
    expect(existsSync(path.join(c.disk, 'ccagent', 'ccagent', 'json.lua'))).toBe(false);
    expect(existsSync(path.join(c.disk, 'ccagent.new'))).toBe(false);
    expect(existsSync(path.join(c.disk, '.ccagent', 'config.json'))).toBe(false);
  });
});
