import { Command } from 'commander';

/** Version of the `ccagent` command. */
export const CLI_VERSION = '0.1.0';

/** Builds the `ccagent` commander program (subcommands are added by the CLI issue). */
export function buildProgram(): Command {
  return new Command('ccagent').description('Inspect and control ccagent tasks').version(CLI_VERSION);
}
