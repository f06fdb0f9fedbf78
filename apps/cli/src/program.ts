/**
 * The `ccagent` command tree (commander): every command's flags and help, each action calling a source (`--db` or
 * `--url`) and a renderer.
 *
 * Size (over 500 lines): one declaration per command, in the order `--help` shows them, so a reader finds a command's
 * flags and action in one place; the work is elsewhere (sources, render.ts, task-watch.ts, security-commands.ts).
 */
import { MODEL_REQUEST_KIND, TASK_STATUSES } from '@ccagent/engine';
import { conversationMarkdown, inertDeep, inertJson, inertText, type HttpStepEvent } from '@ccagent/protocol';
import { defaultDbPath } from '@ccagent/store';
import { readFileSync } from 'node:fs';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { openDbSource } from './db-source.js';
import { addEvalCommand } from './eval-command.js';
import { addKindCommands } from './kind-commands.js';
import { addScheduleCommands } from './schedule-commands.js';
import { addSecurityCommands } from './security-commands.js';
import { CliError } from './errors.js';
import { HttpTaskSource, type HttpSourceOptions } from './http-source.js';
import { inertOutput, stdoutOutput, type Output } from './output.js';
import {
  answeredRequests,
  isTerminal,
  openQuestion,
  renderClients,
  renderQuestion,
  renderRecord,
  renderStatusChange,
  renderStepDivider,
  renderTaskHeader,
  renderTaskList,
  renderTaskShow,
  renderTools,
} from './render.js';
import { renderModels } from './render-models.js';
import type { TaskActions, TaskSource, TaskUpdates } from './source.js';
import { stepSummaryView } from './wire-views.js';

/** Version of the `ccagent` command. */
export const CLI_VERSION = '0.1.0';

/** With the server's event stream, `tasks follow` still reads at least this often (ms) in case a wake-up is lost. */
const PUSH_FALLBACK_MS = 5000;
/** Step-log records `tasks follow` reads per request (the HTTP API allows up to 500). */
export const FOLLOW_PAGE = 200;

/** Orchestrator URL used by actions (and reads with `--url` omitted but required) when none is given. */
export const DEFAULT_URL = 'http://127.0.0.1:7420';

/** Opens the SQLite file read-only. */
export type DbOpener = (path: string) => Promise<TaskSource>;
/** Connects to a running orchestrator. */
export type UrlOpener = (opts: HttpSourceOptions) => TaskSource & TaskActions;

/** Dependencies of the program; every field has a production default. */
export interface ProgramDeps {
  /** Where results go (default: stdout, colour per TTY/NO_COLOR/FORCE_COLOR). */
  out?: Output;
  /** Where errors and notes go, one line per call (default: stderr). */
  err?: (line: string) => void;
  openDb?: DbOpener;
  openUrl?: UrlOpener;
  /**
   * Environment of the default database path (`CCAGENT_DB`, `CCAGENT_DATA_DIR`) and `CCAGENT_DEBUG`; default
   * `process.env`. (`CCAGENT_URL` / `CCAGENT_TOKEN` are read from `process.env` by the option parser.)
   */
  env?: NodeJS.ProcessEnv;
}

interface GlobalOpts {
  db?: string;
  url?: string;
  token?: string;
  tokenFile?: string;
  json?: boolean;
  color?: boolean;
  raw?: boolean;
}

const positiveInt =
  (max = Number.MAX_SAFE_INTEGER) =>
  (value: string): number => {
    const n = Number(value);
    if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < 1 || n > max) {
      throw new InvalidArgumentError(`expected a whole number from 1 to ${max}`);
    }
    return n;
  };

const nonNegativeInt = (value: string): number => {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n))
    throw new InvalidArgumentError('expected a whole number ≥ 0');
  return n;
};

const statusList = (value: string): string[] => {
  const list = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const bad = list.filter((s) => !(TASK_STATUSES as readonly string[]).includes(s));
  if (list.length === 0 || bad.length > 0) {
    throw new InvalidArgumentError(
      `unknown status ${bad.join(', ') || "''"}; one or more of ${TASK_STATUSES.join(', ')}`,
    );
  }
  return list;
};

const commaList = (value: string): string[] =>
  value
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);

/**
 * Builds the `ccagent` commander program. Failures surface as {@link CliError}s or commander usage errors;
 * {@link runCli} turns them into one line and an exit code.
 */
export function buildProgram(deps: ProgramDeps = {}): { program: Command; exitCode: () => number } {
  const env = deps.env ?? process.env;
  // Error lines quote the server, a task or a computer: always inert (--raw is for results, not for errors).
  const errOut = deps.err ?? ((line: string) => process.stderr.write(`${line}\n`));
  const err = (line: string): void => errOut(inertText(line));
  const openDb = deps.openDb ?? openDbSource;
  const openUrl = deps.openUrl ?? ((o: HttpSourceOptions) => new HttpTaskSource(o));
  let code = 0;
  let outCache: Output | undefined;

  const program = new Command('ccagent')
    .description('Inspect and control ccagent tasks: what each model saw and said, step by step.')
    .version(CLI_VERSION, '-V, --version', 'print the version')
    .helpOption('-h, --help', 'show help')
    .addOption(
      new Option(
        '--db <path|url>',
        'read this SQLite file or postgres:// database directly, read-only (default: the server default DB)',
      ),
    )
    .addOption(new Option('--url <url>', 'talk to a running orchestrator instead').env('CCAGENT_URL'))
    .addOption(
      new Option(
        '--token <token>',
        'orchestrator API token (sent as a Bearer token); given here it is visible to every user of this machine in the process list (ps): prefer CCAGENT_TOKEN or --token-file',
      ).env('CCAGENT_TOKEN'),
    )
    .addOption(
      new Option('--token-file <file>', 'read the API token from the first line of this file').env(
        'CCAGENT_TOKEN_FILE',
      ),
    )
    .option('--json', 'print JSON for scripts (tasks follow: one JSON event a line)')
    .option(
      '--raw',
      'print text from tasks, models and computers byte for byte: control characters (ANSI escapes, CR, bidi overrides) reach the terminal unchanged; by default they are shown as visible symbols (␛[31m)',
    )
    .option('--color', 'colour even when not on a terminal')
    .option('--no-color', 'never colour')
    .showHelpAfterError('(run with --help for usage)')
    .configureOutput({
      writeOut: (s) => output().write(s),
      writeErr: (s) => {
        for (const line of s.trimEnd().split('\n')) err(line);
      },
    })
    .exitOverride();

  const globals = (): GlobalOpts => program.opts<GlobalOpts>();
  function output(): Output {
    if (deps.out) return deps.out;
    outCache ??= stdoutOutput(globals().color !== undefined ? { color: globals().color } : {});
    return outCache;
  }
  const raw = (): boolean => globals().raw === true;
  /**
   * What a human renderer is given of data from outside (a task, a model, a computer, the server): every string in
   * it inert (control characters shown as visible symbols), unless `--raw`; `--json` keeps the exact values.
   */
  const view = <T>(value: T): T => (raw() || globals().json ? value : inertDeep(value));
  const print = (text: string): void => output().write(raw() ? text : inertOutput(text, output().color));
  // The same JSON value with DEL, C1 and format characters escaped (JSON.stringify leaves them raw).
  const json = (value: unknown, space?: number): string =>
    raw() ? JSON.stringify(value, null, space) : inertJson(value, space);
  const printJson = (value: unknown): void => output().write(`${json(value, 2)}\n`);
  const printEvent = (value: unknown): void => output().write(`${json(value)}\n`);

  const urlGiven = (): string | undefined => {
    const g = globals();
    const src = program.getOptionValueSource('url');
    if (g.db !== undefined && src === 'cli')
      throw new CliError('usage', 'give either --db or --url, not both');
    // --db on the command line beats CCAGENT_URL from the environment.
    if (g.db !== undefined) return undefined;
    // An empty CCAGENT_URL counts as unset.
    return g.url === '' ? undefined : g.url;
  };

  /** Reads come from --url when given, else the database (--db, else the server's default: CCAGENT_DB or the file). */
  const readSource = async (): Promise<TaskSource> => {
    const url = urlGiven();
    if (url !== undefined) return openUrl({ url, ...tokenOpt() });
    return openDb(globals().db ?? defaultDbPath(env));
  };
  /**
   * The API token: `--token`, else `--token-file`, else `CCAGENT_TOKEN`, else `CCAGENT_TOKEN_FILE` (a flag wins over
   * the environment; both at one level is a usage error). A file keeps the secret out of the process list.
   */
  const tokenOpt = (): { token?: string } => {
    const g = globals();
    const tokenFrom =
      g.token !== undefined && g.token !== '' ? program.getOptionValueSource('token') : undefined;
    const fileFrom =
      g.tokenFile !== undefined && g.tokenFile !== '' ? program.getOptionValueSource('tokenFile') : undefined;
    if (tokenFrom !== undefined && tokenFrom === fileFrom) {
      throw new CliError(
        'usage',
        tokenFrom === 'env'
          ? 'give the token once: CCAGENT_TOKEN or CCAGENT_TOKEN_FILE, not both'
          : 'give the token once: --token or --token-file, not both',
      );
    }
    if (fileFrom !== undefined && (tokenFrom === undefined || fileFrom === 'cli')) {
      const file = g.tokenFile as string;
      let text: string;
      try {
        text = readFileSync(file, 'utf8');
      } catch (e) {
        throw new CliError('usage', `--token-file: cannot read ${file}: ${(e as Error).message}`);
      }
      const token = (text.split(/\r?\n/)[0] ?? '').trim();
      if (token === '') throw new CliError('usage', `--token-file: ${file} is empty`);
      return { token };
    }
    return tokenFrom !== undefined ? { token: g.token as string } : {};
  };
  /** Actions always go through the server: the CLI never writes to the database. */
  const actions = (what: string): TaskActions => {
    if (globals().db !== undefined) {
      throw new CliError(
        'usage',
        `${what} needs the running orchestrator (--url, default ${DEFAULT_URL}); --db is read-only`,
      );
    }
    return openUrl({ url: globals().url || DEFAULT_URL, ...tokenOpt() });
  };
  const withSource = async (fn: (s: TaskSource) => Promise<void>): Promise<void> => {
    const source = await readSource();
    try {
      await fn(source);
    } finally {
      await source.close();
    }
  };

  program
    .command('chat')
    .description(
      'talk with the model directly (a chat task, no tools): its reply is printed as it is written; --task continues a chat',
    )
    .argument('<text...>', 'what to say')
    .option('--task <id>', 'continue this chat (a follow-up message to the task)')
    .option('--kind <kind>', 'task kind of a new chat', 'chat')
    .action(async (words: string[], o: { task?: string; kind: string }) => {
      code = await chat(words.join(' '), o.task, o.kind);
    });

  /**
   * One exchange of a chat: create the task (or send the message to `taskId`), print the reply as it streams, and
   * whatever of it the stream missed (a reply that began before the stream was open) once the task has ended.
   */
  async function chat(text: string, taskId: string | undefined, kind: string): Promise<number> {
    const a = actions('chat');
    const s = a as TaskSource & TaskActions;
    let id: string;
    if (taskId !== undefined) {
      id = (await a.message(taskId, text)).id;
    } else {
      id = (await a.createTask({ kind, prompt: text })).task.id;
    }
    let streamed = '';
    let step: number | undefined;
    const watch = await s.watchTask?.(id, (d) => {
      // A later model call of the same run (after an empty reply) starts a new paragraph.
      if (step !== undefined && d.step !== step) print('\n');
      step = d.step;
      streamed += d.text;
      print(view(d.text));
    });
    try {
      for (;;) {
        const d = await s.getTask(id);
        if (isTerminal(d.task.status)) {
          const result = d.task.result as { message?: unknown } | undefined;
          const message = typeof result?.message === 'string' ? result.message : undefined;
          if (d.task.status === 'completed' && message !== undefined) {
            if (message.startsWith(streamed)) print(view(message.slice(streamed.length)));
            else if (streamed === '') print(view(message));
          }
          if (streamed !== '' || message !== undefined) print('\n');
          if (d.task.status !== 'completed') {
            err(`ccagent: chat ${id} ${d.task.status}${d.task.error ? `: ${d.task.error.message}` : ''}`);
            return 1;
          }
          err(`(chat ${id}; continue with: ccagent chat --task ${id} "…")`);
          return 0;
        }
        if (watch) await watch.wait(PUSH_FALLBACK_MS);
        else await new Promise((r) => setTimeout(r, 500));
      }
    } finally {
      watch?.close();
    }
  }

  const tasks = program.command('tasks').description('list, show, follow, create, cancel and answer tasks');

  tasks
    .command('list')
    .description('tasks, newest first')
    .option(
      '--status <list>',
      `only these statuses, comma-separated (${TASK_STATUSES.join(', ')})`,
      statusList,
    )
    .option('--kind <kind>', 'only this task kind')
    .option('--client <id>', 'only tasks bound to this client')
    .option('--limit <n>', 'at most n tasks (1..1000)', positiveInt(1000), 50)
    .option('--offset <n>', 'skip the n newest matches', nonNegativeInt, 0)
    .action(
      async (o: { status?: string[]; kind?: string; client?: string; limit: number; offset: number }) => {
        await withSource(async (s) => {
          const page = await s.listTasks(o);
          if (globals().json) printJson(page);
          else print(renderTaskList(output(), view(page), o.offset));
        });
      },
    );

  tasks
    .command('show')
    .description(
      'a task, then each step: planner and executor input/output, validation errors, tool call and result, timing, tokens',
    )
    .argument('<id>', 'task id')
    .option('--full', 'print model inputs and outputs untruncated')
    .option('--step <n>', 'only the records of engine step n', positiveInt())
    .action(async (id: string, o: { full?: boolean; step?: number }) => {
      await withSource(async (s) => {
        const d = await s.getTask(id);
        if (o.step !== undefined) {
          const last = Math.max(0, ...d.steps.map((r) => r.step));
          d.steps = d.steps.filter((r) => r.step === o.step);
          if (d.steps.length === 0) {
            throw new CliError(
              'not_found',
              `task ${id} has no step ${o.step} (${last > 0 ? `steps 1..${last}` : 'no steps logged yet'})`,
            );
          }
        }
        if (globals().json) printJson(d);
        else print(renderTaskShow(output(), view(d), { full: o.full === true }));
      });
    });

  tasks
    .command('export')
    .description(
      'a task as Markdown (the conversation: prompt, replies, files written with their diffs, calls and output, questions, result) or as JSON (everything)',
    )
    .argument('<id>', 'task id')
    .addOption(
      new Option('--format <format>', 'md: the conversation; json: the task, every record whole, questions')
        .choices(['md', 'json'])
        .default('md'),
    )
    .action(async (id: string, o: { format: 'md' | 'json' }) => {
      await withSource(async (s) => {
        const d = await s.getTask(id);
        if (o.format === 'json' || globals().json) {
          printJson(d);
          return;
        }
        // conversationMarkdown makes every text inert itself (control characters visible, HTML escaped).
        output().write(conversationMarkdown(d.task, d.steps, d.questions, d.messages ?? []));
      });
    });

  tasks
    .command('follow')
    .description('show a task, then print new steps and status changes as they happen until the task ends')
    .argument('<id>', 'task id')
    .option('--full', 'print model inputs and outputs untruncated')
    .option(
      '--interval <ms>',
      'poll interval in ms (default 500 with --db, 1000 with --url)',
      positiveInt(60_000),
    )
    .action(async (id: string, o: { full?: boolean; interval?: number }) => {
      await withSource(async (s) => {
        const pollMs = o.interval ?? (urlGiven() !== undefined ? 1000 : 500);
        code = await follow(s, id, pollMs, o.full === true);
      });
    });

  async function follow(s: TaskSource, id: string, pollMs: number, full: boolean): Promise<number> {
    const json = globals().json === true;
    const out = output();
    let unreachable = false;
    /**
     * The task and the records after `afterSeq`. A source that cannot be reached (a restarting orchestrator) is not
     * the end of the task: it says so once and answers `previous` with no new records.
     */
    const poll = async (afterSeq: number, previous: TaskUpdates): Promise<TaskUpdates> => {
      try {
        const next = view(await s.getTaskUpdates(id, afterSeq, FOLLOW_PAGE));
        if (unreachable) err(`ccagent: ${s.label} is reachable again`);
        unreachable = false;
        return next;
      } catch (e) {
        if (!(e instanceof CliError && e.code === 'unavailable')) throw e;
        if (!unreachable) err(`ccagent: ${e.message}; still following, retrying every ${pollMs} ms`);
        unreachable = true;
        return { ...previous, steps: [], hasMore: false };
      }
    };
    /**
     * The pushed short forms as the next page, after the records not printed yet (a request waiting for its reply);
     * undefined when one is missing (a record committed before the stream opened): then the follower reads.
     */
    const fromSummaries = (
      prev: TaskUpdates,
      after: number,
      pushed: HttpStepEvent[],
    ): TaskUpdates | undefined => {
      const steps = prev.steps.filter((r) => r.seq > after);
      let have = steps.at(-1)?.seq ?? after;
      for (const e of pushed) {
        if (e.seq <= have) continue;
        // seq is dense per task: a gap is a record this follower has not seen.
        if (e.seq !== have + 1) return undefined;
        steps.push(view(stepSummaryView(e)));
        have = e.seq;
      }
      return { ...prev, steps, hasMore: false };
    };
    // The whole log once; then each poll reads only the records after the last one printed.
    let d: TaskUpdates = { ...view(await s.getTask(id)), hasMore: false };
    // A chat task's reply is printed as it is written; the step's records follow once the call ends.
    let streaming: number | undefined;
    const onDelta = (delta: { step: number; text: string }): void => {
      if (json) {
        printEvent({ event: 'delta', taskId: id, step: delta.step, delta: delta.text });
        return;
      }
      if (streaming !== delta.step) {
        print(`${streaming !== undefined ? '\n' : ''}${renderStepDivider(out, delta.step)}`);
        streaming = delta.step;
      }
      print(view(delta.text));
    };
    // The human view paints a step record from the short form its `step` event carries, without reading it; --json
    // and --full print whole records, so they read them.
    const summaries = !json && !full;
    const watch = isTerminal(d.task.status) ? undefined : await s.watchTask?.(id, onDelta, { summaries });
    let lastSeq = 0;
    let lastStep: number | undefined;
    let status = d.task.status;
    // The human header already shows a question that is open now; JSON gets it as an event.
    let lastQuestion = !json && status === 'waiting_for_user' ? openQuestion(d)?.questionId : undefined;
    if (json) printEvent({ event: 'task', task: d.task });
    else print(renderTaskHeader(out, d) + '\n');
    for (;;) {
      const answered = answeredRequests(d.steps);
      for (const [i, r] of d.steps.entries()) {
        if (r.seq <= lastSeq) continue;
        if (!json && r.kind === MODEL_REQUEST_KIND) {
          // A request whose reply is on this page is shown by that reply's record. One with nothing after it yet
          // is read again on the next poll, so a reply that comes then replaces it (a cut-short call still shows).
          if (answered.has(r.seq)) {
            lastSeq = r.seq;
            continue;
          }
          if (i === d.steps.length - 1 && !d.hasMore && !isTerminal(d.task.status)) break;
        }
        if (json) printEvent({ event: 'step', taskId: id, step: r });
        else {
          if (streaming !== undefined) {
            // the streamed reply ends its line before the records of its step
            print('\n');
            if (streaming === r.step) lastStep = r.step;
            streaming = undefined;
          }
          if (r.step !== lastStep)
            print((lastStep !== undefined ? '\n' : '') + renderStepDivider(out, r.step));
          print(renderRecord(out, r, { full }));
        }
        lastSeq = r.seq;
        lastStep = r.step;
      }
      if (d.hasMore) {
        // A backlog larger than a page: print all of it before the status it led to.
        d = await poll(lastSeq, d);
        continue;
      }
      if (d.task.status !== status) {
        if (json)
          printEvent({ event: 'status', taskId: id, from: status, status: d.task.status, task: d.task });
        else print(renderStatusChange(out, d, status));
        status = d.task.status;
      }
      const q = status === 'waiting_for_user' ? openQuestion(d) : undefined;
      if (q && q.questionId !== lastQuestion) {
        if (json) printEvent({ event: 'question', taskId: id, question: q });
        else print(renderQuestion(out, id, q));
        lastQuestion = q.questionId;
      }
      if (isTerminal(status)) break;
      // Pushed (the server's event stream) when there is one: read as soon as something was committed, and at
      // least every PUSH_FALLBACK_MS in case a wake-up was lost; else poll every pollMs.
      if (watch?.pushing) await watch.wait(unreachable ? pollMs : Math.max(pollMs, PUSH_FALLBACK_MS));
      else await new Promise((r) => setTimeout(r, pollMs));
      // What the stream carried (taken even while the server was unreachable, which a read then confirms).
      const pushed = summaries && watch?.pushing ? watch.take() : undefined;
      d =
        (pushed && !pushed.read && !unreachable && fromSummaries(d, lastSeq, pushed.steps)) ||
        (await poll(lastSeq, d));
    }
    watch?.close();
    if (json) printEvent({ event: 'end', taskId: id, status, task: d.task });
    return status === 'completed' ? 0 : 1;
  }

  tasks
    .command('create')
    .description('create a task on the running orchestrator')
    .requiredOption('--kind <kind>', 'task kind (as configured on the server, e.g. general_agent)')
    .requiredOption('--prompt <text>', 'what the task should achieve')
    .option('--client <id>', 'the CC client whose commands the task uses')
    .option(
      '--name <name>',
      'name the agent: events may be sent to it by name (refused if a running task has it)',
    )
    .option('--allow <commands>', 'comma-separated commands the task may call', commaList)
    .option(
      '--model <role=name>',
      'model for a role (planner, executor, native); repeatable',
      collectPairs,
      {},
    )
    .option('--provider <name>', 'model provider: ollama or openai-compatible')
    .option('--temperature <n>', 'sampling temperature', Number)
    .option('--num-ctx <tokens>', 'context window', Number)
    .option('--executor-mode <mode>', 'planner/executor: parser, model or parser-then-model')
    .option('--max-steps <n>', 'most decisions of a run', Number)
    .option('--max-tool-calls <n>', 'most command calls of a run', Number)
    .option('--max-model-calls <n>', 'native: most model calls of a run', Number)
    .option(
      '--max-prompt-tokens <n>',
      'most prompt tokens of a run (as the model server counts them)',
      Number,
    )
    .option(
      '--max-output-tokens <n>',
      'most output tokens of a run (as the model server counts them)',
      Number,
    )
    .option('--deadline <ms>', 'wall-clock budget of a run, milliseconds', Number)
    .option('--interactive', 'a person is watching (planner/executor: no question limit)')
    .option('--settings <json>', 'any per-task settings as JSON (the flags above win)')
    .action(async (o: CreateFlags) => {
      const r = view(
        await actions('tasks create').createTask({
          kind: o.kind,
          prompt: o.prompt,
          ...(o.client !== undefined ? { clientId: o.client } : {}),
          ...(o.allow !== undefined ? { allowedCommands: o.allow } : {}),
          ...(o.name !== undefined ? { name: o.name } : {}),
          ...settingsFrom(o),
        }),
      );
      if (globals().json) printJson(r);
      else print(`${r.created ? 'created' : 'exists'} ${r.task.id} (${r.task.status})\n`);
    });

  tasks
    .command('message')
    .description(
      'send a follow-up message: a running task sees it in its next step, an ended one continues with it',
    )
    .argument('<id>', 'task id')
    .argument('<text>', 'the message')
    .action(async (id: string, text: string) => {
      const task = view(await actions('tasks message').message(id, text));
      if (globals().json) printJson({ task });
      else print(`sent to ${task.id} (${task.status})\n`);
    });

  tasks
    .command('event')
    .description('send an outside event to a running task by its agent name (or id); a sleeping task wakes')
    .argument('<agent>', 'the agent’s name (as created with --name) or the task id')
    .argument('<event>', 'the event’s name')
    .option('--data <json>', 'the event’s data', jsonArgument)
    .option('--client <id>', 'only the agents of this computer (two may each run one of that name)')
    .action(async (agent: string, event: string, o: { data?: unknown; client?: string }) => {
      const task = view(await actions('tasks event').event(agent, event, o.data, o.client));
      if (globals().json) printJson({ task });
      else print(`sent ${event} to ${task.id} (${task.status})\n`);
    });

  tasks
    .command('retry')
    .description('resume a failed or cancelled task from its memory with fresh budgets')
    .argument('<id>', 'task id')
    .action(async (id: string) => {
      const task = view(await actions('tasks retry').retry(id));
      if (globals().json) printJson({ task });
      else print(`retrying ${task.id} (${task.status})\n`);
    });

  tasks
    .command('cancel')
    .description('cancel a task on the running orchestrator')
    .argument('<id>', 'task id')
    .option('--reason <text>', 'why (stored with the task)')
    .action(async (id: string, o: { reason?: string }) => {
      const task = view(await actions('tasks cancel').cancelTask(id, o.reason));
      if (globals().json) printJson({ task });
      else print(`${task.id} ${task.status}\n`);
    });

  tasks
    .command('answer')
    .description("answer a task's open question (a task waiting_for_user)")
    .argument('<id>', 'task id')
    .argument('<text>', 'the answer')
    .option('--question <id>', 'question id (default: the open one)')
    .action(async (id: string, text: string, o: { question?: string }) => {
      const task = view(await actions('tasks answer').answer(id, text, o.question));
      if (globals().json) printJson({ task });
      else print(`answered ${task.id} (${task.status})\n`);
    });

  const clientsCmd = program.command('clients').description('CC clients and their keys');
  clientsCmd
    .command('list')
    .description('clients seen, whether connected, and their commands')
    .action(async () => {
      await withSource(async (s) => {
        const clients = await s.listClients();
        if (globals().json) printJson({ clients });
        else print(renderClients(output(), view(clients)));
      });
    });

  program
    .command('models')
    .description(
      'the model roles and each pool of model servers with its servers’ state (needs the running server)',
    )
    .action(async () => {
      await withSource(async (s) => {
        if (!s.listModels) {
          throw new CliError(
            'usage',
            `models needs the running orchestrator (--url, default ${DEFAULT_URL})`,
          );
        }
        const models = await s.listModels();
        if (globals().json) printJson(models);
        else print(renderModels(output(), models, Date.now()));
      });
    });

  program
    .command('tools')
    .description('model-written tools')
    .command('list')
    .description(
      'model-written tools on each client and their lifecycle state (draft, test, active, retired)',
    )
    .option('--client <id>', 'only tools on this client')
    .addOption(
      new Option('--status <status>', 'only tools in this state').choices([
        'draft',
        'test',
        'active',
        'retired',
      ]),
    )
    .action(async (o: { client?: string; status?: string }) => {
      await withSource(async (s) => {
        const tools = (await s.listTools()).filter(
          (t) =>
            (o.client === undefined || t.clientId === o.client) &&
            (o.status === undefined || t.status === o.status),
        );
        if (globals().json) printJson({ tools });
        else print(renderTools(output(), view(tools)));
      });
    });

  addSecurityCommands(program, clientsCmd, {
    admin: (what) => {
      if (globals().db !== undefined) {
        throw new CliError('usage', `${what} needs the running orchestrator (--url, default ${DEFAULT_URL})`);
      }
      return { url: globals().url || DEFAULT_URL, ...tokenOpt() };
    },
    // Like the other reads: --url when given, else the SQLite file.
    dbPath: () => (urlGiven() === undefined ? (globals().db ?? defaultDbPath(env)) : undefined),
    json: () => globals().json === true,
    // Each record is printed on one line there: a newline in a value is shown too.
    view: (value) => (raw() || globals().json ? value : inertDeep(value, { multiline: false })),
    print,
    printJson,
  });

  addScheduleCommands(program, {
    admin: (what) => {
      if (globals().db !== undefined) {
        throw new CliError('usage', `${what} needs the running orchestrator (--url, default ${DEFAULT_URL})`);
      }
      return { url: globals().url || DEFAULT_URL, ...tokenOpt() };
    },
    json: () => globals().json === true,
    view: (value) => (raw() || globals().json ? value : inertDeep(value, { multiline: false })),
    print,
    printJson,
  });

  addKindCommands(program, {
    admin: (what) => {
      if (globals().db !== undefined) {
        throw new CliError('usage', `${what} needs the running orchestrator (--url, default ${DEFAULT_URL})`);
      }
      return { url: globals().url || DEFAULT_URL, ...tokenOpt() };
    },
    json: () => globals().json === true,
    view: (value) => (raw() || globals().json ? value : inertDeep(value, { multiline: false })),
    print,
    printJson,
  });

  addEvalCommand(program, {
    json: () => globals().json === true,
    print,
    printJson,
    err,
    env,
    setExitCode: (c) => {
      code = c;
    },
  });

  return { program, exitCode: () => code };
}

/** Flags of `tasks create`. */
interface CreateFlags {
  kind: string;
  prompt: string;
  client?: string;
  name?: string;
  allow?: string[];
  model: Record<string, string>;
  provider?: string;
  temperature?: number;
  numCtx?: number;
  executorMode?: string;
  maxSteps?: number;
  maxToolCalls?: number;
  maxModelCalls?: number;
  maxPromptTokens?: number;
  maxOutputTokens?: number;
  deadline?: number;
  interactive?: boolean;
  settings?: string;
}

/** A JSON option value (`--data '{"on":true}'`). */
function jsonArgument(value: string): unknown {
  try {
    return JSON.parse(value) as unknown;
  } catch {
    throw new InvalidArgumentError('expected JSON');
  }
}

/** `--model planner=qwen3:14b`, repeated, as `{ planner: 'qwen3:14b' }`. */
function collectPairs(value: string, acc: Record<string, string>): Record<string, string> {
  const i = value.indexOf('=');
  if (i <= 0) throw new CliError('usage', `--model expects role=name, got "${value}"`);
  return { ...acc, [value.slice(0, i)]: value.slice(i + 1) };
}

/** The per-task settings the create flags ask for (the server validates them and its maximums). */
function settingsFrom(o: CreateFlags): { settings?: Record<string, unknown> } {
  let base: Record<string, unknown> = {};
  if (o.settings !== undefined) {
    try {
      const parsed: unknown = JSON.parse(o.settings);
      if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
        throw new Error('not an object');
      base = parsed as Record<string, unknown>;
    } catch (e) {
      throw new CliError('usage', `--settings must be a JSON object: ${(e as Error).message}`);
    }
  }
  const s: Record<string, unknown> = { ...base };
  if (Object.keys(o.model).length > 0) s.models = { ...(base.models as object | undefined), ...o.model };
  if (o.provider !== undefined) s.provider = o.provider;
  if (o.temperature !== undefined) s.temperature = o.temperature;
  if (o.numCtx !== undefined) s.num_ctx = o.numCtx;
  if (o.executorMode !== undefined) s.executor_mode = o.executorMode;
  if (o.interactive) s.interactive = true;
  const budgets: Record<string, unknown> = { ...(base.budgets as object | undefined) };
  if (o.maxSteps !== undefined) budgets.max_steps = o.maxSteps;
  if (o.maxToolCalls !== undefined) budgets.max_tool_calls = o.maxToolCalls;
  if (o.maxModelCalls !== undefined) budgets.max_model_calls = o.maxModelCalls;
  if (o.maxPromptTokens !== undefined) budgets.max_prompt_tokens = o.maxPromptTokens;
  if (o.maxOutputTokens !== undefined) budgets.max_output_tokens = o.maxOutputTokens;
  if (o.deadline !== undefined) budgets.deadline_ms = o.deadline;
  if (Object.keys(budgets).length > 0) s.budgets = budgets;
  return Object.keys(s).length > 0 ? { settings: s } : {};
}

/**
 * Runs `ccagent` with `argv` (without node and script) and returns the exit code: 0 ok, 1 error, 2 usage,
 * 3 not found (`tasks follow`: 1 when the task failed or was cancelled). Never throws; errors are one line on
 * `deps.err` (set `CCAGENT_DEBUG=1` for the stack).
 */
export async function runCli(argv: string[], deps: ProgramDeps = {}): Promise<number> {
  const errOut = deps.err ?? ((line: string) => process.stderr.write(`${line}\n`));
  // An error message quotes the server, a task or a computer: inert, like every line the CLI prints.
  const err = (line: string): void => errOut(inertText(line));
  const { program, exitCode } = buildProgram({ ...deps, err });
  if (argv.length === 0) {
    program.outputHelp();
    return 0;
  }
  try {
    await program.parseAsync(argv, { from: 'user' });
    return exitCode();
  } catch (e) {
    if (e instanceof CommanderError) {
      // Commander has already printed the message (or the help); `ccagent tasks` alone is a usage error.
      return e.exitCode === 0 ? 0 : 2;
    }
    if ((deps.env ?? process.env).CCAGENT_DEBUG && e instanceof Error && e.stack) err(e.stack);
    if (e instanceof CliError) {
      err(`ccagent: ${e.message}`);
      return e.exitCode;
    }
    err(`ccagent: ${e instanceof Error ? e.message : String(e)}`);
    return 1;
  }
}
