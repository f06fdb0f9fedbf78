/**
 * Showing untrusted text: everything a model, a prompt or a CC computer wrote is rendered as text nodes (never as
 * HTML), control characters (ANSI escapes included) are drawn as their visible symbols, and long content is cut to a
 * preview with "show all" and "copy".
 */
import { valueText } from '@ccagent/protocol/conversation';
import { inertText } from '@ccagent/protocol/text';
import { useState } from 'preact/hooks';

/** Characters shown before "show all". */
export const PREVIEW_CHARS = 1500;
/** Lines shown before "show all". */
export const PREVIEW_LINES = 24;

/**
 * `text` with control characters (C0, DEL, C1), bidi overrides and other format characters replaced by visible
 * symbols (newline and tab kept): ESC becomes ␛, so an ANSI colour sequence reads `␛[31m` instead of silently
 * vanishing or being interpreted. The one rule the CLI and the server's console share: `@ccagent/protocol/text`.
 */
export function visible(text: string): string {
  return inertText(text);
}

/** A value as display text: strings as they are, anything else as indented JSON (the conversation's rule). */
export { valueText as asText } from '@ccagent/protocol/conversation';

/** Where `text` is cut for its preview (undefined: short enough to show whole). */
export function previewCut(text: string, chars = PREVIEW_CHARS, lines = PREVIEW_LINES): number | undefined {
  let n = 0;
  const end = Math.min(text.length, chars);
  for (let i = 0; i < end; i++) if (text.charCodeAt(i) === 10 && ++n >= lines) return i;
  return text.length > chars ? chars : undefined;
}

/** Copy `text` to the clipboard; resolves false when the browser refuses. */
export async function copyText(text: string): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const area = document.createElement('textarea');
    area.value = text;
    area.setAttribute('readonly', '');
    area.style.position = 'fixed';
    area.style.opacity = '0';
    document.body.appendChild(area);
    area.select();
    let ok = false;
    try {
      ok = document.execCommand('copy');
    } catch {
      ok = false;
    }
    area.remove();
    return ok;
  }
}

/** A copy button with feedback. */
export function CopyButton({ text, label }: { text: string; label?: string }) {
  const [done, setDone] = useState<'' | 'copied' | 'failed'>('');
  return (
    <button
      type="button"
      class="small"
      aria-label={`Copy ${label ?? 'text'}`}
      onClick={() => {
        void copyText(text).then((ok) => {
          setDone(ok ? 'copied' : 'failed');
          setTimeout(() => setDone(''), 1500);
        });
      }}
    >
      {done === 'copied' ? 'Copied' : done === 'failed' ? 'Copy failed' : 'Copy'}
    </button>
  );
}

/** Long text, collapsed to a preview with "show all" and "copy". */
export function Clip({ value, label }: { value: unknown; label: string }) {
  const text = valueText(value);
  const cut = previewCut(text);
  const preview = cut === undefined ? undefined : text.slice(0, cut);
  const [open, setOpen] = useState(false);
  const shown = open || preview === undefined ? text : preview;
  return (
    <div class="clip">
      <div class="clip-bar">
        <span class="clip-label">{label}</span>
        <span class="muted">{text.length.toLocaleString('en-US')} chars</span>
        {preview !== undefined && (
          <button type="button" class="small" aria-expanded={open} onClick={() => setOpen(!open)}>
            {open ? 'Collapse' : 'Show all'}
          </button>
        )}
        <CopyButton text={text} label={label} />
      </div>
      <pre class="clip-text">
        {visible(shown)}
        {!open && preview !== undefined ? '\n…' : ''}
      </pre>
    </div>
  );
}

/** One line of untrusted text (control characters visible, cut at `max`). */
export function Line({ text, max = 160 }: { text: string; max?: number }) {
  const one = text.length > max ? `${text.slice(0, max)}…` : text;
  return <>{visible(one.replace(/\s+/g, ' '))}</>;
}
