/**
 * `cc-orchestrator` command line: `serve` starts the server. Human-readable startup lines go to stdout (the first
 * one, `cc-orchestrator <version> listening on <url>`, is what scripts and tests wait for); JSON logs go to stderr.
 */
import { readFileSync } from 'node:fs';
import { Command, Option } from 'commander';
import { inertText } from '@ccagent/protocol';
import { defaultDbPath } from '@ccagent/store';
import { loadConfig } from './config.js';
import { createLogger } from './logger.js';
import { OrchestratorError } from './orchestrator-error.js';
import { startOrchestrator, type RunningOrchestrator } from './orchestrator.js';
import { prettyDestination, ShownProblems } from './pretty-log.js';
import {
  DURABILITY_LEVELS,
  LOG_FORMATS,
  LOG_LEVELS,
  resolveServeOptions,
  type ServeFlags,
} from './serve-options.js';
import { ORCHESTRATOR_VERSION } from './version.js';

/**
 * The console is a person's terminal: a line that quotes the model server (its error, its model names), a config
 * file or a database path is printed inert (control and bidi characters shown as visible symbols), like the log.
 */
const say = (text: string): void => console.log(inertText(text));
/** One value inside a line: a newline in it is shown too. */
const one = (text: string): string => inertText(text, { multiline: false });

function fail(err: unknown): never {
  const code = err instanceof OrchestratorError ? err.code : 'error';
  const message = err instanceof Error ? err.message : String(err);
  console.error(`cc-orchestrator: ${inertText(message)}`);
  process.exit(code === 'config_invalid' || code === 'unsafe_bind' ? 2 : 1);
}

const program = new Command('cc-orchestrator')
  .description('The ccagent orchestrator: the server ComputerCraft computers connect to.')
  .version(ORCHESTRATOR_VERSION);

program
  .command('serve')
  .description('Start the orchestrator (HTTP API, WebSocket for CC clients, the Lua installer).')
  .option('--host <host>', 'address to bind (env CCAGENT_HOST; default 127.0.0.1)')
  .option('--port <port>', 'port, 0 = ephemeral (env CCAGENT_PORT; default 7420)')
  .option(
    '--db <path|url>',
    'SQLite file, or postgres://user:pass@host/db to share one PostgreSQL database between orchestrators (one active, the others standby) (env CCAGENT_DB; default: ccagent.db in the per-user data dir)',
  )
  .option(
    '--advertise-url <url>',
    'with postgres://: the URL standbys name as the active one when this one leads (env CCAGENT_ADVERTISE_URL; default http://HOST:PORT)',
  )
  .option(
    '--lease-ttl <ms>',
    'with postgres://: how long a paused or cut-off leader keeps the lease before a standby takes over (env CCAGENT_LEASE_TTL_MS; default 5000)',
  )
  .option('--config <file>', 'JSON config file: models, task kinds, limits (env CCAGENT_CONFIG)')
  .option('--ollama-url <url>', 'Ollama address (env OLLAMA_HOST; default http://127.0.0.1:11434)')
  .option(
    '--token <secret>',
    'shared secret clients must present (env CCAGENT_TOKEN); required off loopback. A value given here is visible to every user of this machine in the process list (ps): prefer CCAGENT_TOKEN or --token-file',
  )
  .option(
    '--token-file <file>',
    'read the shared secret from the first line of this file (env CCAGENT_TOKEN_FILE); instead of --token',
  )
  .addOption(
    new Option('--log-level <level>', 'log level (env CCAGENT_LOG_LEVEL; default info)').choices([
      ...LOG_LEVELS,
    ]),
  )
  .addOption(
    new Option(
      '--log-format <format>',
      'pretty: readable lines, each problem once (default on a terminal); json: every log line as JSON (default otherwise; env CCAGENT_LOG_FORMAT)',
    ).choices([...LOG_FORMATS]),
  )
  .addOption(
    new Option(
      '--durability <level>',
      'full: acknowledged work survives power loss (fsync per commit); normal: survives a crash or kill -9, not a power loss, faster (env CCAGENT_DURABILITY; default full)',
    ).choices([...DURABILITY_LEVELS]),
  )
  .option(
    '--tls-cert <file>',
    'PEM certificate: serve https:// and wss:// (env CCAGENT_TLS_CERT; with --tls-key)',
  )
  .option('--tls-key <file>', 'PEM private key of --tls-cert (env CCAGENT_TLS_KEY)')
  .option(
    '--mc-port <port>',
    'Minecraft mod endpoint port, 0 = ephemeral, off = none (env CCAGENT_MC_PORT; default 9876, skipped with a warning when busy)',
  )
  .option(
    '--mc-host <host>',
    'Minecraft mod endpoint address, loopback only (env CCAGENT_MC_HOST; default 127.0.0.1)',
  )
  .option('--lua-dir <dir>', 'serve the Lua client from this directory instead of the bundled one')
  .action(async (flags: ServeFlags & { luaDir?: string; advertiseUrl?: string; leaseTtl?: string }) => {
    const opts = resolveServeOptions(flags, process.env, process.stderr.isTTY === true);
    if (!opts.ok) fail(opts.error);
    const o = opts.value;
    const config = loadConfig({
      ...(o.configPath !== undefined ? { file: o.configPath } : {}),
      env: process.env,
    });
    if (!config.ok) fail(config.error);
    const shown = new ShownProblems();
    const pretty = o.logFormat === 'pretty';
    const logger = createLogger(o.logLevel, pretty ? prettyDestination(process.stderr, shown) : undefined);
    let tls: { cert: Buffer; key: Buffer } | undefined;
    if (o.tls) {
      try {
        tls = { cert: readFileSync(o.tls.certPath), key: readFileSync(o.tls.keyPath) };
      } catch (err) {
        fail(new OrchestratorError('config_invalid', `cannot read the TLS files: ${(err as Error).message}`));
      }
    }
    const dbPath = o.dbPath ?? defaultDbPath();
    const common = {
      config: config.value,
      host: o.host,
      port: o.port,
      ollamaUrl: o.ollamaUrl,
      durability: o.durability,
      ...(o.minecraft !== undefined ? { minecraft: o.minecraft } : {}),
      ...(o.token !== undefined ? { token: o.token } : {}),
      ...(tls !== undefined ? { tls } : {}),
      ...(flags.luaDir !== undefined ? { luaDir: flags.luaDir } : {}),
      logger,
    };
    let running: RunningOrchestrator;
    let stopAll: () => Promise<void>;
    try {
      if (/^postgres(ql)?:\/\//i.test(dbPath)) {
        const advertiseUrl = flags.advertiseUrl ?? process.env.CCAGENT_ADVERTISE_URL;
        const ttl = flags.leaseTtl ?? process.env.CCAGENT_LEASE_TTL_MS;
        const leaseTtlMs = ttl !== undefined && ttl !== '' ? Number(ttl) : undefined;
        if (leaseTtlMs !== undefined && !(Number.isInteger(leaseTtlMs) && leaseTtlMs >= 200)) {
          fail(
            new OrchestratorError(
              'config_invalid',
              `--lease-ttl must be a whole number of ms >= 200, got ${ttl}`,
            ),
          );
        }
        // Loaded only for a PostgreSQL URL: an SQLite server starts as before.
        const { startOnPostgres } = await import('./high-availability.js');
        const pgServe = await startOnPostgres({
          ...common,
          dbUrl: dbPath,
          ...(advertiseUrl ? { advertiseUrl } : {}),
          ...(leaseTtlMs !== undefined ? { leaseTtlMs } : {}),
          onStandby: (url) =>
            say(
              `cc-orchestrator ${ORCHESTRATOR_VERSION} standby on ${one(url)} (another orchestrator holds the lease; taking over when it stops)`,
            ),
          onLost: (reason) => {
            // Writes are refused from now on (fenced): stop at once; a supervisor starts this process again as a standby.
            console.error(`cc-orchestrator: no longer the active orchestrator: ${one(reason)}; exiting`);
            process.exit(3);
          },
        });
        stopAll = () => pgServe.close();
        const stopWaiting = (signal: string): void => {
          console.log(`cc-orchestrator: ${signal} received, shutting down`);
          if (pretty) for (const line of shown.repeated()) process.stderr.write(`repeated: ${line}\n`);
          pgServe.close().then(
            () => process.exit(0),
            () => process.exit(1),
          );
        };
        process.once('SIGINT', stopWaiting);
        process.once('SIGTERM', stopWaiting);
        running = await pgServe.active;
        process.off('SIGINT', stopWaiting);
        process.off('SIGTERM', stopWaiting);
      } else {
        running = await startOrchestrator({ ...common, dbPath });
        stopAll = () => running.close();
      }
    } catch (err) {
      fail(err);
    }
    const r = running.report;
    // One write, so a reader that sees the first line sees the whole summary.
    say(
      [
        `cc-orchestrator ${ORCHESTRATOR_VERSION} listening on ${r.url}`,
        `  database:   ${one(r.dbPath)} (durability ${o.durability})${r.resumed > 0 ? ` (${r.resumed} unfinished tasks resumed)` : ''}`,
        `  websocket:  ${r.url.replace(/^http/, 'ws')}/ws${o.token !== undefined ? ' (token required)' : ''}`,
        `  install:    wget run ${r.url}/lua/install.lua   (${r.luaFiles} Lua files)`,
        `  dashboard:  ${r.url}/`,
        ...(r.minecraft === undefined
          ? []
          : 'url' in r.minecraft
            ? [
                `  minecraft:  ${r.minecraft.url} (mod endpoint; ccagent-mc-bridge --orchestrator ${r.minecraft.url})`,
              ]
            : [`  minecraft:  not running: ${one(r.minecraft.error)}`]),
      ].join('\n'),
    );
    r.models
      .then(({ report, warnings }) => {
        for (const s of report.servers) {
          // The version, the model names and the error text are the model server's.
          const state = s.reachable
            ? `reachable${s.version ? ` (version ${one(s.version)})` : ''}; models present: ${one(s.present.join(', ')) || 'none'}; missing: ${one(s.missing.join(', ')) || 'none'}`
            : `NOT reachable: ${one(s.error ?? 'no answer')}`;
          say(`  ${s.provider}: ${one(s.url)} ${state}`);
          // Said here once, with its fix (the error text names it): the log does not repeat it.
          if (!s.reachable) {
            for (const code of ['connection', 'timeout']) shown.note(ShownProblems.modelServer(code, s.url));
          }
        }
        // An unreachable server is the line above; the warnings left are the missing models with their pull hints.
        const unreachable = report.servers.filter((s) => !s.reachable).map((s) => s.url);
        for (const w of warnings) {
          if (!unreachable.some((u) => w.includes(`at ${u} is not reachable`))) say(`  warning: ${one(w)}`);
        }
      })
      .catch((err: unknown) => say(`  warning: model check failed: ${one(String(err))}`))
      .finally(() => {
        for (const line of shown.release()) process.stderr.write(`${line}\n`);
      });
    let stopping = false;
    const stop = (signal: string): void => {
      if (stopping) return;
      stopping = true;
      console.log(`cc-orchestrator: ${signal} received, shutting down`);
      if (pretty) for (const line of shown.repeated()) process.stderr.write(`repeated: ${line}\n`);
      stopAll()
        .then(() => process.exit(0))
        .catch((err: unknown) => {
          const why = err instanceof Error ? (err.stack ?? err.message) : String(err);
          console.error(`cc-orchestrator: shutdown failed: ${inertText(why)}`);
          process.exit(1);
        });
    };
    process.on('SIGINT', () => stop('SIGINT'));
    process.on('SIGTERM', () => stop('SIGTERM'));
  });

program.parseAsync(process.argv).catch(fail);
