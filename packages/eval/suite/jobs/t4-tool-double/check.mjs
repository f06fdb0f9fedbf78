import { expected, expectRuns } from '../../lib.mjs';

/**
 * The registry has double active after a passing test, result.txt says 42, and the tool itself doubles the
 * checker's own number when the checker loads and calls it the way the agent host does (function or table + fn).
 */
export default async function check(c) {
  let registry;
  try {
    registry = JSON.parse(c.read('/tools/registry.json') ?? 'null');
  } catch {
    return { pass: false, reason: '/tools/registry.json is not JSON' };
  }
  const tool = registry?.double;
  if (!tool) return { pass: false, reason: 'no tool named double in /tools/registry.json' };
  if (tool.status !== 'active') return expected('double tool status', 'active', tool.status);
  const result = (c.read('/result.txt') ?? '').trim();
  if (result !== '42') return expected('result.txt', '42', result);
  c.write(
    '/check/call-double.lua',
    [
      `local chunk = assert(loadfile("/tools/${tool.file}", nil, _ENV))`,
      'local v = chunk()',
      `local fn = type(v) == "function" and v or v[${JSON.stringify(tool.fn ?? 'run')}]`,
      'print(fn({ n = 7 }, { name = "double" }))',
      '',
    ].join('\n'),
  );
  return expectRuns(c, [['check/call-double.lua', [], '14']]);
}
