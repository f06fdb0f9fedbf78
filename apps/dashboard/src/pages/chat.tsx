/**
 * Talk to an agent (`#/chat`, `#/chat/<task id>`): a composer under the conversation, keyboard first — Enter sends,
 * Shift+Enter starts a new line, the composer has the focus. The first message starts a task of the chosen kind
 * (`chat` by default: the direct streaming chat mode); the next ones are follow-up messages the model reads on its next
 * call; while the task waits for an answer, Enter answers its question. The reply streams into the thread as the
 * model writes it (the conversation view's `delta` handling).
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError } from '../api.js';
import { eventTaskId, live } from '../events.js';
import { useFeatures, VIEWER_NOTE } from '../features.js';
import { statusText } from '../format.js';
import { navigate } from '../router.js';
import { visible } from '../text.js';
import type { TaskDetail } from '../wire.js';
import { ConversationView } from './conversation.js';

/** The chat page; `id` is the task talked with (none: the next message starts one). */
export function ChatPage({ id }: { id?: string | undefined }) {
  const f = useFeatures();
  const viewer = f.role === 'viewer';
  const [detail, setDetail] = useState<TaskDetail | undefined>(undefined);
  const [kind, setKind] = useState('chat');
  const [text, setText] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | undefined>(undefined);
  const box = useRef<HTMLTextAreaElement>(null);

  useEffect(() => {
    setDetail(undefined);
    if (id === undefined) return;
    let gone = false;
    const refresh = (): void => {
      api
        .task(id, true)
        .then((d) => {
          if (!gone) setDetail(d);
        })
        .catch((e: unknown) => {
          if (!gone) setError(e instanceof ApiError ? e.message : String(e));
        });
    };
    refresh();
    const off = live.on((e) => {
      if (e.type === 'resync' || (eventTaskId(e) === id && e.type !== 'step' && e.type !== 'delta'))
        refresh();
    });
    return () => {
      gone = true;
      off();
    };
  }, [id]);

  // After the shell has moved the focus to <main> on navigation (its effect runs after this page's).
  useEffect(() => {
    const t = setTimeout(() => box.current?.focus(), 0);
    return () => clearTimeout(t);
  }, [id]);

  const open = detail?.questions.filter((q) => q.answer === undefined).pop();
  const status = detail?.task.status;
  const send = (): void => {
    const message = text.trim();
    if (message === '' || busy || viewer) return;
    setBusy(true);
    setError(undefined);
    const done = (p: Promise<unknown>): void => {
      p.then(() => setText(''))
        .catch((e: unknown) => setError(e instanceof ApiError ? e.message : String(e)))
        .finally(() => {
          setBusy(false);
          box.current?.focus();
        });
    };
    if (id === undefined) {
      done(
        api.create({ task_kind: kind.trim() || 'chat', prompt: message }).then((r) => {
          navigate(`/chat/${encodeURIComponent(r.task.id)}`);
        }),
      );
    } else if (open !== undefined && status === 'waiting_for_user') {
      done(api.answer(id, message, open.question_id));
    } else {
      done(api.message(id, message));
    }
  };

  const kinds = f.taskKinds.includes('chat') ? f.taskKinds : ['chat', ...f.taskKinds];
  const placeholder = viewer
    ? 'a viewer key cannot talk to agents'
    : id === undefined
      ? 'Ask something — Enter sends, Shift+Enter for a new line'
      : open !== undefined && status === 'waiting_for_user'
        ? 'Answer the question — Enter sends'
        : 'Send a follow-up — Enter sends, Shift+Enter for a new line';
  return (
    <section class="page chat-page" aria-labelledby="chat-h">
      <div class="page-head">
        <h1 id="chat-h">Chat</h1>
        {detail !== undefined && (
          <>
            <span class={`badge s-${detail.task.status}`} data-testid="chat-status">
              {statusText(detail.task.status)}
            </span>
            <a href={`#/tasks/${encodeURIComponent(detail.task.id)}`} class="muted">
              task <code>{visible(detail.task.id)}</code> · {visible(detail.task.kind)}
            </a>
            <a href="#/chat" class="button">
              New chat
            </a>
          </>
        )}
      </div>
      {viewer && (
        <p class="note" role="status">
          {VIEWER_NOTE}
        </p>
      )}
      {detail !== undefined ? (
        <ConversationView detail={detail} />
      ) : id === undefined ? (
        <p class="muted">
          Start a conversation with an agent: the first message creates a task of the kind below (
          <code>chat</code> talks with the model directly, without tools).
        </p>
      ) : (
        <p class="muted">Loading…</p>
      )}
      {open !== undefined && status === 'waiting_for_user' && (
        <p class="chat-question" role="status">
          <span class="who">the model asks</span> {visible(open.question)}
        </p>
      )}
      <form
        class="composer"
        onSubmit={(e) => {
          e.preventDefault();
          send();
        }}
      >
        {id === undefined && (
          <label class="composer-kind">
            Kind
            <select name="kind" value={kind} onChange={(e) => setKind(e.currentTarget.value)}>
              {kinds.map((k) => (
                <option key={k} value={k}>
                  {visible(k)}
                </option>
              ))}
            </select>
          </label>
        )}
        <label class="composer-text">
          <span class="sr-only">Message</span>
          <textarea
            ref={box}
            name="message"
            rows={3}
            value={text}
            disabled={viewer}
            placeholder={placeholder}
            aria-keyshortcuts="Enter Shift+Enter"
            onInput={(e) => setText(e.currentTarget.value)}
            onKeyDown={(e) => {
              if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
                e.preventDefault();
                send();
              }
            }}
          />
        </label>
        <button type="submit" class="primary" disabled={busy || viewer || text.trim() === ''}>
          {open !== undefined && status === 'waiting_for_user' ? 'Answer' : 'Send'}
        </button>
      </form>
      {error !== undefined && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
    </section>
  );
}
