/**
 * `ccagent kinds list | show | save | remove`: task kinds on the running orchestrator. The config file defines the
 * kinds of a fresh install; a kind saved here is stored in the orchestrator's database and wins over the file's kind
 * of the same name (`remove` brings the file's back). The orchestrator validates a definition with the config file's
 * schema; a refusal names the field and changes nothing (docs/configuration.md, "Task kinds at run time"). A kind's
 * own model per role is part of its definition (`models`: `{"planner": {"name": "qwen3:14b", "endpoint": "native"}}`).
 */
import { readFileSync } from 'node:fs';
import {
  TaskKindRemovedResponseSchema,
  TaskKindResponseSchema,
  TaskKindsResponseSchema,
  type HttpTaskKind,
} from '@ccagent/protocol';
import type { Command } from 'commander';
import { CliError } from './errors.js';
import { HttpTaskSource } from './http-source.js';
import type { ScheduleCommandDeps } from './schedule-commands.js';

type Kind = HttpTaskKind;

const SOURCE: Record<Kind['source'], string> = {
  config: 'config file',
  stored: 'saved',
  stored_over_config: 'saved, over the config file',
};

function line(k: Kind): string {
  const d = k.definition as { strategy?: unknown; description?: unknown };
  const rev = k.revision !== undefined ? ` r${k.revision}` : '';
  // `@<role>`: the role runs on another configured role's server (the kind's `models.<role>.endpoint`)
  const models = k.roles
    .map((r) => {
      const own = r.endpoint === (r.role === 'chat' ? 'native' : r.role);
      return `${r.role}=${r.model}${own ? '' : `@${r.endpoint}`}`;
    })
    .join(' ');
  return `${k.name}  ${String(d.strategy ?? '?')}  [${SOURCE[k.source]}${rev}]  ${models}${
    typeof d.description === 'string' ? `  ${d.description}` : ''
  }`;
}

/** Add the `kinds` command to `program`. */
export function addKindCommands(program: Command, d: ScheduleCommandDeps): void {
  const client = (what: string): HttpTaskSource => new HttpTaskSource(d.admin(what));
  const cmd = program
    .command('kinds')
    .description('task kinds: the config file’s, and those saved at run time (which win)');

  cmd
    .command('list')
    .description('every task kind in effect, with where it comes from and its models')
    .action(async () => {
      const r = await client('kinds list').call(TaskKindsResponseSchema, 'GET', '/api/task-kinds');
      if (d.json()) return d.printJson(r);
      for (const k of d.view(r.kinds)) d.print(`${line(k)}\n`);
    });

  cmd
    .command('show')
    .description('one kind’s whole definition (JSON)')
    .argument('<name>')
    .action(async (name: string) => {
      const r = await client('kinds show').call(TaskKindsResponseSchema, 'GET', '/api/task-kinds');
      const k = r.kinds.find((x) => x.name === name);
      if (!k) throw new CliError('not_found', `no task kind ${name}`);
      if (d.json()) return d.printJson(k);
      d.print(`${line(d.view(k))}\n${JSON.stringify(d.view(k.definition), null, 2)}\n`);
    });

  cmd
    .command('save')
    .description('save a kind (a new one, or a new definition that wins over the current one)')
    .argument('<name>')
    .option('--definition <json>', 'the definition as JSON (the config file’s taskKinds.<name> object)')
    .option('--file <path>', 'read the definition from a JSON file')
    .option('--expected-revision <n>', 'refuse when the stored revision is not this one (0: none stored yet)')
    .action(async (name: string, o: { definition?: string; file?: string; expectedRevision?: string }) => {
      if ((o.definition === undefined) === (o.file === undefined))
        throw new CliError('usage', 'give exactly one of --definition and --file');
      let definition: unknown;
      try {
        definition = JSON.parse(o.definition ?? readFileSync(o.file as string, 'utf8')) as unknown;
      } catch (err) {
        throw new CliError('usage', `the definition is not JSON: ${(err as Error).message}`);
      }
      const body: Record<string, unknown> = { definition };
      if (o.expectedRevision !== undefined) body.expected_revision = Number(o.expectedRevision);
      const r = await client('kinds save').call(
        TaskKindResponseSchema,
        'POST',
        `/api/task-kinds/${encodeURIComponent(name)}`,
        body,
      );
      if (d.json()) return d.printJson(r);
      d.print(`saved ${line(d.view(r.kind))}\n`);
      for (const w of r.warnings ?? []) d.print(`warning: ${d.view(w)}\n`);
    });

  cmd
    .command('remove')
    .description('remove a saved kind: the config file’s definition applies again (or the kind is gone)')
    .argument('<name>')
    .action(async (name: string) => {
      const r = await client('kinds remove').call(
        TaskKindRemovedResponseSchema,
        'POST',
        `/api/task-kinds/${encodeURIComponent(name)}/remove`,
        {},
      );
      if (d.json()) return d.printJson(r);
      d.print(
        `removed ${d.view(r.removed)}${r.source !== undefined ? ` (now: ${SOURCE[r.source]})` : ' (gone)'}\n`,
      );
    });
}
