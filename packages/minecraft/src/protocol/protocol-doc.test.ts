import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { MC_FRAME_ERROR_CODES } from './constants.js';
import { MC_ACTION_CATALOG, MC_MESSAGE_CATALOG } from './catalog.js';
import { MC_DOC_END, MC_DOC_START, renderMcProtocolDoc } from './protocol-doc.js';

const DOC = new URL('../../../../docs/minecraft.md', import.meta.url);

describe('docs/minecraft.md protocol section', () => {
  it('is up to date with the schemas (run `npm run docs:minecraft` when this fails)', () => {
    const text = readFileSync(DOC, 'utf8');
    const section = text.slice(text.indexOf(MC_DOC_START), text.indexOf(MC_DOC_END) + MC_DOC_END.length);
    const a = section.split('\n');
    const b = renderMcProtocolDoc().split('\n');
    const i = a.findIndex((line, n) => line !== b[n]);
    expect({ line: i, checkedIn: a[i], generated: b[i] }).toEqual({
      line: -1,
      checkedIn: undefined,
      generated: undefined,
    });
    expect(a.length).toBe(b.length);
  });

  it('documents every message, every action type and every error code', () => {
    const doc = renderMcProtocolDoc();
    for (const m of MC_MESSAGE_CATALOG) expect(doc).toContain(`\`${m.type}\` (${m.direction})`);
    for (const a of MC_ACTION_CATALOG) expect(doc).toContain(`| \`${a.type}\` |`);
    for (const c of MC_FRAME_ERROR_CODES) expect(doc).toContain(`| \`${c}\` |`);
  });

  it('shows examples that the schemas accept', () => {
    for (const m of MC_MESSAGE_CATALOG) expect(m.schema.safeParse(m.example).success).toBe(true);
  });
});
