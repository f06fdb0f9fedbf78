// Lua gate: every lua-client file must parse as Lua 5.2 (luac5.2 -p), must not use Lua 5.3+ syntax
// (integer division `//`, bitwise operators `&`, `|`, `~`, `<<`, `>>`, `goto`/labels) that Cobalt rejects, and must
// pass luacheck with CC:Tweaked's globals (.luacheckrc). A missing tool is reported; CI installs both.
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
  // Blank out strings and comments in one left-to-right pass (so `--` inside a string is not a comment),
  // keeping newlines so line numbers stay right.
  const blank = (m) => m.replace(/[^\n]/g, ' ');
  const src = readFileSync(f, 'utf8').replace(
    /--\[(=*)\[[\s\S]*?\]\1\]|\[(=*)\[[\s\S]*?\]\2\]|--[^\n]*|"(?:\\[\s\S]|[^"\\\n])*"|'(?:\\[\s\S]|[^'\\\n])*'/g,
    (m) => (m.startsWith('--') ? blank(m) : `"${blank(m.slice(2))}"`),
  );
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

const luacheck = spawnSync('luacheck', ['--no-color', '--codes', '-q', 'src', 'test'], {
  cwd: pkgRoot,
  encoding: 'utf8',
});
if (luacheck.error) {
  console.log('[lua-client] luacheck not found (apt-get install lua-check): CC globals lint skipped');
} else if (luacheck.status !== 0) {
  problems.push(`${luacheck.stdout}${luacheck.stderr}`.trim());
}
for (const p of problems) console.error(p);
console.log(`[lua-client] lint: ${files.length} files, ${problems.length} problems`);
process.exit(problems.length ? 1 : 0);
