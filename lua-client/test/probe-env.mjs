// Printed into Nx's cache key for the lua-client test target (a `runtime` input): what the two tiers run on.
// Without it a result cached on a machine without lua5.2 or CraftOS-PC (skipped tests) would be replayed on one
// that has them.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const out = (cmd, args) => {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  return r.error ? 'none' : `${r.stdout}${r.stderr}`.trim();
};
const dirs = [process.env.CRAFTOS_PC_DIR, path.resolve(repo, '..', 'shared', 'craftos')].filter(Boolean);
const craftos = dirs.map((d) => path.join(d, 'bin', 'craftos')).find((b) => existsSync(b)) ?? 'craftos';
console.log(`lua: ${out('lua5.2', ['-v'])}; craftos: ${craftos} ${out(craftos, ['--version'])}`);
