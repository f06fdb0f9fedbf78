// Lua gate: every lua-client file must parse as Lua 5.2 (luac5.2 -p) and must not use Lua 5.3+ syntax
// (integer division `//`, bitwise operators `&`, `|`, `~`, `<<`, `>>`, `goto`/labels) that Cobalt rejects.
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const pkgRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const files = [];
const walk = (d) => {
  for (const n of readdirSync(d)) {
    const p = path.join(d, n);
    if (n === 'node_modules') continue;
    if (statSync(p).isDirectory()) walk(p);
    else if (n.endsWith('.lua')) files.push(p);
  }
};
walk(pkgRoot);

const problems = [];
const luac = spawnSync('luac5.2', ['-v'], { encoding: 'utf8' });
for (const f of files) {
  if (!luac.error) {
    const r = spawnSync('luac5.2', ['-p', f], { encoding: 'utf8' });
    if (r.status !== 0) problems.push(r.stderr.trim());
  }
  // Strip strings and comments before looking for 5.3+ operators.
  const src = readFileSync(f, 'utf8')
    .replace(/--\[(=*)\[[\s\S]*?\]\1\]/g, '')
    .replace(/\[(=*)\[[\s\S]*?\]\1\]/g, '""')
    .replace(/--[^\n]*/g, '')
    .replace(/"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'/g, '""');
  src.split('\n').forEach((line, i) => {
    if (/\/\/|(?<![~<>=])~(?!=)|&|(?<!\|)\|(?!\|)|<<|>>|\bgoto\b|::\w+::/.test(line)) {
      problems.push(
        `${path.relative(pkgRoot, f)}:${i + 1}: Lua 5.3+ syntax not allowed on CC:Tweaked: ${line.trim()}`,
      );
    }
  });
}
if (luac.error)
  console.log('[lua-client] luac5.2 not found: syntax parse skipped, 5.3+ operator scan still ran');
for (const p of problems) console.error(p);
console.log(`[lua-client] lint: ${files.length} files, ${problems.length} problems`);
process.exit(problems.length ? 1 : 0);
