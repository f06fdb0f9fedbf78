#!/usr/bin/env node
// Summarise a V8 .cpuprofile (from `node --cpu-prof`): self time by function and by package/file, most first.
//
//   node tools/bench/lib/cpuprofile-top.mjs <file.cpuprofile> [--top 40] [--inclusive]
//
// Self time is where the CPU was when sampled; "(program)", "(garbage collector)" and "(idle)" are V8's own buckets.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { top: { type: 'string', default: '40' }, inclusive: { type: 'boolean', default: false } },
});
if (positionals.length !== 1) {
  console.error('usage: cpuprofile-top.mjs <file.cpuprofile> [--top N]');
  process.exit(2);
}
const top = Number(values.top);
const profile = JSON.parse(readFileSync(positionals[0], 'utf8'));
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const dt = new Map();
// timeDeltas[i] is the time before sample i; attribute it to that sample's node.
profile.samples.forEach((id, i) => dt.set(id, (dt.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
const total = [...dt.values()].reduce((a, b) => a + b, 0);

const where = (cf) => {
  const url = cf.url || '';
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (m) return m[1];
  if (url.startsWith('node:')) return url;
  return url
    ? url
        .replace(/^file:\/\//, '')
        .split('/')
        .slice(-2)
        .join('/')
    : '(native)';
};
const fnKey = (cf) => `${cf.functionName || '(anonymous)'}  ${where(cf)}:${cf.lineNumber + 1}`;
const selfFn = new Map();
const selfPkg = new Map();
for (const [id, t] of dt) {
  const cf = byId.get(id).callFrame;
  selfFn.set(fnKey(cf), (selfFn.get(fnKey(cf)) ?? 0) + t);
  selfPkg.set(where(cf), (selfPkg.get(where(cf)) ?? 0) + t);
}
const print = (title, map) => {
  console.log(`\n${title} (total ${(total / 1000).toFixed(0)} ms sampled)`);
  for (const [k, t] of [...map].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    console.log(
      `${((100 * t) / total).toFixed(1).padStart(5)} %  ${(t / 1000).toFixed(0).padStart(6)} ms  ${k}`,
    );
  }
};
// Inclusive time: each sample counts once for every distinct function on its stack.
const parent = new Map();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const totalFn = new Map();
for (const [id, t] of dt) {
  const seen = new Set();
  for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
    const k = fnKey(byId.get(cur).callFrame);
    if (seen.has(k)) continue;
    seen.add(k);
    totalFn.set(k, (totalFn.get(k) ?? 0) + t);
  }
}
print('self time by package / file', selfPkg);
print('self time by function', selfFn);
if (values.inclusive) print('inclusive time by function', totalFn);
