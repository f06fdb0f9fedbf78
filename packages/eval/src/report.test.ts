import { describe, expect, it } from 'vitest';
import { failureReason, metricsOf, type TaskDetail } from './metrics.js';
import { renderMarkdown, renderText, reportRows } from './report.js';
import type { AttemptResult, EvalRun } from './run-eval.js';

const metrics = (steps: number, calls: number) => ({
  steps,
  modelCalls: calls,
  promptTokens: calls * 1000,
  evalTokens: calls * 50,
  modelSeconds: calls * 2,
  bounces: 0,
  questions: 0,
});
const attempt = (job: string, tier: number, pass: boolean, failure?: string): AttemptResult => ({
  job,
  jobVersion: 1,
  tier,
  loop: 'planner-executor',
  attempt: 1,
  label: 'model',
  pass,
  ...(failure ? { failure } : {}),
  taskIds: ['t'],
  outcomes: [{ status: pass ? 'completed' : 'failed' }],
  metrics: metrics(pass ? 4 : 8, pass ? 2 : 4),
  wallSeconds: pass ? 10 : 30,
});
const run: EvalRun = {
  suiteVersion: '1',
  model: 'tiny|model',
  provider: 'ollama',
  loop: 'planner-executor',
  numPredict: 4096,
  startedAt: '2026-11-27T20:00:00.000Z',
  interrupted: false,
  dbPath: '/x/ccagent.db',
  jobs: [
    { id: 't1-a', version: 1, tier: 1, title: 'a' },
    { id: 't1-b', version: 1, tier: 1, title: 'b' },
    { id: 't4-tool', version: 1, tier: 4, title: 't', skipped: 'needs the native loop' },
  ],
  results: [
    attempt('t1-a', 1, true),
    attempt('t1-a', 1, false, 'budget'),
    attempt('t1-b', 1, false, 'wrong answer'),
    attempt('t1-b', 1, false, 'wrong answer'),
  ],
};

describe('report', () => {
  it('sums attempts per job, per tier and overall, with failure reasons counted', () => {
    const { jobs, tiers, all } = reportRows(run);
    expect(jobs[0]).toMatchObject({
      name: 't1-a',
      attempts: 2,
      passed: 1,
      rate: 0.5,
      steps: 6,
      modelCalls: 3,
    });
    expect(jobs[1]).toMatchObject({ attempts: 2, passed: 0, failures: { 'wrong answer': 2 } });
    expect(jobs[2]).toMatchObject({ attempts: 0, skipped: 'needs the native loop' });
    expect(tiers.map((t) => [t.name, t.passed, t.attempts])).toEqual([
      ['tier 1', 1, 4],
      ['tier 4', 0, 0],
    ]);
    expect(all).toMatchObject({ attempts: 4, passed: 1, failures: { 'wrong answer': 2, budget: 1 } });
  });

  it('renders aligned text and Markdown (a | in a value is escaped), marking an interrupted run', () => {
    const text = renderText(run);
    expect(text).toMatch(/^t1-a +1\/2 \(50%\) +6\.0 +3\.0 +3000 +150 +6\.0 +20\.0 +budget ×1$/m);
    expect(text).toMatch(/^t1-b +0\/2 \(0%\) .* wrong answer ×2$/m);
    expect(text).toMatch(/^t4-tool +skipped +needs the native loop$/m);
    expect(text).toMatch(/^all +1\/4 \(25%\) .* wrong answer ×2, budget ×1$/m);
    const md = renderMarkdown({ ...run, interrupted: true }, { machine: '2 cores' });
    expect(md).toContain('## ccagent eval: tiny\\|model, planner-executor');
    expect(md).toContain('- machine: 2 cores');
    // The output bound is part of what the figures mean: recorded with them.
    expect(md).toContain('- num_predict: 4096');
    expect(text).toContain('num_predict 4096');
    expect(md).toContain('**Interrupted**');
    expect(md).toContain('| t1-a | 1/2 (50%) | 6.0 | 3.0 | 3000 | 150 | 6.0 | 20.0 | budget ×1 |');
  });
});

describe('metrics and failure reasons', () => {
  const detail = (task: TaskDetail['task'], steps: TaskDetail['steps'] = []): TaskDetail => ({ task, steps });

  it('counts model calls (not the request records nor the parser), tokens, seconds and bounces', () => {
    const m = metricsOf([
      detail({ id: '1', status: 'completed', counters: { steps: 5 } }, [
        { kind: 'model_request', model: 'm' },
        {
          kind: 'planner',
          model: 'm',
          duration_ms: 1500,
          usage: { prompt_tokens: 700, completion_tokens: 30 },
        },
        { kind: 'translate', model: 'parser' },
        { kind: 'decision', directive: { type: 'continue' } },
        { kind: 'decision', directive: { type: 'tool_call' } },
        {
          kind: 'executor',
          model: 'm',
          duration_ms: 500,
          usage: { prompt_tokens: 300, completion_tokens: 20 },
        },
      ]),
      detail({ id: '2', status: 'completed', counters: { steps: 2 } }),
    ]);
    expect(m).toEqual({
      steps: 7,
      modelCalls: 2,
      promptTokens: 1000,
      evalTokens: 50,
      modelSeconds: 2,
      bounces: 1,
      questions: 0,
    });
  });

  it('classes how the last task ended', () => {
    const ended = (status: string, code?: string, stopped?: string) => [
      detail({
        id: 'x',
        status,
        ...(code ? { error: { code } } : {}),
        ...(stopped ? { result: { stopped } } : {}),
      }),
    ];
    expect(failureReason(ended('completed'))).toBe('wrong answer');
    expect(failureReason(ended('completed', undefined, 'token_budget'))).toBe('budget');
    expect(failureReason(ended('failed', 'budget_exhausted'))).toBe('budget');
    expect(failureReason(ended('failed', 'max_iterations'))).toBe('budget');
    expect(failureReason(ended('failed', 'planner_unusable'))).toBe('bounced directives');
    expect(failureReason(ended('failed', 'agent_gave_up'))).toBe('gave up');
    expect(failureReason(ended('failed', 'model_unavailable'))).toBe('model error');
    expect(failureReason(ended('failed', 'client_disconnected'))).toBe('client_disconnected');
    expect(failureReason(ended('cancelled'))).toBe('timeout');
    expect(failureReason([])).toBe('computer');
  });
});
