// Makes `npm start` / `npm test` work as the first command on a fresh clone: runs `npm ci` when node_modules is
// missing or was installed from another package-lock.json. Uses only Node built-ins (nothing is installed yet when
// it runs).
//
// What counts as installed: a stamp in node_modules holding the SHA-256 of the package-lock.json the last complete
// `npm ci` installed. A checkout that only touches package-lock.json (a rebase, a worktree) reinstalls nothing, and an
// `npm ci` cut off half-way leaves no stamp, so the next command installs again instead of running on a broken tree.
// A tree installed by hand (`npm ci`, as CI's .ci/run does) has npm's own marker newer than the lock file: it is
// taken as installed and stamped.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

const STAMP = path.join(root, 'node_modules', '.ccagent-installed');

/** SHA-256 of the workspace's package-lock.json. */
function lockHash() {
  return createHash('sha256')
    .update(readFileSync(path.join(root, 'package-lock.json')))
    .digest('hex');
}

/** Whether node_modules was installed from the current package-lock.json (stamping a hand-made install once). */
export function isInstalled() {
  const hash = lockHash();
  if (existsSync(STAMP)) return readFileSync(STAMP, 'utf8').trim() === hash;
  const marker = path.join(root, 'node_modules', '.package-lock.json');
  const lock = path.join(root, 'package-lock.json');
  if (!existsSync(marker) || statSync(marker).mtimeMs < statSync(lock).mtimeMs) return false;
  writeFileSync(STAMP, `${hash}\n`);
  return true;
}

export function ensureInstalled() {
  if (isInstalled()) return;
  console.log('[ccagent] installing dependencies (npm ci)…');
  const r = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) {
    console.error('[ccagent] npm ci failed');
    process.exit(r.status ?? 1);
  }
  writeFileSync(STAMP, `${lockHash()}\n`);
}

/** Runs a command in the workspace root with inherited stdio; returns its exit status. */
export function run(cmd, args, env = {}) {
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', env: { ...process.env, ...env } });
  return r.status ?? 1;
}
