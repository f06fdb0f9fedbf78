/**
 * A task as a conversation (the default task view): the prompt, each model reply as Markdown (Lua highlighted, a
 * WRITE_FILE as a diff against the file's previous version), each command call with its output (collapsed when
 * long, error lines marked), questions and answers, bounces and tolerated deviations as small notes, the result.
 * Per reply its tokens and time as quiet figures; above, a small chart of tokens and model seconds per step.
 *
 * Records are read whole but without the model input (`input=0`), forward by `after_seq` as `step` events come; a
 * reply being streamed (`delta` events) shows as it is written until its record arrives. Only the last
 * {@link WINDOW} items are drawn at first ("show earlier" adds more), so a task of thousands of records paints fast.
 */
import {
  conversation,
  lineDiff,
  stepFigures,
  stepFromWire,
  type ConversationItem,
  type ConversationMessage,
  type ConversationStep,
  type ConversationUsage,
  type StepFigures,
  type WrittenFile,
} from '@ccagent/protocol/conversation';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, ApiError } from '../api.js';
import { eventTaskId, live } from '../events.js';
import { duration } from '../format.js';
import { highlight } from '../lua.js';
import { CodeBlock, Markdown } from '../markdown.js';
import { previewCut, visible } from '../text.js';
import type { TaskDetail } from '../wire.js';

/** Items drawn at first, and added by each "show earlier". */
export const WINDOW = 150;
/** Records per request: the route's largest page (the records carry no model input). */
const PAGE = 500;
/** Most bars the chart draws: more steps are summed into buckets of consecutive steps. */
const CHART_BARS = 120;
/** Output past this many characters is drawn without per-line error marks. */
const MARK_LINES_MAX = 200_000;
const ERROR_LINE = /error|traceback|exception|failed|attempt to|:\d+:|^\s*\[C\]|^\s*stack/i;

/** The follow-up messages of a task read with `messages=1`, in the form the conversation reads. */
export function messagesOf(detail: TaskDetail): ConversationMessage[] {
  return (detail.messages ?? []).map((h) => {
    const m = h as { text?: unknown; from?: unknown };
    return {
      text: typeof m.text === 'string' ? m.text : '',
      at: h.at,
      ...(typeof m.from === 'string' ? { from: m.from } : {}),
    };
  });
}

/** The task's records in conversation form, kept current; and the text being streamed per engine step. */
function useRecords(id: string): {
  steps: ConversationStep[];
  streaming: Map<number, string>;
  error: string | undefined;
  loaded: boolean;
} {
  const [steps, setSteps] = useState<ConversationStep[]>([]);
  const [streaming, setStreaming] = useState<Map<number, string>>(new Map());
  const [error, setError] = useState<string | undefined>(undefined);
  const [loaded, setLoaded] = useState(false);
  const lastSeq = useRef(0);
  const fetching = useRef(false);
  const again = useRef(false);

  useEffect(() => {
    let gone = false;
    lastSeq.current = 0;
    setSteps([]);
    setStreaming(new Map());
    setLoaded(false);
    const fetchMore = async (): Promise<void> => {
      if (fetching.current) {
        again.current = true;
        return;
      }
      fetching.current = true;
      try {
        for (;;) {
          again.current = false;
          const page = await api.records(id, lastSeq.current, PAGE);
          if (gone) return;
          const fresh = page.steps.filter((s) => s.seq > lastSeq.current).map(stepFromWire);
          if (fresh.length > 0) {
            lastSeq.current = fresh[fresh.length - 1]!.seq;
            setSteps((old) => old.concat(fresh));
            // A reply's record is in: its streamed text is no longer needed.
            const done = new Set(fresh.filter((s) => s.output !== undefined).map((s) => s.step));
            setStreaming((m) => {
              if (![...m.keys()].some((k) => done.has(k))) return m;
              const n = new Map(m);
              for (const k of done) n.delete(k);
              return n;
            });
          }
          if (!page.has_more && !again.current) break;
        }
        setLoaded(true);
        setError(undefined);
      } catch (e) {
        if (!gone) setError(e instanceof ApiError ? e.message : String(e));
      } finally {
        fetching.current = false;
      }
    };
    void fetchMore();
    const off = live.on((e) => {
      if (e.type === 'resync') {
        void fetchMore();
        return;
      }
      if (eventTaskId(e) !== id) return;
      if (e.type === 'step') void fetchMore();
      else if (e.type === 'delta') {
        const { step, delta } = e.data;
        setStreaming((m) => new Map(m).set(step, (m.get(step) ?? '') + delta));
      }
    });
    return () => {
      gone = true;
      off();
    };
  }, [id]);
  return { steps, streaming, error, loaded };
}

/** The conversation view of one task. */
export function ConversationView({ detail }: { detail: TaskDetail }) {
  const t = detail.task;
  const { steps, streaming, error, loaded } = useRecords(t.id);
  const [shown, setShown] = useState(WINDOW);
  const items = useMemo(
    () =>
      conversation(
        {
          id: t.id,
          kind: t.kind,
          status: t.status,
          prompt: t.prompt,
          ...(t.result !== undefined ? { result: t.result } : {}),
          ...(t.error !== undefined ? { error: t.error } : {}),
        },
        steps,
        detail.questions.map((q) => ({
          question: q.question,
          askedAt: q.asked_at,
          ...(q.why !== undefined ? { why: q.why } : {}),
          ...(q.answer !== undefined ? { answer: q.answer } : {}),
        })),
        messagesOf(detail),
      ),
    [steps, detail.questions, detail.messages, t.status, t.result, t.error, t.prompt],
  );
  const figures = useMemo(() => stepFigures(items), [items]);
  // Drawn once per change of the figures, not on every "show earlier".
  const chart = useMemo(
    () => (figures.some((f) => f.tokens > 0 || f.modelMs > 0) ? <StepChart figures={figures} /> : null),
    [figures],
  );
  // Streamed text of a step no reply record holds yet.
  const pendingSteps = [...streaming].filter(([, text]) => text !== '');
  const hidden = Math.max(0, items.length - shown);
  // The prompt stays first even when earlier items are hidden.
  const visibleItems = hidden > 0 ? [items[0]!, ...items.slice(items.length - shown + 1)] : items;
  return (
    <section
      class="conversation"
      aria-labelledby="conv-h"
      data-items={items.length}
      data-loaded={loaded ? 'true' : 'false'}
    >
      <h2 id="conv-h" class="sr-only">
        Conversation
      </h2>
      {chart}
      {error !== undefined && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <ol class="thread">
        {visibleItems.flatMap((it, i) => {
          const row = <Item key={itemKey(it, i)} item={it} />;
          if (i !== 0 || hidden === 0) return [row];
          return [
            row,
            <li key="earlier" class="earlier">
              <button type="button" class="small" onClick={() => setShown((n) => n + WINDOW)}>
                Show {Math.min(WINDOW, hidden).toLocaleString('en-US')} earlier (
                {hidden.toLocaleString('en-US')} hidden)
              </button>
            </li>,
          ];
        })}
        {pendingSteps.map(([step, text]) => (
          <li key={`stream-${step}`} class="msg reply streaming" aria-live="polite" data-step={step}>
            <div class="msg-head">
              <span class="who">model</span>
              <span class="muted">step {step} · writing…</span>
            </div>
            <Markdown text={text} />
          </li>
        ))}
      </ol>
      {!loaded && error === undefined && <p class="muted">Loading the conversation…</p>}
    </section>
  );
}

function itemKey(it: ConversationItem, i: number): string {
  return 'seq' in it ? `${it.type}-${it.seq}` : `${it.type}-${i}`;
}

function Figures({ usage, ms }: { usage?: ConversationUsage | undefined; ms?: number | undefined }) {
  const t = usage?.totalDurationMs ?? ms;
  const tok =
    usage && (usage.promptTokens !== undefined || usage.completionTokens !== undefined)
      ? `${usage.promptTokens ?? 0} → ${usage.completionTokens ?? 0} tok`
      : '';
  if (tok === '' && t === undefined) return null;
  return (
    <span class="figures muted nums">
      {tok}
      {tok !== '' && t !== undefined ? ' · ' : ''}
      {duration(t)}
    </span>
  );
}

function Item({ item: it }: { item: ConversationItem }) {
  switch (it.type) {
    case 'prompt':
      return (
        <li class="msg prompt">
          <div class="msg-head">
            <span class="who">prompt</span>
          </div>
          <Long text={it.text} markdown />
        </li>
      );
    case 'reply':
      return (
        <li class={`msg reply r-${it.role}`} data-seq={it.seq}>
          <div class="msg-head">
            <span class="who">{visible(it.role)}</span>
            <span class="muted">
              step {it.step}
              {it.model !== undefined ? ` · ${visible(it.model)}` : ''}
            </span>
            {it.directive !== undefined && <span class="directive">{visible(it.directive)}</span>}
            <Figures usage={it.usage} ms={it.durationMs} />
          </div>
          {it.thinking !== undefined && (
            <details class="thinking">
              <summary>thinking ({it.thinking.length.toLocaleString('en-US')} chars)</summary>
              <Long text={it.thinking} />
            </details>
          )}
          {it.file !== undefined ? (
            <>
              <FileChange file={it.file} />
              {it.text.trim() !== '' && (
                <details class="as-written">
                  <summary>the reply as written</summary>
                  <Long text={it.text} />
                </details>
              )}
            </>
          ) : (
            it.text.trim() !== '' && <Long text={it.text} markdown />
          )}
          {it.calls.map((c, i) => (
            <div key={i} class="tool-ask">
              <span class="muted">calls</span> <code>{visible(c.name)}</code>
              <Long text={c.args} code />
            </div>
          ))}
        </li>
      );
    case 'call':
      return (
        <li class={`msg call${it.ok ? '' : ' failed'}`} data-seq={it.seq}>
          <div class="msg-head">
            <span class="who">ran</span>
            <code>{visible(it.command)}</code>
            <span class={`badge ${it.ok ? 's-completed' : 's-failed'}`}>{it.ok ? 'ok' : 'failed'}</span>
            <Figures ms={it.durationMs} />
          </div>
          {it.args !== '' && it.args !== '{}' && (
            <details class="args">
              <summary>arguments</summary>
              <Long text={it.args} code />
            </details>
          )}
          {it.error !== undefined && <p class="call-error">{visible(it.error)}</p>}
          {it.output !== '' && <Output text={it.output} />}
        </li>
      );
    case 'message':
      return (
        <li class="msg message-item">
          <div class="msg-head">
            <span class="who">message</span>
            {it.from !== undefined && <span class="muted">from {visible(it.from)}</span>}
          </div>
          <Long text={it.text} markdown />
        </li>
      );
    case 'question':
      return (
        <li class="msg question-item">
          <div class="msg-head">
            <span class="who">asks</span>
          </div>
          <p class="q">{visible(it.question)}</p>
          {it.why !== undefined && <p class="muted">why: {visible(it.why)}</p>}
          {it.answer !== undefined ? (
            <p class="a">
              <span class="who">answer</span> {visible(it.answer)}
            </p>
          ) : (
            <p class="muted">not answered yet</p>
          )}
        </li>
      );
    case 'note':
      return (
        <li class={`note-item n-${it.tone}`} data-seq={it.seq}>
          <span class="muted">{it.tone}:</span>{' '}
          {visible(it.text.length > 400 ? `${it.text.slice(0, 400)}…` : it.text)}
        </li>
      );
    case 'pending':
      return (
        <li class="note-item n-pending" data-seq={it.seq}>
          waiting for the {visible(it.role)} model…
        </li>
      );
    case 'result':
      return (
        <li class={`msg result s-${it.status}`}>
          <div class="msg-head">
            <span class="who">result</span>
            <span class={`badge s-${it.status}`}>{visible(it.status)}</span>
          </div>
          {it.error !== undefined && <p class="call-error">{visible(it.error)}</p>}
          {it.text !== '' && <Long text={it.text} markdown />}
        </li>
      );
  }
}

/** Text cut to a preview with "show all": as Markdown, as code, or as plain text. */
export function Long({ text, markdown, code }: { text: string; markdown?: boolean; code?: boolean }) {
  const [open, setOpen] = useState(false);
  const cut = previewCut(text);
  const shown = open || cut === undefined ? text : text.slice(0, cut);
  // The same element while the text is the same: a re-render of the thread does not parse it again.
  const body = useMemo(
    () =>
      markdown ? (
        <Markdown text={shown} />
      ) : code ? (
        <CodeBlock code={shown} />
      ) : (
        <pre class="plain">{visible(shown)}</pre>
      ),
    [shown, markdown, code],
  );
  return (
    <div class="long">
      {body}
      {cut !== undefined && (
        <button type="button" class="small link" aria-expanded={open} onClick={() => setOpen(!open)}>
          {open ? 'Collapse' : `Show all (${text.length.toLocaleString('en-US')} chars)`}
        </button>
      )}
    </div>
  );
}

/** A command's output: collapsed when long, lines that read as errors or tracebacks marked. */
export function Output({ text }: { text: string }) {
  const [open, setOpen] = useState(false);
  const cut = previewCut(text);
  const shown = open || cut === undefined ? text : text.slice(0, cut);
  const marked =
    shown.length <= MARK_LINES_MAX
      ? shown.split('\n').map((l, i) => (
          <span key={i} class={ERROR_LINE.test(l) ? 'line err-line' : 'line'}>
            {visible(l)}
            {'\n'}
          </span>
        ))
      : visible(shown);
  return (
    <div class="long output">
      <pre class="plain">{marked}</pre>
      {cut !== undefined && (
        <button type="button" class="small link" aria-expanded={open} onClick={() => setOpen(!open)}>
          {open ? 'Collapse' : `Show all output (${text.length.toLocaleString('en-US')} chars)`}
        </button>
      )}
    </div>
  );
}

/** A file the model wrote: a diff against its previous version, or the whole file (Lua highlighted). */
function FileChange({ file }: { file: WrittenFile }) {
  const diff = useMemo(
    () => (file.previous !== undefined ? lineDiff(file.previous, file.content) : undefined),
    [file.previous, file.content],
  );
  const lua = (file.language ?? '').toLowerCase() === 'lua' || file.path.endsWith('.lua');
  if (diff === undefined)
    return (
      <div class="file">
        <div class="file-head">
          writes <code>{visible(file.path)}</code>
          {file.previous === undefined ? <span class="muted"> (new in this task)</span> : null}
        </div>
        <CodeBlock code={file.content} lang={lua ? 'lua' : (file.language ?? '')} />
      </div>
    );
  const added = diff.filter((l) => l.op === '+').length;
  const removed = diff.filter((l) => l.op === '-').length;
  return (
    <div class="file">
      <div class="file-head">
        changes <code>{visible(file.path)}</code> <span class="add">+{added}</span>{' '}
        <span class="del">−{removed}</span>
      </div>
      <pre class="code diff">
        <code>
          {diff.map((l, i) => (
            <span key={i} class={l.op === '+' ? 'd-add' : l.op === '-' ? 'd-del' : 'd-same'}>
              {l.op === ' ' ? ' ' : l.op}
              {lua ? highlight(l.text) : visible(l.text)}
              {'\n'}
            </span>
          ))}
        </code>
      </pre>
    </div>
  );
}

/** Tokens and model seconds per step: two rows of small bars (SVG, text in titles only). */
/** `figures` in at most {@link CHART_BARS} buckets of consecutive steps (sums), each named by its step range. */
function buckets(figures: StepFigures[]): { label: string; tokens: number; modelMs: number }[] {
  const per = Math.max(1, Math.ceil(figures.length / CHART_BARS));
  const out: { label: string; tokens: number; modelMs: number }[] = [];
  for (let i = 0; i < figures.length; i += per) {
    const part = figures.slice(i, i + per);
    const first = part[0]!.step;
    const last = part[part.length - 1]!.step;
    out.push({
      label: first === last ? `step ${first}` : `steps ${first}–${last}`,
      tokens: part.reduce((a, f) => a + f.tokens, 0),
      modelMs: part.reduce((a, f) => a + f.modelMs, 0),
    });
  }
  return out;
}

function StepChart({ figures }: { figures: StepFigures[] }) {
  const bars = buckets(figures);
  const maxTok = Math.max(1, ...bars.map((f) => f.tokens));
  const maxMs = Math.max(1, ...bars.map((f) => f.modelMs));
  const n = figures.length;
  // At least 40 bar widths: a task of a few steps gets a few narrow bars, not a wall of colour.
  const w = Math.max(bars.length, 40);
  const totalTok = figures.reduce((a, f) => a + f.tokens, 0);
  const totalMs = figures.reduce((a, f) => a + f.modelMs, 0);
  return (
    <figure class="chart" aria-label="Tokens and model time per step">
      <figcaption class="muted">
        {n.toLocaleString('en-US')} model steps · {totalTok.toLocaleString('en-US')} tokens ·{' '}
        {duration(totalMs)} at the model
      </figcaption>
      <svg viewBox={`0 0 ${w} 42`} preserveAspectRatio="none" role="img" aria-hidden="true">
        {bars.map((f, i) => (
          <g key={f.label}>
            <rect
              class="bar-tok"
              x={i + 0.1}
              width={0.8}
              y={20 - (f.tokens / maxTok) * 20}
              height={(f.tokens / maxTok) * 20}
            >
              <title>{`${f.label}: ${f.tokens} tokens`}</title>
            </rect>
            <rect class="bar-ms" x={i + 0.1} width={0.8} y={22} height={(f.modelMs / maxMs) * 20}>
              <title>{`${f.label}: ${duration(f.modelMs)} at the model`}</title>
            </rect>
          </g>
        ))}
      </svg>
      <div class="chart-key muted">
        <span class="key-tok">tokens</span> <span class="key-ms">model seconds</span>
      </div>
    </figure>
  );
}
