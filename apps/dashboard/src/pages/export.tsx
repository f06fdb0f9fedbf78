/**
 * Export a task: as Markdown (the conversation, written by `@ccagent/protocol/conversation` like
 * `ccagent tasks export --format md`) or as JSON (everything `GET /api/tasks/:id` holds: every record with its model
 * input, the history, the calls, the questions). The file is built in the page and saved through a download link of
 * a Blob: the token stays in the request header, never in a URL.
 */
import { conversationMarkdown, stepFromWire, type ConversationStep } from '@ccagent/protocol/conversation';
import { messagesOf } from './conversation.js';
import { useState } from 'preact/hooks';
import { api, ApiError } from '../api.js';

const PAGE = 500;

/** A file name part from a task id: letters, digits, dot, dash and underscore only. */
function safeName(id: string): string {
  return id.replace(/[^\w.-]+/g, '_').slice(0, 80) || 'task';
}

function save(name: string, type: string, body: string): void {
  const url = URL.createObjectURL(new Blob([body], { type }));
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.rel = 'noopener';
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** The conversation of task `id` as Markdown. */
export async function taskMarkdown(id: string): Promise<string> {
  const detail = await api.task(id, true);
  const steps: ConversationStep[] = [];
  let after = 0;
  for (;;) {
    const page = await api.records(id, after, PAGE);
    steps.push(...page.steps.map(stepFromWire));
    after = page.next_after_seq;
    if (!page.has_more) break;
  }
  const t = detail.task;
  return conversationMarkdown(
    {
      id: t.id,
      kind: t.kind,
      status: t.status,
      prompt: t.prompt,
      clientId: t.client_id,
      createdAt: t.created_at,
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
  );
}

/** "Export Markdown" and "Export JSON" for task `id`. */
export function ExportButtons({ id }: { id: string }) {
  const [busy, setBusy] = useState(false);
  const [note, setNote] = useState<string | undefined>(undefined);
  const run = (what: string, make: () => Promise<void>): void => {
    setBusy(true);
    setNote(undefined);
    make()
      .catch((e: unknown) => setNote(`${what}: ${e instanceof ApiError ? e.message : String(e)}`))
      .finally(() => setBusy(false));
  };
  return (
    <div class="export" role="group" aria-label="Export the task">
      <button
        type="button"
        class="small"
        disabled={busy}
        onClick={() =>
          run('Markdown export', async () =>
            save(`task-${safeName(id)}.md`, 'text/markdown;charset=utf-8', await taskMarkdown(id)),
          )
        }
      >
        Export Markdown
      </button>
      <button
        type="button"
        class="small"
        disabled={busy}
        onClick={() =>
          run('JSON export', async () =>
            save(
              `task-${safeName(id)}.json`,
              'application/json',
              `${JSON.stringify(await api.taskWhole(id), null, 2)}\n`,
            ),
          )
        }
      >
        Export JSON
      </button>
      {note !== undefined && (
        <span class="note error" role="alert">
          {note}
        </span>
      )}
    </div>
  );
}
