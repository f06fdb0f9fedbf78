/**
 * Prepare the step: work that needs no model (the runs a WRITE_FILE … THEN queued, reading the files the task names
 * before the planner first sees it), else the planner's prompt — the conversation so far and the new turn rendered
 * from the history and memory within the context budget.
 */
import type { Decision, HistoryEntry, JsonValue, Task } from '@ccagent/engine';
import type { ChatMessage } from '@ccagent/models';
import { completedCalls, describeCall, normalizePath } from '../history-view.js';
import { renderPlannerTurn, type PlannerTurnRender } from '../memory.js';
import type { CommandCall } from '../tools.js';
import type { Step } from './step.js';
import { serverToolsOf, withServerToolSection } from '../server-tool-directive.js';

const FILE_WORD =
  /(?:^|[\s"'`(])((?:[\w-]+\/)*[\w-]+\.(?:lua|txt|json|cfg|conf|md|csv|db))(?=$|[\s"'`),.:;!?])/g;
const MAX_GATHER = 5;

/** Files a task names: `context.files` (strings) and file-like words in the prompt, in order, deduplicated. */
export function filesNamedBy(task: Task): string[] {
  const out: string[] = [];
  const add = (p: string) => {
    const n = normalizePath(p);
    if (n !== '' && !out.includes(n)) out.push(n);
  };
  const ctx = task.context;
  if (ctx && typeof ctx === 'object' && !Array.isArray(ctx) && Array.isArray(ctx.files)) {
    for (const f of ctx.files) if (typeof f === 'string') add(f);
  }
  for (const m of task.prompt.matchAll(FILE_WORD)) if (m[1]) add(m[1]);
  return out.slice(0, MAX_GATHER);
}

function touchedPaths(history: readonly HistoryEntry[]): Set<string> {
  const paths = new Set<string>();
  for (const e of history) {
    if (e.type !== 'tool_call' || (e.command !== 'fs_read' && e.command !== 'fs_write')) continue;
    const a = e.args;
    if (a && typeof a === 'object' && !Array.isArray(a) && typeof a.path === 'string')
      paths.add(normalizePath(a.path));
  }
  return paths;
}

/**
 * Queued work, one call per step: the next run queued by a WRITE_FILE … THEN while the calls succeed (the rest are
 * skipped after a failure), else the next file the task names that nothing has read yet. Undefined: ask the planner.
 */
export async function queuedWork(s: Step): Promise<Decision | undefined> {
  const { task, history, ctx } = s;
  const policy = s.cfg.policy;
  // 1. Runs queued by a WRITE_FILE … THEN, one per step, while they succeed.
  if (s.mem.pendingRuns.length > 0) {
    const calls = completedCalls(history);
    const last = calls[calls.length - 1];
    const [next, ...rest] = s.mem.pendingRuns;
    if (last && last.outcome.ok && next) {
      s.mem.pendingRuns = rest;
      const call: CommandCall = { command: 'run_program', args: { path: next.path, args: next.args } };
      await s.log({ kind: 'queued_run', toolCall: call as unknown as JsonValue });
      return s.toolCall(
        [call],
        { from: 'queued', run: next },
        `THEN ${describeCall(call.command, call.args as JsonValue)}`,
      );
    }
    const skipped = s.mem.pendingRuns.map((r) => [r.path, ...r.args].join(' ')).join('; ');
    const why = last
      ? `${describeCall(last.command, last.args)} failed`
      : 'the previous call did not complete';
    s.mem.pendingNotes.push(`The remaining THEN runs (${skipped}) were skipped because ${why}.`);
    s.mem.pendingRuns = [];
    await s.policyEvent('runs_skipped', `skipped ${skipped}: ${why}`);
  }

  // 2. Gather state: read the files the task names before the planner first sees it.
  const available = ctx.availableCommands().map((c) => c.name);
  const fsReadAllowed = task.allowedCommands.length === 0 || task.allowedCommands.includes('fs_read');
  if (policy.gatherFiles && available.includes('fs_read') && fsReadAllowed) {
    const touched = touchedPaths(history);
    const path = filesNamedBy(task).find((p) => !touched.has(p) && !s.mem.gathered.includes(p));
    if (path) {
      s.mem.gathered.push(path);
      const call: CommandCall = { command: 'fs_read', args: { path } };
      await s.log({ kind: 'gather', toolCall: call as unknown as JsonValue });
      return s.toolCall([call], { from: 'gather', path }, `reading ${path}`);
    }
  }
  return undefined;
}

/** The planner's request of this step: the messages, the rendered turn and how the prompt was laid out. */
export interface PlannerRequest {
  messages: ChatMessage[];
  rendered: PlannerTurnRender;
  layoutInfo: { conversation: boolean; turn: number; compacted: boolean; compactions: number };
}

/** Render the planner's turn into the memory (its pending notes are now in the prompt) and build the request. */
export function plannerRequest(s: Step): PlannerRequest {
  const { task, history, ctx } = s;
  const { policy, opts, plannerSystem, maxQuestions } = s.cfg;
  const { maxSteps, maxToolCalls } = s.limits;
  const rendered = renderPlannerTurn({
    task,
    history,
    memory: s.mem,
    step: ctx.step,
    limits: {
      ...(Number.isFinite(maxSteps) ? { maxSteps } : {}),
      ...(Number.isFinite(maxToolCalls) ? { maxToolCalls } : {}),
      maxQuestions,
    },
    layout: { ...policy.memory, numCtx: opts.planner.options?.numCtx ?? policy.memory.numCtx },
  });
  s.mem = rendered.memory;
  s.mem.pendingNotes = [];
  // Earlier turns go out exactly as they went before, the new message last: the server's cache covers the rest.
  // Server-side tools the task may call are listed with the TOOL directive (server-tool-directive.ts).
  const messages: ChatMessage[] = [
    {
      role: 'system',
      content: withServerToolSection(plannerSystem, serverToolsOf(s.ctx.availableCommands())),
    },
  ];
  for (const t of rendered.turns) {
    messages.push({ role: 'user', content: t.user }, { role: 'assistant', content: t.reply });
  }
  messages.push({ role: 'user', content: rendered.user });
  const conv = s.mem.conversation;
  const layoutInfo = {
    conversation: policy.memory.conversation,
    turn: rendered.turns.length + 1,
    compacted: rendered.compacted,
    compactions: conv.compactions,
  };
  return { messages, rendered, layoutInfo };
}
