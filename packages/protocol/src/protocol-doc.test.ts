import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ERROR_CODES, MESSAGE_CATALOG, renderProtocolDoc } from './index.js';

const DOC = new URL('../../../docs/protocol.md', import.meta.url);

describe('docs/protocol.md', () => {
  it('is up to date with the schemas (run `npm run docs:protocol` when this fails)', () => {
    const checkedIn = readFileSync(DOC, 'utf8');
    // Compared as a whole so any drift fails; a mismatch shows the first differing line to keep the output short.
    if (checkedIn !== renderProtocolDoc()) {
      const a = checkedIn.split('\n');
      const b = renderProtocolDoc().split('\n');
      const i = a.findIndex((line, n) => line !== b[n]);
      expect({ line: i + 1, checkedIn: a[i], generated: b[i] }).toEqual({ line: -1 });
    }
  });

  it('documents every message type, every example and every error code', () => {
    const doc = renderProtocolDoc();
    for (const m of MESSAGE_CATALOG) {
      expect(doc).toContain(`### \`${m.type}\``);
      const first = m.examples[0];
      expect(doc).toContain(
        JSON.stringify(first).length > 110 ? JSON.stringify(first, null, 2) : JSON.stringify(first),
      );
    }
    for (const code of ERROR_CODES) expect(doc).toContain(`| \`${code}\` |`);
  });

  it('says that `unavailable` also covers storage failures (the server answers disk full / DB locked / I/O errors with it)', () => {
    // guards: a client author reading `unavailable` as "model server down" and not expecting it for a failing disk
    const row = renderProtocolDoc()
      .split('\n')
      .find((line) => line.startsWith('| `unavailable` |'));
    expect(row).toMatch(/disk full/);
    expect(row).toMatch(/database locked/);
    expect(row).toMatch(/I\/O error/);
  });

  it('renders the same text twice (deterministic, so the staleness check cannot flap)', () => {
    expect(renderProtocolDoc()).toBe(renderProtocolDoc());
  });
});
