import type { HistoryEntry, JsonValue } from '@ccagent/engine';
import { z } from 'zod';
import { callKey, completedCalls, describeCall, normalizePath, type CallView } from './history-view.js';
import { DEFAULT_MEMORY_LAYOUT, type MemoryLayout } from './memory.js';

/**
 * The rules that keep a small model from spiralling. Every limit is per task; `maxSteps`/`maxToolCalls` apply in
 * addition to the task's own engine budgets (the lower one wins).
 */
export interface AgentPolicy {
  /** Engine steps (decisions) before the task fails with `budget_exhausted`. Default 60. */
  maxSteps: number;
  /** Command calls before the task fails with `budget_exhausted`. Default 40. */
  maxToolCalls: number;
  /** Repair attempts for an invalid executor reply (the error is appended), before bouncing to the planner. Default 1. */
  executorRepairRetries: number;
  /**
   * The same command with the same arguments this many times in a row is suppressed: it is not run again and the
   * planner gets the previous result as evidence instead. Default 2 (an immediate repeat is suppressed).
   */
  duplicateThreshold: number;
  /** Suppressed duplicates in a row before the task fails with `repetition`; 0 disables the hard stop. Default 3. */
  duplicateHardStop: number;
  /** Questions to the user per task, unless the strategy is interactive. Default 2. */
  maxQuestions: number;
  /** Planner replies bounced in a row (unparseable, refused, not executable) before failing. Default 4. */
  maxConsecutiveBounces: number;
  /**
   * Planner replies without a usable directive (none found, an unknown directive name, a missing field, a reply cut
   * off at the output limit) per task before failing with `planner_unusable`. Each is bounced to the planner with a
   * short format reminder; the executor model never sees such a reply (it would have to invent the directive).
   * Default 4.
   */
  maxFormatBounces: number;
  /** DONE directives rejected by the completion criteria before failing with `completion_unproven`. Default 3. */
  maxDoneRejections: number;
  /** Model calls failing in a row (after the adapter's own retries) before failing with `model_failed`. Default 3. */
  maxModelFailures: number;
  /** Read the files the task names (context.files, `*.lua`-like words in the prompt) before planning. Default true. */
  gatherFiles: boolean;
  /** How task memory is rendered and bounded. */
  memory: MemoryLayout;
}

/** Default {@link AgentPolicy}. */
export const DEFAULT_AGENT_POLICY: AgentPolicy = {
  maxSteps: 60,
  maxToolCalls: 40,
  executorRepairRetries: 1,
  duplicateThreshold: 2,
  duplicateHardStop: 3,
  maxQuestions: 2,
  maxConsecutiveBounces: 4,
  maxFormatBounces: 4,
  maxDoneRejections: 3,
  maxModelFailures: 3,
  gatherFiles: true,
  memory: DEFAULT_MEMORY_LAYOUT,
};

/** A program run that must have succeeded: `path`, and arguments that the run's arguments start with. */
export interface RequiredRun {
  path: string;
  args?: string[];
}

/**
 * When a DONE is believed. Checked against the task history; DONE is rejected back to the planner (with the
 * reason) until they hold. Per task kind from the strategy options; a task may tighten them through
 * `metadata.completion` (same shape).
 */
export interface CompletionCriteria {
  /**
   * A run (run_program / shell_exec) must have succeeded after the last file write — no success claim without a
   * test that executed the final code. Default true.
   */
  requireSuccessfulRun?: boolean;
  /** The most recent run must have succeeded. Default true. */
  requireLastRunOk?: boolean;
  /** Commands that must each have at least one successful call in the history (e.g. `["run_program"]`). */
  requiredCommands?: string[];
  /** Program runs that must have succeeded after the last write of their file (e.g. each subcommand of a CLI). */
  requiredRuns?: RequiredRun[];
}

/** Default {@link CompletionCriteria}. */
export const DEFAULT_COMPLETION_CRITERIA: Required<CompletionCriteria> = {
  requireSuccessfulRun: true,
  requireLastRunOk: true,
  requiredCommands: [],
  requiredRuns: [],
};

/** zod schema of {@link CompletionCriteria} (validates `metadata.completion`). */
export const completionCriteriaSchema = z.object({
  requireSuccessfulRun: z.boolean().optional(),
  requireLastRunOk: z.boolean().optional(),
  requiredCommands: z.array(z.string()).optional(),
  requiredRuns: z
    .array(z.object({ path: z.string().min(1), args: z.array(z.string()).optional() }))
    .optional(),
});

/** One successful run quoted in a final result as proof. */
export interface RunEvidence {
  call: string;
  output: string;
}

/** Verdict of {@link checkCompletion}: proven (with the runs that prove it) or the reason for the planner. */
export type CompletionVerdict = { ok: true; evidence: RunEvidence[] } | { ok: false; reason: string };

const RUN_COMMANDS = new Set(['run_program', 'shell_exec']);
const EVIDENCE_MAX = 12;
const EVIDENCE_CHARS = 2000;

function argsOf(c: CallView): { path: string; args: string[] } | null {
  const a = c.args;
  if (typeof a !== 'object' || a === null || Array.isArray(a) || typeof a.path !== 'string') return null;
  return { path: normalizePath(a.path), args: Array.isArray(a.args) ? a.args.map((x) => String(x)) : [] };
}

function sameProgram(a: string, b: string): boolean {
  const strip = (p: string) => normalizePath(p).replace(/\.lua$/, '');
  return strip(a) === strip(b);
}

function lastWriteSeq(calls: readonly CallView[], path?: string): number {
  let seq = 0;
  for (const c of calls) {
    if (c.command !== 'fs_write' || !c.outcome.ok) continue;
    const a = argsOf(c);
    if (path === undefined || (a && sameProgram(a.path, path))) seq = c.seq;
  }
  return seq;
}

/**
 * Decide whether the history proves the task done under `criteria` (defaults filled in). The evidence is every
 * successful run after the last write (the proof quoted in the final result).
 */
export function checkCompletion(
  history: readonly HistoryEntry[],
  criteria: CompletionCriteria,
): CompletionVerdict {
  const c = { ...DEFAULT_COMPLETION_CRITERIA, ...criteria };
  const calls = completedCalls(history);
  const runs = calls.filter((x) => RUN_COMMANDS.has(x.command));
  const since = lastWriteSeq(calls);
  const proving = runs.filter((r) => r.seq > since && r.outcome.ok);
  if (c.requireSuccessfulRun && proving.length === 0) {
    return {
      ok: false,
      reason:
        since > 0
          ? 'no program has run successfully since the last file write; run the final version and check its output first'
          : 'nothing has been run yet; run the program and check its output before DONE',
    };
  }
  const lastRun = runs[runs.length - 1];
  if (c.requireLastRunOk && lastRun && !lastRun.outcome.ok) {
    return {
      ok: false,
      reason: `the last run (${describeCall(lastRun.command, lastRun.args)}) failed: ${lastRun.outcome.error ?? 'error'}`,
    };
  }
  for (const cmd of c.requiredCommands) {
    if (!calls.some((x) => x.command === cmd && x.outcome.ok)) {
      return { ok: false, reason: `a successful ${cmd} call is required before DONE and there is none` };
    }
  }
  for (const req of c.requiredRuns) {
    const after = lastWriteSeq(calls, req.path);
    const want = req.args ?? [];
    const hit = runs.some((r) => {
      const a = argsOf(r);
      return (
        r.command === 'run_program' &&
        r.seq > after &&
        r.outcome.ok &&
        a !== null &&
        sameProgram(a.path, req.path) &&
        want.every((w, i) => a.args[i] === w)
      );
    });
    if (!hit) {
      const label = [req.path, ...want].join(' ');
      return {
        ok: false,
        reason: `a successful run of "${label}" after the last change of ${req.path} is required before DONE`,
      };
    }
  }
  const evidence = proving.slice(-EVIDENCE_MAX).map((r) => ({
    call: describeCall(r.command, r.args),
    output:
      r.outcome.output.length > EVIDENCE_CHARS
        ? `${r.outcome.output.slice(0, EVIDENCE_CHARS)}…`
        : r.outcome.output,
  }));
  return { ok: true, evidence };
}

/**
 * How many times in a row, counting back from the latest call in the history, `command` with `args` was already
 * called (0 when the latest call differs).
 */
export function repeatCount(history: readonly HistoryEntry[], command: string, args: JsonValue): number {
  const key = callKey(command, args);
  let n = 0;
  for (let i = history.length - 1; i >= 0; i--) {
    const e = history[i];
    if (e?.type !== 'tool_call') continue;
    if (callKey(e.command, e.args) !== key) break;
    n++;
  }
  return n;
}
