#!/usr/bin/env node
// Fails when a function in the given TypeScript files (or the .ts files of the given directories, tests excepted) is
// longer than --max lines (default 150): the strategies are split into phase modules (issue 34), and this keeps a
// phase from growing back into one closure. Every function counts — declarations, methods, constructors, accessors,
// function expressions and arrow functions —, measured from its first line to its last; an outer function includes
// the functions it contains.
//   node tools/check-function-length.mjs [--max 150] [--json] <file or directory>...
// Exit 0: none over the limit; 1: some (listed longest first); 2: bad usage or an unreadable path.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/** Every function of `file` with its name, first line and length in lines. */
export function functionLengths(file) {
  const text = readFileSync(file, 'utf8');
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const out = [];
  const nameOf = (node) => {
    if (node.name && ts.isIdentifier(node.name)) return node.name.text;
    if (node.name) return node.name.getText(sf);
    const p = node.parent;
    if (p && ts.isVariableDeclaration(p) && ts.isIdentifier(p.name)) return p.name.text;
    if (p && ts.isPropertyAssignment(p)) return p.name.getText(sf);
    if (ts.isConstructorDeclaration(node)) return 'constructor';
    return '(anonymous)';
  };
  const visit = (node) => {
    if (
      ts.isFunctionDeclaration(node) ||
      ts.isMethodDeclaration(node) ||
      ts.isConstructorDeclaration(node) ||
      ts.isGetAccessorDeclaration(node) ||
      ts.isSetAccessorDeclaration(node) ||
      ts.isFunctionExpression(node) ||
      ts.isArrowFunction(node)
    ) {
      const start = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1;
      const end = sf.getLineAndCharacterOfPosition(node.getEnd()).line + 1;
      out.push({ file, name: nameOf(node), line: start, lines: end - start + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

/** The .ts files of `p` (itself when it is a file), tests and declaration files excepted. */
export function sourceFiles(p) {
  if (!statSync(p).isDirectory()) return [p];
  return readdirSync(p, { recursive: true })
    .map((f) => path.join(p, String(f)))
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts') && !f.endsWith('.d.ts'))
    .sort();
}

/** The functions of `paths` longer than `max` lines, longest first. */
export function overLimit(paths, max) {
  return paths
    .flatMap(sourceFiles)
    .flatMap(functionLengths)
    .filter((f) => f.lines > max)
    .sort((a, b) => b.lines - a.lines);
}

const isMain =
  process.argv[1] && path.resolve(process.argv[1]) === path.resolve(new URL(import.meta.url).pathname);
if (isMain) {
  const args = process.argv.slice(2);
  let max = 150;
  let json = false;
  const paths = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--max') max = Number(args[++i]);
    else if (args[i] === '--json') json = true;
    else paths.push(args[i]);
  }
  if (!Number.isInteger(max) || max < 1 || paths.length === 0) {
    console.error('usage: check-function-length.mjs [--max 150] [--json] <file or directory>...');
    process.exit(2);
  }
  let over;
  try {
    over = overLimit(paths, max);
  } catch (err) {
    console.error(`check-function-length: ${err.message}`);
    process.exit(2);
  }
  if (json) console.log(JSON.stringify({ max, over }));
  else if (over.length === 0) console.log(`no function over ${max} lines`);
  else for (const f of over) console.log(`${f.file}:${f.line} ${f.name}: ${f.lines} lines (limit ${max})`);
  process.exit(over.length === 0 ? 0 : 1);
}
