/**
 * `ccagent eval`: the suite of ComputerCraft jobs (`@ccagent/eval`) against a model server, each attempt on a fresh
 * headless CraftOS-PC computer connected to the built orchestrator (`cc-orchestrator`), with a table per job and
 * tier at the end. Progress goes to stderr (a bar on a terminal, one line per attempt otherwise); Ctrl-C stops
 * starting attempts, cancels the running ones and still prints what finished.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { cpus } from 'node:os';
import path from 'node:path';
import { Option, type Command } from 'commander';
import type { ProgressEvent } from '@ccagent/eval';
import { CliError } from './errors.js';

/** What the command needs from the program. */
export interface EvalCommandDeps {
  json(): boolean;
  print(text: string): void;
  printJson(value: unknown): void;
  /** Progress and notes (stderr). */
  err(line: string): void;
  env: NodeJS.ProcessEnv;
  /** Whether stderr is a terminal (a redrawn progress bar) or not (plain lines). */
  isTty?: boolean;
  /** Sets the process exit code. */
  setExitCode(code: number): void;
}

interface EvalFlags {
  model?: string;
  provider: 'ollama' | 'openai';
  host?: string;
  loop: 'planner-executor' | 'native';
  jobs?: string[];
  repeat: number;
  parallel?: number;
  report?: string;
  out?: string;
  numCtx?: number;
  numPredict?: number;
  apiKeyEnv?: string;
  scripted?: 'reference' | 'wrong';
  keepComputers?: boolean;
  craftos?: string;
}

const wholeUpTo =
  (max: number) =>
  (value: string): number => {
    if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > max) {
      throw new CliError('usage', `expected a whole number from 1 to ${max}, got "${value}"`);
    }
    return Number(value);
  };
const whole = wholeUpTo(1000);

/** The built orchestrator and the Lua client it ships (dist/lua), from the installed `cc-orchestrator`. */
function orchestratorFiles(): { main: string; luaDir: string } {
  const require = createRequire(import.meta.url);
  let pkg: string;
  try {
    pkg = require.resolve('cc-orchestrator/package.json');
  } catch (cause) {
    throw new CliError(
      'unavailable',
      'ccagent eval needs cc-orchestrator installed (npm install cc-orchestrator)',
      {
        cause,
      },
    );
  }
  const dir = path.dirname(pkg);
  return { main: path.join(dir, 'dist', 'main.js'), luaDir: path.join(dir, 'dist', 'lua') };
}

const stamp = (d: Date) =>
  d
    .toISOString()
    .replace(/[:.]/g, '-')
    .replace(/-\d+Z$/, 'Z');

/** Add `ccagent eval` to the program. */
export function addEvalCommand(program: Command, d: EvalCommandDeps): void {
  program
    .command('eval')
    .description(
      'measure which jobs a model can do: the suite of ComputerCraft jobs on real headless CraftOS-PC computers, a table per job and tier',
    )
    .option('--model <name>', 'the model every role uses (as the model server names it)')
    .addOption(
      new Option('--provider <provider>', 'model server API').choices(['ollama', 'openai']).default('ollama'),
    )
    .option(
      '--host <url>',
      'model server base URL (default OLLAMA_HOST or http://127.0.0.1:11434; required for openai)',
    )
    .addOption(
      new Option('--loop <loop>', 'agent loop')
        .choices(['planner-executor', 'native'])
        .default('planner-executor'),
    )
    .option('--jobs <list>', 'tiers (tier2) or job ids, comma-separated (default: the whole suite)', (v) =>
      v
        .split(',')
        .map((x) => x.trim())
        .filter(Boolean),
    )
    .option('--repeat <n>', 'attempts per job', whole, 1)
    .option(
      '--parallel <n>',
      'attempts at once, each on its own computer (default 1 with a model server: they would share it, and the wait counts against each task deadline; with --scripted, half the CPU cores, at most 4)',
      whole,
    )
    .option('--report <file>', 'also write the tables as Markdown, for sharing')
    .option(
      '--out <dir>',
      "the run's folder: its database, configuration and results.json (default ./ccagent-eval/<time>)",
    )
    .option('--num-ctx <tokens>', 'context window of every model role', wholeUpTo(1_048_576))
    .option(
      '--num-predict <tokens>',
      'most tokens one model reply may generate, every role (default 4096; recorded in the report)',
      wholeUpTo(1_048_576),
    )
    .option('--api-key-env <name>', 'environment variable holding the API key (openai servers that need one)')
    .addOption(
      new Option(
        '--scripted <runs>',
        "no model: each job's reference runs (must all pass) or wrong runs (must all fail)",
      ).choices(['reference', 'wrong']),
    )
    .option('--keep-computers', "keep each attempt's computer folder in the run folder")
    .option(
      '--craftos <dir>',
      'CraftOS-PC folder holding bin/craftos (default CRAFTOS_PC_DIR, then craftos on PATH)',
    )
    .action(async (f: EvalFlags) => {
      await runEvalCommand(f, d);
    });
}

async function runEvalCommand(f: EvalFlags, d: EvalCommandDeps): Promise<void> {
  if (!f.scripted && !f.model) throw new CliError('usage', 'give --model <name> (or --scripted reference)');
  if (f.scripted && f.model) throw new CliError('usage', 'give either --model or --scripted, not both');
  if (f.provider === 'openai' && !f.host && !f.scripted) {
    throw new CliError('usage', '--provider openai needs --host <base url>');
  }
  const ev = await import('@ccagent/eval');
  let craftos;
  try {
    craftos = ev.findCraftos(f.craftos, d.env);
  } catch (e) {
    throw new CliError('unavailable', (e as Error).message, { cause: e });
  }
  const suite = await ev.loadSuite();
  let jobs;
  try {
    jobs = ev.selectJobs(suite, f.jobs);
  } catch (e) {
    throw new CliError('usage', (e as Error).message, { cause: e });
  }
  const started = new Date();
  const outDir = path.resolve(f.out ?? path.join('ccagent-eval', stamp(started)));
  const model = f.scripted
    ? ({ kind: f.scripted } as const)
    : ({
        kind: 'server',
        provider: f.provider,
        host: f.host ?? d.env.OLLAMA_HOST ?? 'http://127.0.0.1:11434',
        model: f.model!,
        ...(f.numCtx ? { numCtx: f.numCtx } : {}),
        ...(f.numPredict ? { numPredict: f.numPredict } : {}),
        ...(f.apiKeyEnv ? { apiKeyEnv: f.apiKeyEnv } : {}),
      } as const);

  const abort = new AbortController();
  let interrupts = 0;
  const onSigint = () => {
    interrupts += 1;
    if (interrupts > 1) process.exit(130);
    d.err(
      '\n[eval] interrupted: cancelling the running attempts; what finished is kept (Ctrl-C again to quit now)',
    );
    abort.abort();
  };
  process.on('SIGINT', onSigint);
  const progress = progressPrinter(d);
  let run;
  try {
    run = await ev.runEval({
      suite,
      jobs,
      model,
      loop: f.loop,
      repeat: f.repeat,
      parallel: f.parallel ?? (f.scripted ? Math.min(4, Math.max(1, Math.floor(cpus().length / 2))) : 1),
      orchestrator: orchestratorFiles(),
      outDir,
      craftos,
      keepComputers: f.keepComputers === true,
      signal: abort.signal,
      onProgress: progress,
      env: d.env,
    });
  } catch (e) {
    if (ev.isEvalError(e)) throw new CliError('error', e.message, { cause: e });
    throw e;
  } finally {
    process.off('SIGINT', onSigint);
  }
  progress({ type: 'end' });
  const facts = {
    machine: `${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, ${process.platform} ${process.arch}`,
    craftos: craftos.version,
    node: process.version,
    database: run.dbPath,
  };
  if (f.report) {
    mkdirSync(path.dirname(path.resolve(f.report)), { recursive: true });
    writeFileSync(f.report, ev.renderMarkdown(run, facts));
  }
  if (d.json()) d.printJson(run);
  else {
    d.print(ev.renderText(run));
    d.print(
      `\nTasks: ccagent --db ${run.dbPath} tasks list · dashboard: npx cc-orchestrator serve --db ${run.dbPath}\n` +
        `Results: ${path.join(outDir, 'results.json')}${f.report ? ` · report: ${f.report}` : ''}\n`,
    );
  }
  if (run.interrupted) d.setExitCode(130);
  else if (f.scripted === 'reference' && run.results.some((r) => !r.pass)) d.setExitCode(1);
  else if (f.scripted === 'wrong' && run.results.some((r) => r.pass)) d.setExitCode(1);
}

type Progress = ProgressEvent | { type: 'end' };

/** Progress on stderr: a bar redrawn in place on a terminal, one plain line per event otherwise. */
function progressPrinter(d: EvalCommandDeps): (e: Progress) => void {
  const tty = d.isTty ?? process.stderr.isTTY === true;
  let total = 0;
  let done = 0;
  let passed = 0;
  const running = new Set<string>();
  const bar = () => {
    const width = 24;
    const full = total ? Math.round((done / total) * width) : 0;
    const names = [...running].join(', ');
    const line = `[${'#'.repeat(full)}${'.'.repeat(width - full)}] ${done}/${total} done, ${passed} passed${names ? ` · running ${names}` : ''}`;
    // A terminal of unknown width (0 columns) gets 100.
    process.stderr.write(`\r\x1b[2K${line.slice(0, (process.stderr.columns || 100) - 1)}`);
  };
  return (e) => {
    if (e.type === 'start') {
      total = e.total;
      d.err(`[eval] ${total} attempts · orchestrator ${e.url} · database ${e.dbPath}`);
    } else if (e.type === 'attempt_start') {
      running.add(e.job);
      if (!tty) d.err(`[eval] start ${e.job} (${e.label} #${e.attempt})`);
    } else if (e.type === 'attempt_end') {
      running.delete(e.result.job);
      done = e.done;
      if (e.result.pass) passed += 1;
      if (!tty) {
        const r = e.result;
        d.err(
          `[eval] ${e.done}/${e.total} ${r.job} (${r.label} #${r.attempt}): ${r.pass ? 'pass' : `FAIL (${r.failure}: ${r.detail ?? ''})`} in ${r.wallSeconds.toFixed(1)} s`,
        );
      }
    } else if (e.type === 'end' && tty) {
      process.stderr.write('\r\x1b[2K');
      return;
    }
    if (tty) bar();
  };
}
