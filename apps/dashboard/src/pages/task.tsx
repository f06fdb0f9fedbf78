/**
 * One task: its header and actions, the open question, and one of two views of its step log: the conversation (the
 * default, `#/tasks/<id>`: see conversation.tsx) or the record timeline (`#/tasks/<id>/timeline`). The timeline
 * holds step summaries (`summary=1`: no model input/output), fetched forward with `after_seq` so a restart or a
 * resync never duplicates a step, and then added from the live `step` records, which carry that short form; the
 * selected step is read whole and shown in the detail pane.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, ApiError } from '../api.js';
import { eventTaskId, live } from '../events.js';
import { useFeatures, VIEWER_NOTE } from '../features.js';
import { age, duration, statusText, when } from '../format.js';
import { Clip, CopyButton, Line, visible } from '../text.js';
import { MODEL_REQUEST, requestRole, shownSteps } from '../timeline.js';
import { VirtualList } from '../virtual-list.js';
import type { TaskDetail, WireQuestion, WireStep, WireTask } from '../wire.js';
import { ConversationView } from './conversation.js';
import { ExportButtons } from './export.js';
import { ScreenPanel } from '../screen.js';

const STEP_ROW = 40;
const STEP_PAGE = 500;
const TERMINAL = ['completed', 'failed', 'cancelled'];

/** Which view of the step log a task page shows. */
export type TaskView = 'conversation' | 'timeline';

/** Task page. */
export function TaskPage({ id, now, view = 'conversation' }: { id: string; now: number; view?: TaskView }) {
  const [detail, setDetail] = useState<TaskDetail | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);

  const refreshDetail = (): void => {
    api
      .task(id, true)
      .then((d) => {
        setDetail(d);
        setError(undefined);
      })
      .catch((e: unknown) => setError(e instanceof ApiError ? e.message : String(e)));
  };

  useEffect(() => {
    setDetail(undefined);
    refreshDetail();
    let pending: ReturnType<typeof setTimeout> | undefined;
    const detailSoon = (): void => {
      if (pending !== undefined) return;
      pending = setTimeout(() => {
        pending = undefined;
        refreshDetail();
      }, 100);
    };
    const off = live.on((e) => {
      if (e.type === 'resync') {
        detailSoon();
        return;
      }
      if (eventTaskId(e) !== id) return;
      if (e.type === 'step' || e.type === 'delta') return;
      if (e.type === 'task') {
        const t = e.data;
        setDetail((d) => (d ? { ...d, task: { ...d.task, ...t, prompt: d.task.prompt } } : d));
      }
      detailSoon();
    });
    return () => {
      off();
      if (pending !== undefined) clearTimeout(pending);
    };
  }, [id]);

  if (!detail) {
    return (
      <section class="page">
        <p>
          <a href="#/tasks">← Tasks</a>
        </p>
        {error !== undefined ? (
          <p class="error" role="alert">
            {error}
          </p>
        ) : (
          <p>Loading task {visible(id)}…</p>
        )}
      </section>
    );
  }

  const t = detail.task;
  const open = detail.questions.filter((q) => q.answer === undefined).pop();
  const base = `#/tasks/${encodeURIComponent(id)}`;
  return (
    <section class="page task-page" aria-labelledby="task-h">
      <p class="crumbs">
        <a href="#/tasks">← Tasks</a>
      </p>
      <div class="page-head">
        <h1 id="task-h">
          Task <code>{visible(t.id)}</code>
        </h1>
        <span class={`badge s-${t.status}`} data-testid="task-status">
          {statusText(t.status)}
        </span>
      </div>
      <dl class="facts">
        <Fact k="kind">{visible(t.kind)}</Fact>
        <Fact k="computer">{t.client_id === null ? 'any' : visible(t.client_id)}</Fact>
        <Fact k="created">
          <span title={when(t.created_at)}>{age(t.created_at, now)} ago</span>
        </Fact>
        <Fact k="steps">{t.counters.steps}</Fact>
        <Fact k="tool calls">{t.counters.tool_calls}</Fact>
        <Fact k="questions">{t.counters.questions}</Fact>
        {t.progress_message !== undefined && (
          <Fact k="progress">
            <Line text={t.progress_message} />
          </Fact>
        )}
      </dl>
      {t.error !== undefined && (
        <div class="error" role="status">
          <strong>{visible(t.error.code)}</strong>: <Line text={t.error.message} max={400} />
        </div>
      )}
      {t.client_id !== null && <ScreenPanel clientId={t.client_id} now={now} />}
      {view === 'timeline' && t.result !== undefined && <Clip label="Result" value={t.result} />}
      {view === 'timeline' && <Clip label="Prompt" value={t.prompt} />}
      <Actions task={t} onChange={refreshDetail} />
      {open && <AnswerForm task={t} question={open} onDone={refreshDetail} />}
      {error !== undefined && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <div class="view-bar">
        <nav class="tabs" aria-label="Task views">
          <a href={base} aria-current={view === 'conversation' ? 'page' : undefined}>
            Conversation
          </a>
          <a href={`${base}/timeline`} aria-current={view === 'timeline' ? 'page' : undefined}>
            Timeline
          </a>
        </nav>
        <ExportButtons id={id} />
      </div>
      {view === 'conversation' ? <ConversationView detail={detail} /> : <Timeline id={id} />}
    </section>
  );
}

/** The record timeline: every step-log record as a row, the selected one whole beside it. */
function Timeline({ id }: { id: string }) {
  const [steps, setSteps] = useState<WireStep[]>([]);
  const [error, setError] = useState<string | undefined>(undefined);
  // The selected record by seq: a request hidden above it must not move the selection to another record.
  const [selectedSeq, setSelectedSeq] = useState<number | undefined>(undefined);
  const shown = useMemo(() => shownSteps(steps), [steps]);
  const selected = selectedSeq === undefined ? undefined : firstAtOrAfter(shown, selectedSeq);
  const setSelected = (i: number): void => setSelectedSeq(shown[i]?.seq);
  const lastSeq = useRef(0);
  const fetching = useRef<Promise<void> | undefined>(undefined);
  const again = useRef(false);

  // Read every step after the last one held; a call while one runs makes it go round once more.
  const fetchSteps = (): void => {
    if (fetching.current) {
      again.current = true;
      return;
    }
    fetching.current = (async () => {
      try {
        for (;;) {
          again.current = false;
          const page = await api.steps(id, lastSeq.current, STEP_PAGE, true);
          const fresh = page.steps.filter((s) => s.seq > lastSeq.current);
          if (fresh.length > 0) {
            lastSeq.current = fresh[fresh.length - 1]!.seq;
            setSteps((old) => old.concat(fresh));
          }
          if (!page.has_more && !again.current) break;
        }
      } catch (e) {
        setError(e instanceof ApiError ? e.message : String(e));
      } finally {
        fetching.current = undefined;
      }
    })();
  };

  useEffect(() => {
    lastSeq.current = 0;
    setSteps([]);
    setSelectedSeq(undefined);
    fetchSteps();
    const off = live.on((e) => {
      if (e.type === 'resync') return fetchSteps();
      if (e.type !== 'step' || e.data.task_id !== id) return;
      // The record's short form is in the event: a row at once, no read (unless a read is running or it is held).
      if (e.data.summary && fetching.current === undefined) {
        if (e.data.seq <= lastSeq.current) return;
        const row: WireStep = e.data;
        lastSeq.current = row.seq;
        return setSteps((old) => old.concat(row));
      }
      fetchSteps();
    });
    return off;
  }, [id]);

  return (
    <>
      {error !== undefined && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <div class="timeline-wrap">
        <div class="timeline">
          <h2 id="timeline-h">
            Timeline <span class="muted">({shown.length.toLocaleString('en-US')} records)</span>
          </h2>
          <VirtualList
            id="timeline"
            label="Step log"
            count={shown.length}
            rowHeight={STEP_ROW}
            followEnd={selected === undefined}
            active={selected ?? Math.max(0, shown.length - 1)}
            onActive={setSelected}
            onOpen={(i) => {
              setSelected(i);
              document.getElementById('step-detail')?.focus();
            }}
            row={(i) => <StepRow s={shown[i]!} />}
            empty="No steps yet."
          />
        </div>
        <StepDetail taskId={id} step={selected !== undefined ? shown[selected] : undefined} />
      </div>
    </>
  );
}

function Fact({ k, children }: { k: string; children: ComponentChildren }) {
  return (
    <div>
      <dt>{k}</dt>
      <dd>{children}</dd>
    </div>
  );
}

/** Index of the first record with `seq` ≥ `seq` (records are in seq order), or undefined past the end. */
function firstAtOrAfter(steps: readonly WireStep[], seq: number): number | undefined {
  let lo = 0;
  let hi = steps.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (steps[mid]!.seq < seq) lo = mid + 1;
    else hi = mid;
  }
  return lo < steps.length ? lo : undefined;
}

/** A step's one-line summary. */
export function stepBrief(s: WireStep): string {
  if (s.kind === MODEL_REQUEST) return `${requestRole(s) ?? 'model'} request sent; no reply recorded yet`;
  if (s.error?.code !== undefined) return `${s.error.code}: ${s.error.message ?? ''}`;
  if (s.validation_errors && s.validation_errors.length > 0)
    return `${s.validation_errors.length} validation error(s): ${s.validation_errors[0]}`;
  const d = s.directive as { type?: string; command?: string } | undefined;
  if (s.kind === 'decision' && d?.type) return d.command ? `${d.type} ${d.command}` : d.type;
  const tc = s.tool_call as { command?: string } | undefined;
  const tr = s.tool_result as { ok?: boolean } | undefined;
  if (s.kind === 'tool_result' && tr)
    return `${tc?.command ?? 'result'}: ${tr.ok === false ? 'error' : 'ok'}`;
  const p = (s as { preview?: string }).preview;
  if (p !== undefined) return p;
  if (d?.type) return d.command ? `${d.type} ${d.command}` : d.type;
  return '';
}

function StepRow({ s }: { s: WireStep }) {
  const tokens =
    s.usage && (s.usage.prompt_tokens !== undefined || s.usage.completion_tokens !== undefined)
      ? `${s.usage.prompt_tokens ?? 0}→${s.usage.completion_tokens ?? 0} tok`
      : '';
  const bad = s.error !== undefined || (s.validation_errors?.length ?? 0) > 0;
  return (
    <div class={`step-row${bad ? ' bad' : ''}`} data-seq={s.seq} data-at={s.at}>
      <span class="seq">#{s.seq}</span>
      <span class={`kind k-${s.kind}`}>{visible(s.kind)}</span>
      <span class="brief">
        <Line text={stepBrief(s)} max={120} />
      </span>
      <span class="muted nums">
        {tokens} {duration(s.duration_ms)}
      </span>
    </div>
  );
}

function StepDetail({ taskId, step }: { taskId: string; step: WireStep | undefined }) {
  const [full, setFull] = useState<WireStep | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  useEffect(() => {
    setFull(undefined);
    setError(undefined);
    if (!step) return;
    let stale = false;
    api
      .step(taskId, step.seq)
      .then((s) => {
        if (!stale) setFull(s);
      })
      .catch((e: unknown) => {
        if (!stale) setError(e instanceof ApiError ? e.message : String(e));
      });
    return () => {
      stale = true;
    };
  }, [taskId, step?.seq]);

  if (!step) {
    return (
      <aside id="step-detail" class="detail" tabIndex={-1} aria-label="Step detail">
        <p class="muted">
          Select a record of the timeline (arrow keys, then Enter) to see everything it holds.
        </p>
      </aside>
    );
  }
  const s = full ?? step;
  const out = s.output as
    { content?: string; thinking?: string; toolCalls?: unknown; doneReason?: string } | undefined;
  const input = s.input as
    | {
        messages?: {
          role: string;
          content?: string;
          thinking?: string;
          tool_calls?: unknown;
          toolCalls?: unknown;
        }[];
      }
    | undefined;
  const { messages, ...request } = input ?? {};
  return (
    <aside id="step-detail" class="detail" tabIndex={-1} aria-label={`Step record ${s.seq}`}>
      <h2>
        Record #{s.seq} <span class="muted">step {s.step}</span>{' '}
        <span class={`kind k-${s.kind}`}>{visible(s.kind)}</span>
      </h2>
      <dl class="facts">
        {s.model !== undefined && <Fact k="model">{visible(s.model)}</Fact>}
        <Fact k="at">{when(s.at)}</Fact>
        {s.duration_ms !== undefined && <Fact k="duration">{duration(s.duration_ms)}</Fact>}
        {s.usage !== undefined && (
          <Fact k="tokens">
            {s.usage.prompt_tokens ?? '?'} in, {s.usage.completion_tokens ?? '?'} out
            {s.usage.total_duration_ms !== undefined
              ? ` (${duration(s.usage.total_duration_ms)} at the model)`
              : ''}
          </Fact>
        )}
      </dl>
      {error !== undefined && <p class="error">{error}</p>}
      {s.error !== undefined && <Clip label="Error" value={s.error} />}
      {s.validation_errors?.map((v, i) => (
        <Clip key={i} label={`Validation error ${i + 1}`} value={v} />
      ))}
      {s.directive !== undefined && <Clip label="Parsed directive" value={s.directive} />}
      {s.tool_call !== undefined && <Clip label="Tool call" value={s.tool_call} />}
      {s.tool_result !== undefined && <Clip label="Tool result" value={s.tool_result} />}
      {out?.thinking !== undefined && <Clip label="Thinking" value={out.thinking} />}
      {out?.content !== undefined && <Clip label="Text out" value={out.content} />}
      {out?.toolCalls !== undefined && <Clip label="Tool calls out" value={out.toolCalls} />}
      {out !== undefined && out.content === undefined && <Clip label="Output" value={out} />}
      {full === undefined && step.input_chars !== undefined && <p class="muted">Loading the model input…</p>}
      {messages !== undefined && (
        <details class="messages" open={messages.length <= 4}>
          <summary>
            Messages in ({messages.length}) — the prompt and memory exactly as the model saw them
          </summary>
          {messages.map((m, i) => (
            <div class="message" key={i}>
              <Clip label={`${i + 1}. ${m.role}`} value={m.content ?? ''} />
              {m.thinking !== undefined && <Clip label={`${i + 1}. thinking`} value={m.thinking} />}
              {(m.tool_calls ?? m.toolCalls) !== undefined && (
                <Clip label={`${i + 1}. tool calls`} value={m.tool_calls ?? m.toolCalls} />
              )}
            </div>
          ))}
        </details>
      )}
      {Object.keys(request).length > 0 && <Clip label="Request options" value={request} />}
      {full !== undefined && (
        <p>
          <CopyButton text={JSON.stringify(full, null, 2)} label="whole record as JSON" />
        </p>
      )}
    </aside>
  );
}

function Actions({ task, onChange }: { task: WireTask; onChange: () => void }) {
  const f = useFeatures();
  const [busy, setBusy] = useState(false);
  const [message, setMessage] = useState('');
  const [note, setNote] = useState<string | undefined>(undefined);
  const terminal = TERMINAL.includes(task.status);
  const act = (what: string, p: Promise<unknown>): void => {
    setBusy(true);
    setNote(undefined);
    p.then(() => {
      setNote(`${what}: done`);
      onChange();
    })
      .catch((e: unknown) => setNote(`${what}: ${e instanceof ApiError ? e.message : String(e)}`))
      .finally(() => setBusy(false));
  };
  const viewer = f.role === 'viewer';
  const canMessage = f.features.includes('message') && !viewer;
  const canRetry = f.features.includes('retry') && !viewer;
  return (
    <div class="actions" role="group" aria-label="Task actions">
      {viewer && (
        <p class="note" role="status">
          {VIEWER_NOTE}
        </p>
      )}
      <button
        type="button"
        class="danger"
        disabled={busy || terminal || viewer}
        onClick={() => act('Cancel', api.cancel(task.id))}
      >
        Cancel task
      </button>
      <button
        type="button"
        disabled={busy || !canRetry || !(task.status === 'failed' || task.status === 'cancelled')}
        title={canRetry ? 'Run this task again' : viewer ? VIEWER_NOTE : 'This server has no retry route yet'}
        onClick={() => act('Retry', api.retry(task.id))}
      >
        Retry
      </button>
      <form
        class="inline"
        onSubmit={(e) => {
          e.preventDefault();
          if (message.trim() === '') return;
          act('Message', api.message(task.id, message));
          setMessage('');
        }}
      >
        <label>
          Follow-up message
          <input
            value={message}
            onInput={(e) => setMessage(e.currentTarget.value)}
            disabled={!canMessage}
            placeholder={
              canMessage
                ? 'tell the model something'
                : viewer
                  ? 'a viewer key cannot send messages'
                  : 'not offered by this server yet'
            }
          />
        </label>
        <button type="submit" disabled={busy || !canMessage || terminal}>
          Send
        </button>
      </form>
      {note !== undefined && (
        <span class="note" role="status">
          {note}
        </span>
      )}
    </div>
  );
}

function AnswerForm({
  task,
  question,
  onDone,
}: {
  task: WireTask;
  question: WireQuestion;
  onDone: () => void;
}) {
  const [text, setText] = useState('');
  const [err, setErr] = useState<string | undefined>(undefined);
  const viewer = useFeatures().role === 'viewer';
  return (
    <form
      class="question"
      aria-label="Question from the model"
      onSubmit={(e) => {
        e.preventDefault();
        api
          .answer(task.id, text, question.question_id)
          .then(() => {
            setText('');
            onDone();
          })
          .catch((x: unknown) => setErr(x instanceof ApiError ? x.message : String(x)));
      }}
    >
      <h2>The model asks</h2>
      <p class="question-text">{visible(question.question)}</p>
      {question.why !== undefined && <p class="muted">Why: {visible(question.why)}</p>}
      <label>
        Your answer
        <textarea value={text} onInput={(e) => setText(e.currentTarget.value)} rows={2} required />
      </label>
      <button type="submit" class="primary" disabled={viewer} title={viewer ? VIEWER_NOTE : undefined}>
        Answer
      </button>
      {err !== undefined && (
        <p class="error" role="alert">
          {err}
        </p>
      )}
    </form>
  );
}
