import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  HTTP_DOC_BEGIN,
  HTTP_DOC_END,
  HTTP_EVENTS,
  HTTP_RECORDS,
  HTTP_ROUTES,
  renderHttpApiReference,
  withHttpApiReference,
} from '../index.js';

const DOC = new URL('../../../../docs/http-api.md', import.meta.url);

describe('docs/http-api.md reference', () => {
  it('is up to date with the HTTP schemas (run `npm run docs:protocol` when this fails)', () => {
    const checkedIn = readFileSync(DOC, 'utf8');
    expect(checkedIn).toContain(HTTP_DOC_BEGIN);
    expect(checkedIn).toContain(HTTP_DOC_END);
    if (withHttpApiReference(checkedIn) !== checkedIn) {
      const a = checkedIn.split('\n');
      const b = withHttpApiReference(checkedIn).split('\n');
      const i = a.findIndex((line, n) => line !== b[n]);
      expect({ line: i + 1, checkedIn: a[i], generated: b[i] }).toEqual({ line: -1 });
    }
  });

  it('documents every route, every record, every event of the stream and every field of a task (guards against a route, event or field the reference leaves out)', () => {
    const text = renderHttpApiReference();
    for (const r of HTTP_ROUTES) expect(text).toContain(`### \`${r.method} ${r.path}\``);
    for (const rec of HTTP_RECORDS) expect(text).toContain(`#### ${rec.name}`);
    for (const e of HTTP_EVENTS) expect(text).toContain(`Event \`${e.name}\`: `);
    expect(text).toContain('| `prompt_truncated` |');
    expect(text).toContain('| `tools[].status` |');
    expect(text).toContain('Response `200` with `summary=1`:');
    expect(text).toContain('Response `200` with `steps=0`:');
    for (const field of [
      'status',
      'client_id',
      'allowed_commands',
      'progress_message',
      'budgets.deadline_at',
    ])
      expect(text).toContain(`| \`${field}\` |`);
  });

  it('replaces only its own part of the document, and renders the same text twice', () => {
    const doc = `# Title\n\nprose\n\n${renderHttpApiReference()}\n## After\n`;
    expect(withHttpApiReference(doc)).toBe(doc);
    const stale = doc.replace('| `prompt` |', '| `promptx` |');
    expect(withHttpApiReference(stale)).toBe(doc);
    expect(renderHttpApiReference()).toBe(renderHttpApiReference());
  });
});
