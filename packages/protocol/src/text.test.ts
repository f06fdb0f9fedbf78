import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import * as api from './index.js';
import { hasUnsafeText, ID_CHARSET_PATTERN, inertDeep, inertJson, inertText, isPrintableId } from './text.js';

/** Every character a terminal obeys or that reorders/hides text: what must never reach a terminal raw. */
const RAW = /(?![\n\u200c\u200d])[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;

describe('inertText', () => {
  it('shows ESC, CR, BEL, OSC and CSI sequences instead of letting a terminal obey them (guards against a recoloured or rewritten operator screen)', () => {
    const hostile = 'pc-1\u001b[31mRED\u001b[0m\r\u001b]0;pwned\u0007\u009b2J\u007f';
    const shown = inertText(hostile);
    expect(shown).toBe('pc-1␛[31mRED␛[0m␍␛]0;pwned␇\\x9b2J␡');
    expect(shown).not.toMatch(RAW);
  });

  it('shows bidi overrides, isolates, zero-width and invisible characters, BOM and line separators (guards against reordered or hidden text)', () => {
    const chars = [
      '\u202e',
      '\u202a',
      '\u2066',
      '\u2069',
      '\u200b',
      '\u200e',
      '\u2060',
      '\ufeff',
      '\u2028',
      '\u2029',
      '\u00ad',
      '\u061c',
    ];
    for (const c of chars) {
      const shown = inertText(`a${c}b`);
      expect(shown, `U+${c.codePointAt(0)?.toString(16)}`).not.toMatch(RAW);
      expect(shown).toBe(
        `a\\u${(c.codePointAt(0) ?? 0).toString(16).padStart(4, '0')}b`.replace(
          /\\u00([0-9a-f]{2})/,
          '\\x$1',
        ),
      );
    }
    // A tag character (astral, Cf) too.
    expect(inertText('x\u{e0041}')).toBe('x\\u{e0041}');
  });

  it('keeps newline and tab in a block, and shows them in one line (guards against a value forging a row of its own)', () => {
    expect(inertText('line 1\n\tline 2')).toBe('line 1\n\tline 2');
    expect(inertText('pc-1\npair_x  pending', { multiline: false })).toBe('pc-1␊pair_x  pending');
    expect(inertText('a\tb', { multiline: false })).toBe('a␉b');
    expect(hasUnsafeText('a\nb')).toBe(false);
    expect(hasUnsafeText('a\nb', { multiline: false })).toBe(true);
    expect(hasUnsafeText('a\u001bb')).toBe(true);
  });

  it('leaves ordinary text of any script, emoji and joiners as they are', () => {
    const text = 'Grüße, 世界, مرحبا — 👨‍👩‍👧 ✓ ␛ literal';
    expect(inertText(text)).toBe(text);
    expect(hasUnsafeText(text)).toBe(false);
  });
});

describe('inertDeep and inertJson', () => {
  it('makes every string and key of a value inert without changing the value given', () => {
    const value = { 'k\u001b': ['a\u009b', 1, null, { deep: 'x\u202ey' }], n: 2 };
    const shown = inertDeep(value);
    expect(shown).toEqual({ 'k␛': ['a\\x9b', 1, null, { deep: 'x\\u202ey' }], n: 2 });
    expect(value['k\u001b'][0]).toBe('a\u009b');
  });

  it('writes the characters JSON leaves raw as \\u escapes: the same value, inert on a terminal', () => {
    const value = { s: 'a\u001b\u007f\u009b\u202e\u2028\u{e0041}b', ok: 'Grüße 👋' };
    const text = inertJson(value, 2);
    expect(text).not.toMatch(RAW);
    expect(JSON.parse(text)).toEqual(value);
    expect(inertJson(undefined)).toBe('null');
  });
});

describe('the identifier charset', () => {
  it('accepts the ids ccagent and its clients make, refuses spaces, controls and non-ASCII', () => {
    for (const id of [
      'pc-1',
      'computer-12',
      'req-pc-1-1732700000000-3',
      'a1b2c3d4-uuid',
      't1:p1:a0',
      'alex@laptop',
      'turtle.forward',
      'v1+x',
      'fs_read',
    ])
      expect(isPrintableId(id), id).toBe(true);
    for (const id of [
      '',
      'my turtle',
      'pc\u001b[31m',
      'pc\r',
      'pc\n',
      'pc\u202e',
      'pc\u009b',
      'Küche',
      'a/b',
      'a"b',
    ])
      expect(isPrintableId(id), JSON.stringify(id)).toBe(false);
    expect(ID_CHARSET_PATTERN.test('ok')).toBe(true);
  });
});

describe('@ccagent/protocol/text', () => {
  it('imports nothing and is its own entry, the same functions as the main entry (the dashboard bundles it without zod)', () => {
    const source = readFileSync(new URL('./text.ts', import.meta.url), 'utf8');
    expect(source).not.toMatch(/^\s*import\s/m);
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
      exports: Record<string, { import: { default: string } }>;
    };
    expect(pkg.exports['./text']?.import.default).toBe('./dist/text.js');
    expect(api.inertText).toBe(inertText);
  });
});
