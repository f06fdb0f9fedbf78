/**
 * The generated part of docs/http-api.md: each route's query, body and response fields, and the fields of every
 * record, rendered from the zod schemas (http-schemas.ts, http-routes.ts). The prose around it is written by hand;
 * the generated part sits between {@link HTTP_DOC_BEGIN} and {@link HTTP_DOC_END}.
 */
import type { z } from 'zod';
import { HTTP_RECORDS, HTTP_ROUTES, type HttpRouteSpec } from './http-routes.js';

/** Marks the start of the generated reference in docs/http-api.md. */
export const HTTP_DOC_BEGIN = '<!-- BEGIN GENERATED: HTTP reference (npm run docs:protocol) -->';
/** Marks its end. */
export const HTTP_DOC_END = '<!-- END GENERATED: HTTP reference -->';

interface Def {
  type: string;
  [key: string]: unknown;
}

function defOf(schema: unknown): Def {
  return (schema as { def: Def }).def;
}

function recordName(schema: unknown): string | undefined {
  return HTTP_RECORDS.find((r) => r.schema === schema)?.name;
}

/** A short type of a zod schema, naming records (`Task`, `Step[]`) instead of spelling them out. */
function typeOf(schema: unknown, top = false): string {
  const name = top ? undefined : recordName(schema);
  if (name !== undefined) return `[${name}](#${name.toLowerCase()})`;
  const d = defOf(schema);
  switch (d.type) {
    case 'optional':
    case 'default':
    case 'nullable': {
      const inner = typeOf(d['innerType']);
      return d.type === 'nullable' ? `${inner} or null` : inner;
    }
    case 'pipe':
      return typeOf(d['in']);
    case 'array': {
      const inner = typeOf(d['element']);
      return inner.includes(' ') ? `array of (${inner})` : `${inner}[]`;
    }
    case 'enum':
      return Object.values(d['entries'] as Record<string, string>)
        .map((v) => `\`${v}\``)
        .join(', ');
    case 'literal':
      return (d['values'] as unknown[]).map((v) => `\`${JSON.stringify(v)}\``).join(', ');
    case 'record':
      return 'object';
    case 'unknown':
    case 'any':
      return 'any JSON';
    default:
      return d.type;
  }
}

/** Whether a field may be left out. */
function optional(schema: unknown): boolean {
  const t = defOf(schema).type;
  return t === 'optional' || t === 'default';
}

function defaultOf(schema: unknown): string | undefined {
  const d = defOf(schema);
  if (d.type !== 'default') return undefined;
  const v = d['defaultValue'];
  return JSON.stringify(typeof v === 'function' ? (v as () => unknown)() : v);
}

function shapeOf(schema: unknown): Record<string, unknown> {
  return (defOf(schema)['shape'] as Record<string, unknown> | undefined) ?? {};
}

function cell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

/** The object schema inside optional/default/nullable wrappers and arrays, unless it is a named record. */
function nestedObject(schema: unknown): { schema: unknown; suffix: string } | undefined {
  let s = schema;
  let suffix = '';
  for (;;) {
    if (recordName(s) !== undefined) return undefined;
    const d = defOf(s);
    if (d.type === 'optional' || d.type === 'default' || d.type === 'nullable') s = d['innerType'];
    else if (d.type === 'array') {
      s = d['element'];
      suffix += '[]';
    } else return d.type === 'object' ? { schema: s, suffix } : undefined;
  }
}

function fieldRows(schema: unknown, prefix: string, out: string[]): void {
  for (const [key, field] of Object.entries(shapeOf(schema))) {
    const notes: string[] = [];
    const description = (field as { description?: string }).description;
    if (description !== undefined) notes.push(description);
    const dflt = defaultOf(field);
    if (dflt !== undefined) notes.push(`default ${dflt}`);
    const req = optional(field) ? 'no' : 'yes';
    out.push(`| \`${prefix}${key}\` | ${cell(typeOf(field))} | ${req} | ${cell(notes.join('; '))} |`);
    const nested = nestedObject(field);
    if (nested) fieldRows(nested.schema, `${prefix}${key}${nested.suffix}.`, out);
  }
}

function fieldTable(schema: z.ZodType, first: string): string[] {
  const out = [`| ${first} | type | required | notes |`, '| --- | --- | --- | --- |'];
  fieldRows(schema, '', out);
  return out;
}

function route(r: HttpRouteSpec): string[] {
  const out = [
    `### \`${r.method} ${r.path}\``,
    '',
    r.summary + (r.open ? ' Open even with a token.' : ''),
    '',
  ];
  if (r.query) out.push('Query:', '', ...fieldTable(r.query, 'parameter'), '');
  if (r.body) out.push('Body (JSON):', '', ...fieldTable(r.body, 'field'), '');
  const done = new Set<z.ZodType>();
  for (const res of r.responses) {
    if (res.schema === undefined) {
      out.push(`Response \`${res.status}\`: \`${res.contentType ?? 'text/plain'}\`.`, '');
      continue;
    }
    if (done.has(res.schema)) continue;
    done.add(res.schema);
    const statuses = r.responses.filter((x) => x.schema === res.schema).map((x) => `\`${x.status}\``);
    const when = res.when !== undefined ? ` with \`${res.when}\`` : '';
    out.push(`Response ${statuses.join(', ')}${when}:`, '', ...fieldTable(res.schema, 'field'), '');
  }
  if (r.events) {
    out.push(
      'Each record is `id: <epoch>-<n>`, `event: <kind>`, `data: <one JSON object>`; readers skip kinds they do not know.',
      '',
    );
    for (const e of r.events) {
      out.push(`Event \`${e.name}\`: ${e.description}`, '', ...fieldTable(e.schema, 'field'), '');
    }
  }
  return out;
}

/** The generated reference, markers included (deterministic). */
export function renderHttpApiReference(): string {
  const out = [
    HTTP_DOC_BEGIN,
    '',
    '## Reference',
    '',
    'Generated from the zod schemas in `@ccagent/protocol` (`packages/protocol/src/http/`); do not edit by hand.',
    'Responses may carry more fields in a newer server; requests with an unknown field are refused.',
    '',
  ];
  for (const r of HTTP_ROUTES) out.push(...route(r));
  out.push('### Records', '');
  for (const rec of HTTP_RECORDS) {
    out.push(
      `#### ${rec.name}`,
      '',
      rec.description,
      '',
      ...fieldTable(rec.schema as z.ZodType, 'field'),
      '',
    );
  }
  out.push(HTTP_DOC_END);
  return out.join('\n') + '\n';
}

/**
 * `doc` (the text of docs/http-api.md) with its generated part replaced by {@link renderHttpApiReference}, or with
 * the reference appended when the markers are missing.
 */
export function withHttpApiReference(doc: string): string {
  const begin = doc.indexOf(HTTP_DOC_BEGIN);
  const end = doc.indexOf(HTTP_DOC_END);
  if (begin === -1 || end === -1 || end < begin) return `${doc.trimEnd()}\n\n${renderHttpApiReference()}`;
  return doc.slice(0, begin) + renderHttpApiReference() + doc.slice(end + HTTP_DOC_END.length + 1);
}
