/**
 * The tables of a run: one row per job and one per tier (and the whole run) — success rate, mean steps, model calls,
 * prompt and generated tokens, model seconds and wall time per attempt, and how the failures failed — as plain text
 * for a terminal, Markdown for sharing, and the JSON of the run itself.
 */
import type { AttemptResult, EvalRun } from './run-eval.js';

/** One row of the table. */
export interface ReportRow {
  /** A job id, `tier N` or `all`. */
  name: string;
  attempts: number;
  passed: number;
  /** passed / attempts (0 when there were none). */
  rate: number;
  steps: number;
  modelCalls: number;
  promptTokens: number;
  evalTokens: number;
  modelSeconds: number;
  wallSeconds: number;
  /** Failure reason → count. */
  failures: Record<string, number>;
  /** Why a job was not run. */
  skipped?: string;
}

function rowOf(name: string, results: readonly AttemptResult[], skipped?: string): ReportRow {
  const n = results.length;
  const mean = (f: (r: AttemptResult) => number) => (n ? results.reduce((s, r) => s + f(r), 0) / n : 0);
  const failures: Record<string, number> = {};
  for (const r of results)
    if (!r.pass) failures[r.failure ?? 'failed'] = (failures[r.failure ?? 'failed'] ?? 0) + 1;
  const passed = results.filter((r) => r.pass).length;
  return {
    name,
    attempts: n,
    passed,
    rate: n ? passed / n : 0,
    steps: mean((r) => r.metrics.steps),
    modelCalls: mean((r) => r.metrics.modelCalls),
    promptTokens: mean((r) => r.metrics.promptTokens),
    evalTokens: mean((r) => r.metrics.evalTokens),
    modelSeconds: mean((r) => r.metrics.modelSeconds),
    wallSeconds: mean((r) => r.wallSeconds),
    failures,
    ...(skipped ? { skipped } : {}),
  };
}

/** Rows per job (suite order), per tier, and `all`. */
export function reportRows(run: EvalRun): { jobs: ReportRow[]; tiers: ReportRow[]; all: ReportRow } {
  const jobs = run.jobs.map((j) =>
    rowOf(
      j.id,
      run.results.filter((r) => r.job === j.id),
      j.skipped,
    ),
  );
  const tierNumbers = [...new Set(run.jobs.map((j) => j.tier))].sort((a, b) => a - b);
  const tiers = tierNumbers.map((t) =>
    rowOf(
      `tier ${t}`,
      run.results.filter((r) => r.tier === t),
    ),
  );
  return { jobs, tiers, all: rowOf('all', run.results) };
}

const HEADERS = [
  'job',
  'success',
  'steps',
  'calls',
  'prompt tok',
  'eval tok',
  'model s',
  'wall s',
  'failures',
];

function cells(r: ReportRow): string[] {
  if (r.skipped) return [r.name, 'skipped', '', '', '', '', '', '', r.skipped];
  const fmt = (v: number, d = 1) => (r.attempts ? v.toFixed(d) : '-');
  return [
    r.name,
    r.attempts ? `${r.passed}/${r.attempts} (${Math.round(r.rate * 100)}%)` : '-',
    fmt(r.steps),
    fmt(r.modelCalls),
    fmt(r.promptTokens, 0),
    fmt(r.evalTokens, 0),
    fmt(r.modelSeconds),
    fmt(r.wallSeconds),
    Object.entries(r.failures)
      .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
      .map(([k, v]) => `${k} ×${v}`)
      .join(', '),
  ];
}

/** The header line of a run, the same in every format. */
export function runTitle(run: EvalRun): string {
  return (
    `ccagent eval: suite v${run.suiteVersion}, model ${run.model} (${run.provider}), loop ${run.loop}, ` +
    `num_predict ${run.numPredict}, started ${run.startedAt}${run.interrupted ? ' — INTERRUPTED: only finished attempts are counted' : ''}`
  );
}

/** Plain-text tables for a terminal (values are means per attempt; text from the suite is printable ASCII). */
export function renderText(run: EvalRun): string {
  const { jobs, tiers, all } = reportRows(run);
  const table = (rows: ReportRow[], first: string) => {
    const lines = [[first, ...HEADERS.slice(1)], ...rows.map(cells)];
    const widths = HEADERS.map((_, i) => Math.max(...lines.map((l) => (l[i] ?? '').length)));
    return lines
      .map((l) =>
        l
          .map((c, i) => (i === 0 || i === l.length - 1 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!)))
          .join('  ')
          .trimEnd(),
      )
      .join('\n');
  };
  return [
    runTitle(run),
    '',
    table(jobs, 'job'),
    '',
    table([...tiers, all], 'tier'),
    '',
    'Means per attempt. calls: model calls; prompt tok: prompt tokens the server reported; eval tok: tokens it generated.',
    '',
  ].join('\n');
}

/** The same tables in Markdown, with the run's facts, for docs/eval.md or an issue. */
export function renderMarkdown(run: EvalRun, facts: Record<string, string> = {}): string {
  const { jobs, tiers, all } = reportRows(run);
  const esc = (s: string) => s.replace(/\|/g, '\\|');
  const table = (rows: ReportRow[], first: string) =>
    [
      `| ${[first, ...HEADERS.slice(1)].join(' | ')} |`,
      `| ${HEADERS.map((_, i) => (i === 0 || i === HEADERS.length - 1 ? '---' : '---:')).join(' | ')} |`,
      ...rows.map((r) => `| ${cells(r).map(esc).join(' | ')} |`),
    ].join('\n');
  const factLines = Object.entries({
    suite: `v${run.suiteVersion}`,
    model: run.model,
    provider: run.provider,
    loop: run.loop,
    num_predict: String(run.numPredict),
    started: run.startedAt,
    ...(run.finishedAt ? { finished: run.finishedAt } : {}),
    ...facts,
  }).map(([k, v]) => `- ${k}: ${esc(v)}`);
  return [
    `## ccagent eval: ${esc(run.model)}, ${run.loop}`,
    '',
    ...factLines,
    ...(run.interrupted ? ['', '**Interrupted**: only the attempts that finished are counted.'] : []),
    '',
    table(jobs, 'job'),
    '',
    table([...tiers, all], 'tier'),
    '',
  ].join('\n');
}
