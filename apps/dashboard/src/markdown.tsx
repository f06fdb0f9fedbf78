/**
 * Model text as Markdown, rendered strictly: the text is split into blocks (fenced code, headings, lists, quotes,
 * rules, paragraphs) and inline spans (code, bold, italic, links) and each becomes a Preact element whose content is
 * a text node. Nothing is ever parsed as HTML: a `<script>` in a reply is the text "<script>"; a link is shown as its
 * words and its address (never followed, never an `<a href>`), an image as its alt text and address (never loaded).
 * Control characters are made visible as everywhere else ({@link visible}).
 *
 * Why not a library: the well-kept Markdown libraries (marked, markdown-it, micromark) produce an HTML string that
 * must then be sanitised (DOMPurify) and set with innerHTML — about 20–40 KB gzipped together, half the budget of the
 * whole page, and a sanitiser between model text and the DOM. Building elements directly needs neither; it supports
 * the subset models write (CommonMark's common blocks and inline marks), and what it does not know stays text.
 */
import type { ComponentChildren, VNode } from 'preact';
import { highlight } from './lua.js';
import { visible } from './text.js';

/** Longest text rendered as Markdown; beyond it the text is shown as it is (pre-formatted). */
export const MARKDOWN_MAX_CHARS = 200_000;

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([\w+#.-]*)[^\n]*$/;
const HEADING = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const RULE = /^ {0,3}([-*_])(\s*\1){2,}\s*$/;
const BULLET = /^(\s*)([-*+])\s+(.*)$/;
const ORDERED = /^(\s*)(\d{1,9})[.)]\s+(.*)$/;
const QUOTE = /^ {0,3}>\s?(.*)$/;

/** Inline marks: code span, bold, italic, link or image. */
const INLINE =
  /(`+)([\s\S]*?[^`])\1(?!`)|\*\*([^*\n]+?)\*\*|(?<![\w])__([^_\n]+?)__(?![\w])|\*([^*\s][^*\n]*?)\*|(?<![\w])_([^_\s][^_\n]*?)_(?![\w])|(!?)\[([^\]\n]*)\]\(([^)\s]*)\)/g;

function inline(text: string, key = 0): ComponentChildren[] {
  const out: ComponentChildren[] = [];
  let last = 0;
  let k = key;
  for (const m of text.matchAll(INLINE)) {
    const at = m.index;
    if (at > last) out.push(visible(text.slice(last, at)));
    if (m[1] !== undefined) out.push(<code key={k++}>{visible(m[2]!.trim())}</code>);
    else if (m[3] !== undefined || m[4] !== undefined)
      out.push(<strong key={k++}>{inline(m[3] ?? m[4]!, k * 100)}</strong>);
    else if (m[5] !== undefined || m[6] !== undefined)
      out.push(<em key={k++}>{inline(m[5] ?? m[6]!, k * 100)}</em>);
    else {
      // A link or an image: its words, then the address as quiet text. Never followed, never loaded.
      const image = m[7] === '!';
      out.push(
        <span key={k++} class="md-link">
          {image ? `[image: ${visible(m[8]!)}]` : inline(m[8]!, k * 100)}
          <span class="muted"> ({visible(m[9]!)})</span>
        </span>,
      );
    }
    last = at + m[0].length;
  }
  if (last < text.length) out.push(visible(text.slice(last)));
  return out;
}

/** A code block: Lua (and unnamed code that reads like Lua) highlighted, anything else as text. */
export function CodeBlock({ code, lang }: { code: string; lang?: string }) {
  const l = (lang ?? '').toLowerCase();
  return (
    <pre class="code" data-lang={l || undefined}>
      <code>{l === 'lua' ? highlight(code) : visible(code)}</code>
    </pre>
  );
}

interface ListItem {
  ordered: boolean;
  lines: string[];
}

/** Markdown `text` as elements (see the module comment). */
export function Markdown({ text }: { text: string }): VNode {
  if (text.length > MARKDOWN_MAX_CHARS)
    return (
      <div class="md">
        <pre class="plain">{visible(text)}</pre>
      </div>
    );
  return <div class="md">{blocks(text.replace(/\r\n?/g, '\n').split('\n'))}</div>;
}

function blocks(lines: string[]): VNode[] {
  const out: VNode[] = [];
  let i = 0;
  let k = 0;
  while (i < lines.length) {
    const line = lines[i]!;
    if (line.trim() === '') {
      i++;
      continue;
    }
    const f = FENCE.exec(line);
    if (f) {
      const mark = f[1]!;
      const body: string[] = [];
      i++;
      while (
        i < lines.length &&
        !new RegExp(`^ {0,3}${mark[0] === '`' ? '`' : '~'}{${mark.length},}\\s*$`).test(lines[i]!)
      )
        body.push(lines[i++]!);
      i++;
      out.push(<CodeBlock key={k++} code={body.join('\n')} lang={f[2] ?? ''} />);
      continue;
    }
    const h = HEADING.exec(line);
    if (h) {
      const level = Math.min(6, h[1]!.length + 2);
      const Tag = `h${level}` as 'h3';
      out.push(
        <Tag key={k++} class="md-h">
          {inline(h[2]!)}
        </Tag>,
      );
      i++;
      continue;
    }
    if (RULE.test(line)) {
      out.push(<hr key={k++} />);
      i++;
      continue;
    }
    if (QUOTE.test(line)) {
      const body: string[] = [];
      while (i < lines.length && QUOTE.test(lines[i]!)) body.push(QUOTE.exec(lines[i++]!)![1]!);
      out.push(<blockquote key={k++}>{blocks(body)}</blockquote>);
      continue;
    }
    if (BULLET.test(line) || ORDERED.test(line)) {
      const ordered = ORDERED.test(line);
      const items: ListItem[] = [];
      while (i < lines.length) {
        const l = lines[i]!;
        const m = (ordered ? ORDERED : BULLET).exec(l);
        if (m && m[1]!.length < 2) items.push({ ordered, lines: [m[3]!] });
        else if (items.length > 0 && l.trim() !== '' && /^\s+/.test(l))
          items.at(-1)!.lines.push(l.replace(/^\s{1,4}/, ''));
        else break;
        i++;
      }
      const li = items.map((it, n) => (
        <li key={n}>{it.lines.length === 1 ? inline(it.lines[0]!) : blocks(it.lines)}</li>
      ));
      out.push(ordered ? <ol key={k++}>{li}</ol> : <ul key={k++}>{li}</ul>);
      continue;
    }
    const para: string[] = [];
    while (
      i < lines.length &&
      lines[i]!.trim() !== '' &&
      !FENCE.test(lines[i]!) &&
      !HEADING.test(lines[i]!) &&
      !QUOTE.test(lines[i]!) &&
      !(para.length > 0 && (BULLET.test(lines[i]!) || ORDERED.test(lines[i]!)))
    )
      para.push(lines[i++]!);
    const parts: ComponentChildren[] = [];
    para.forEach((p, n) => {
      if (n > 0) parts.push(<br key={`b${n}`} />);
      parts.push(...inline(p, n * 1000));
    });
    out.push(<p key={k++}>{parts}</p>);
  }
  return out;
}
