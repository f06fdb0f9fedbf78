import { Command } from 'commander';
import { defaultDbPath } from './paths.js';
import { ORCHESTRATOR_VERSION, startServer } from './server.js';

const program = new Command('cc-orchestrator').version(ORCHESTRATOR_VERSION);
program
  .command('serve')
  .description('Start the orchestrator')
  .option('--host <host>', 'address to bind', process.env.CCAGENT_HOST ?? '127.0.0.1')
  .option('--port <port>', 'port to listen on (0 = ephemeral)', process.env.CCAGENT_PORT ?? '7420')
  .option('--db <path>', 'SQLite file (default: per-user data dir)', process.env.CCAGENT_DB)
  .action(async (opts: { host: string; port: string; db?: string }) => {
    const dbPath = opts.db ?? defaultDbPath();
    const server = await startServer({ host: opts.host, port: Number(opts.port), dbPath });
    console.log(`cc-orchestrator ${ORCHESTRATOR_VERSION} listening on ${server.url} (db: ${dbPath})`);
    const stop = (): void => {
      void server.close().then(() => process.exit(0));
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
await program.parseAsync(process.argv);
