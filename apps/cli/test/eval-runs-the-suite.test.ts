/**
 * `ccagent eval` as users run it: the built binary, the built orchestrator it spawns, real headless CraftOS-PC
 * computers, and the suite's scripted runs standing in for a model (the real-model run at the end needs
 * CCAGENT_TEST_OLLAMA_URL and CCAGENT_TEST_OLLAMA_MODEL). It prints a table per job and tier, keeps the tasks in a
 * database `ccagent tasks show` reads, and an interrupt keeps what finished.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { findCraftos, type EvalRun } from '@ccagent/eval';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN, cliEnv, runCli } from './support/run-cli.js';

function craftosOrNone() {
  try {
    return findCraftos();
  } catch {
    console.log('[cli] eval tests SKIPPED: CraftOS-PC not found (set CRAFTOS_PC_DIR; see docs/eval.md)');
    return undefined;
  }
}
const craftos = craftosOrNone();
const dirs: string[] = [];
const tmp = () => {
  const d = mkdtempSync(path.join(tmpdir(), 'ccagent-cli-eval-'));
  dirs.push(d);
  return d;
};
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const results = (dir: string) => JSON.parse(readFileSync(path.join(dir, 'results.json'), 'utf8')) as EvalRun;

describe('ccagent eval: usage', () => {
  it('needs a model or scripted runs, and names the jobs a bad --jobs item could have meant', async () => {
    const none = await runCli(['eval']);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('give --model <name> (or --scripted reference)');
    if (!craftos) return;
    const bad = await runCli(['eval', '--scripted', 'reference', '--jobs', 'tier9', '--out', tmp()]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/no job matches "tier9" \(give tiers like tier2, or ids: t1-count-lines, /);
    const openai = await runCli(['eval', '--model', 'm', '--provider', 'openai']);
    expect(openai.code).toBe(2);
    expect(openai.stderr).toContain('--provider openai needs --host');
  });
});

describe.skipIf(!craftos)('ccagent eval on CraftOS-PC', () => {
  it('prints a table per job and tier, writes the Markdown report, and keeps the tasks for tasks show', async () => {
    const out = tmp();
    const report = path.join(out, 'report.md');
    const r = await runCli(
      [
        'eval',
        '--scripted',
        'reference',
        '--jobs',
        'tier1,t3-ask-lamp-colour',
        '--out',
        out,
        '--report',
        report,
      ],
      {},
      120_000,
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(
      /^job +success +steps +calls +prompt tok +eval tok +model s +wall s +failures$/m,
    );
    // t1-read-code has a second right run, in the native loop (reference-native.mjs).
    for (const [id, n] of [
      ['t1-count-lines', 1],
      ['t1-count-programs', 1],
      ['t1-read-code', 2],
      ['t1-room-volume', 1],
      ['t3-ask-lamp-colour', 1],
    ] as const) {
      expect(r.stdout).toMatch(new RegExp(`^${id} +${n}/${n} \\(100%\\)`, 'm'));
    }
    expect(r.stdout).toMatch(/^tier 1 +5\/5 \(100%\)/m);
    expect(r.stdout).toMatch(/^tier 3 +1\/1 \(100%\)/m);
    expect(r.stdout).toMatch(/^all +6\/6 \(100%\)/m);
    // Not a terminal: one plain line per attempt on stderr.
    expect(r.stderr).toMatch(/\[eval\] 6\/6 \S+ \(reference(:native)? #1\): pass in \d+\.\d s/);
    expect(readFileSync(report, 'utf8')).toContain('| t3-ask-lamp-colour | 1/1 (100%) |');

    const run = results(out);
    const lamp = run.results.find((x) => x.job === 't3-ask-lamp-colour');
    const show = await runCli(['--db', run.dbPath, 'tasks', 'show', lamp!.taskIds[0]!]);
    expect(show.code, show.stderr).toBe(0);
    expect(show.stdout).toContain('kind      eval_t3_ask_lamp_colour_pe');
    expect(show.stdout).toContain('Which colour should the lamp be?');
    expect(show.stdout).toContain('teal');
    // The computers are gone; the database stays.
    expect(readdirSync(path.join(out, 'computers'))).toEqual([]);
  });

  it('--json prints the run, and --scripted wrong fails no process when every checker rejects', async () => {
    const out = tmp();
    const r = await runCli(
      ['--json', 'eval', '--scripted', 'wrong', '--jobs', 'tier2', '--out', out],
      {},
      120_000,
    );
    expect(r.code, r.stderr).toBe(0);
    const run = JSON.parse(r.stdout) as EvalRun;
    expect(run.results).toHaveLength(5);
    expect(run.results.every((x) => !x.pass && x.failure === 'wrong answer')).toBe(true);
    expect(run.results.find((x) => x.job === 't2-fix-compare')?.detail).toBe(
      'big.lua 10: expected "10 is small", got "10 is big"',
    );
  });

  it('Ctrl-C cancels the running attempt, keeps the ones that finished and still prints their table', async () => {
    const out = tmp();
    // In its own process group, signalled as a group: what a terminal's Ctrl-C does (the whole foreground group
    // gets SIGINT), so the orchestrator and computers the eval started must not be reached by it.
    const child = spawn(
      process.execPath,
      [BIN, 'eval', '--scripted', 'reference', '--parallel', '1', '--out', out],
      {
        env: cliEnv(),
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout?.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    const twoDone = new Promise<void>((resolve) =>
      child.stderr?.setEncoding('utf8').on('data', (d: string) => {
        stderr += d;
        if (/\[eval\] 2\/\d+ /.test(stderr)) resolve();
      }),
    );
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    await twoDone;
    process.kill(-child.pid!, 'SIGINT');
    expect(await exited, stderr).toBe(130);
    expect(stderr).toContain('[eval] interrupted: cancelling the running attempts');
    expect(stdout).toContain('INTERRUPTED: only finished attempts are counted');
    const run = results(out);
    expect(run.interrupted).toBe(true);
    expect(run.results.length).toBeGreaterThanOrEqual(2);
    expect(run.results.length).toBeLessThan(run.jobs.length);
    expect(run.results.every((x) => x.pass)).toBe(true);
    expect(stdout).toMatch(new RegExp(`^all +${run.results.length}/${run.results.length} \\(100%\\)`, 'm'));
    // Nothing is left running: no computer folder, and the database says how the cut-off task ended.
    expect(readdirSync(path.join(out, 'computers'))).toEqual([]);
    const list = await runCli(['--db', run.dbPath, '--json', 'tasks', 'list']);
    const tasks = (JSON.parse(list.stdout) as { tasks: Array<{ status: string }> }).tasks;
    expect(tasks.filter((t) => t.status === 'completed').length).toBeGreaterThanOrEqual(run.results.length);
    expect(tasks.every((t) => ['completed', 'cancelled'].includes(t.status))).toBe(true);
    // The orchestrator and the computers of the run are gone.
    const ps = spawnSync('ps', ['-eo', 'args'], { encoding: 'utf8' }).stdout;
    expect(ps.split('\n').filter((l) => l.includes(out) && !l.includes('ps -eo'))).toEqual([]);
  });
});

// `script` (util-linux) runs the command on a pseudo-terminal, where stderr is a TTY.
const hasScript = spawnSync('sh', ['-c', 'command -v script']).status === 0;
describe.skipIf(!craftos || !hasScript)('ccagent eval on a terminal', () => {
  it('draws one progress bar in place instead of a line per attempt', () => {
    const out = tmp();
    const cmd = [
      process.execPath,
      BIN,
      'eval',
      '--scripted',
      'reference',
      '--jobs',
      't1-read-code',
      '--out',
      out,
    ]
      .map((a) => `'${a}'`)
      .join(' ');
    const r = spawnSync('script', ['-qec', cmd, '/dev/null'], {
      encoding: 'utf8',
      env: cliEnv(),
      timeout: 120_000,
    });
    expect(r.status, r.stdout).toBe(0);
    expect(r.stdout).toContain(
      '\r\x1b[2K[............] 0/2 done, 0 passed'.replace('............', '.'.repeat(24)),
    );
    expect(r.stdout).toContain(`\r\x1b[2K[${'#'.repeat(24)}] 2/2 done, 2 passed`);
    expect(r.stdout).not.toContain('[eval] start');
    expect(r.stdout).toMatch(/^t1-read-code +2\/2 \(100%\)/m);
  });
});

// The real small model the CI brings up (tools/ollama-test-server.sh exports these): a short subset, for a table.
const realUrl = process.env.CCAGENT_TEST_OLLAMA_URL;
const realModel = process.env.CCAGENT_TEST_OLLAMA_MODEL;
if (craftos && (!realUrl || !realModel) && process.env.CI) {
  // CI starts the real model server (.ci/run); without it the real-model subset would silently not run.
  throw new Error('CI without CCAGENT_TEST_OLLAMA_URL: tools/ollama-test-server.sh did not run or failed');
}
describe.skipIf(!craftos || !realUrl || !realModel)('ccagent eval against a real model server', () => {
  // The CI subset: one job of tier 1 and one of tier 2, one attempt each, one at a time (the default with a model
  // server); each task has its job's budgets (8 steps, 300 s at most). The whole suite is run by hand (docs/eval.md).
  it('runs a tier-1 and a tier-2 job once and produces the table (success is whatever the model manages)', async () => {
    const out = tmp();
    const jobs = 't1-read-code,t2-fix-typo';
    const r = await runCli(
      ['eval', '--model', realModel!, '--host', realUrl!, '--jobs', jobs, '--repeat', '1', '--out', out],
      {},
      1_500_000,
    );
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^tier 1 +\d\/1 \(\d+%\)/m);
    expect(r.stdout).toMatch(/^tier 2 +\d\/1 \(\d+%\)/m);
    console.log(`[cli] ccagent eval on the real model (${realModel}):\n${r.stdout}`);
    const run = results(out);
    expect(run.results).toHaveLength(2);
    expect(run.results.every((x) => x.metrics.modelCalls > 0 || x.failure !== undefined)).toBe(true);
  }, 1_500_000);
});
