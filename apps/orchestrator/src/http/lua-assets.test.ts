import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { baseUrlFromHost, LuaAssets } from './lua-assets.js';

describe('LuaAssets', () => {
  it('indexes regular files only, skipping dotfiles and symlinks out of the tree', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'cco-la-'));
    mkdirSync(path.join(dir, 'a'));
    writeFileSync(path.join(dir, 'a', 'b.lua'), 'x');
    writeFileSync(path.join(dir, '.hidden'), 'x');
    symlinkSync('/etc/hostname', path.join(dir, 'link.lua'));
    const assets = new LuaAssets(dir);
    expect(assets.manifest().map((f) => f.path)).toEqual(['a/b.lua']);
    expect(assets.file('a/b.lua')?.toString()).toBe('x');
    expect(assets.file('../a/b.lua')).toBeUndefined();
    expect(assets.file('link.lua')).toBeUndefined();
  });

  it('is an empty bundle when the directory is missing', () => {
    const assets = new LuaAssets('/no/such/dir');
    expect(assets.manifest()).toEqual([]);
    expect(assets.installer('http://h:1')).toBeUndefined();
  });
});

describe('baseUrlFromHost', () => {
  it('accepts host names, IPv4, bracketed IPv6 with ports', () => {
    expect(baseUrlFromHost('example.com:7420', undefined)).toBe('http://example.com:7420');
    expect(baseUrlFromHost('10.0.0.2', undefined)).toBe('http://10.0.0.2');
    expect(baseUrlFromHost('[::1]:7420', 'https')).toBe('https://[::1]:7420');
  });

  it('rejects anything that could break out of a Lua string', () => {
    for (const h of [undefined, '', 'a"b', "a'b", 'a b', 'a\nb', 'host/path', 'h:p:q', 'a\\b']) {
      expect(baseUrlFromHost(h, undefined), String(h)).toBeUndefined();
    }
  });
});
