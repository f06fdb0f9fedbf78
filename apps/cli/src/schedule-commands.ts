/**
 * `ccagent schedules list | add | remove | pause | resume`: durable schedules on the running orchestrator (it fires
 * them, so every change goes through it; see docs/agents.md).
 */
import {
  ScheduleRemovedResponseSchema,
  ScheduleResponseSchema,
  SchedulesResponseSchema,
  type HttpSchedule,
} from '@ccagent/protocol';
import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';
import { CliError } from './errors.js';
import { HttpTaskSource } from './http-source.js';
import type { SecurityCommandDeps } from './security-commands.js';

/** What the commands need from the program (the same as the key commands). */
export type ScheduleCommandDeps = Omit<SecurityCommandDeps, 'dbPath'>;

const time = (ms: number | undefined): string =>
  ms === undefined
    ? '—'
    : new Date(ms)
        .toISOString()
        .replace('T', ' ')
        .replace(/\.\d+Z$/, 'Z');

const interval = (value: string): number => {
  const m = /^(\d+)(ms|s|m|h|d)?$/.exec(value.trim());
  if (!m) throw new InvalidArgumentError('expected a duration such as 90s, 10m, 2h or 1d');
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] ?? 's'] ?? 1000;
  return Number(m[1]) * unit;
};

const json = (value: string): unknown => {
  try {
    return JSON.parse(value) as unknown;
  } catch {
    throw new InvalidArgumentError('expected JSON');
  }
};

function describe(s: HttpSchedule): string {
  const when =
    s.cron !== undefined ? `cron "${s.cron}" ${s.timezone ?? 'UTC'}` : `every ${s.every_ms ?? 0} ms`;
  const task = s.task as { task_kind?: string } | undefined;
  const event = s.event as { task_id?: string; agent?: string; name?: string } | undefined;
  const to = event?.agent !== undefined ? `agent ${event.agent}` : (event?.task_id ?? '?');
  const what = task ? `new ${task.task_kind ?? '?'} task` : `event ${event?.name ?? '?'} → ${to}`;
  const state = s.paused ? 'paused' : `next ${time(s.next_due_at)}`;
  return `${s.id}  ${s.name ?? ''}  ${when}  ${what}  missed=${s.missed}  ${state}`;
}

/** Add the `schedules` command to `program`. */
export function addScheduleCommands(program: Command, d: ScheduleCommandDeps): void {
  const client = (what: string): HttpTaskSource => new HttpTaskSource(d.admin(what));
  const cmd = program
    .command('schedules')
    .description('durable schedules: each firing creates a task or posts an event to a resident agent');

  cmd
    .command('list')
    .description('every schedule with its next firing, and the latest firings')
    .action(async () => {
      const r = await client('schedules list').call(SchedulesResponseSchema, 'GET', '/api/schedules');
      if (d.json()) return d.printJson(r);
      for (const s of d.view(r.schedules)) d.print(`${describe(s)}\n`);
      if (r.schedules.length === 0) d.print('no schedules\n');
      const recent = d.view(r.firings.slice(0, 10));
      if (recent.length > 0) d.print('\nlatest firings:\n');
      for (const f of recent) {
        d.print(
          `  ${f.schedule_id}  due ${time(f.due_at)}  ${f.status}${f.task_id !== undefined ? `  ${f.task_id}` : ''}${f.error !== undefined ? `  ${f.error}` : ''}\n`,
        );
      }
    });

  cmd
    .command('add')
    .description(
      'add a schedule: --cron or --every, and --task-kind with --prompt or --event with --task or --agent',
    )
    .option('--id <id>', 'its id (default: a random one)')
    .option('--name <text>', 'a name for lists')
    .option('--cron <expr>', 'cron expression, 5 fields (6 with seconds first)')
    .option('--tz <zone>', 'IANA time zone of --cron (default UTC)')
    .option('--every <duration>', 'a fixed interval instead of --cron: 90s, 10m, 2h, 1d', interval)
    .option('--missed <policy>', 'occurrences missed while no server ran: run_once (default) or skip')
    .option('--paused', 'add it paused')
    .option('--task-kind <kind>', 'each firing creates a task of this kind')
    .option('--prompt <text>', 'the created task’s prompt')
    .option('--client <id>', 'the created task’s client')
    .option('--event <name>', 'each firing posts this event instead')
    .option('--task <id>', 'the task (a resident agent) that gets the event')
    .option('--agent <name>', 'instead of --task: the agent of that name, looked up at each firing')
    .option('--data <json>', 'the event’s data', json)
    .action(
      async (o: {
        id?: string;
        name?: string;
        cron?: string;
        tz?: string;
        every?: number;
        missed?: string;
        paused?: boolean;
        taskKind?: string;
        prompt?: string;
        client?: string;
        event?: string;
        task?: string;
        agent?: string;
        data?: unknown;
      }) => {
        if (o.taskKind !== undefined && o.prompt === undefined) {
          throw new CliError('usage', '--task-kind needs --prompt');
        }
        if (o.event !== undefined && (o.task === undefined) === (o.agent === undefined))
          throw new CliError('usage', '--event needs --task or --agent (one of them)');
        const target = o.agent !== undefined ? { agent: o.agent } : { task_id: o.task };
        const body = {
          ...(o.id !== undefined ? { id: o.id } : {}),
          ...(o.name !== undefined ? { name: o.name } : {}),
          ...(o.cron !== undefined ? { cron: o.cron } : {}),
          ...(o.tz !== undefined ? { timezone: o.tz } : {}),
          ...(o.every !== undefined ? { every_ms: o.every } : {}),
          ...(o.missed !== undefined ? { missed: o.missed } : {}),
          ...(o.paused ? { paused: true } : {}),
          ...(o.taskKind !== undefined
            ? {
                task: {
                  task_kind: o.taskKind,
                  prompt: o.prompt,
                  ...(o.client !== undefined ? { client_id: o.client } : {}),
                },
              }
            : {}),
          ...(o.event !== undefined
            ? { event: { ...target, name: o.event, ...(o.data !== undefined ? { data: o.data } : {}) } }
            : {}),
        };
        const r = await client('schedules add').call(ScheduleResponseSchema, 'POST', '/api/schedules', body);
        if (d.json()) return d.printJson(r);
        d.print(`added ${describe(d.view(r.schedule))}\n`);
      },
    );

  for (const [name, what] of [
    ['pause', 'it fires nothing until resumed'],
    ['resume', 'from now on; occurrences while paused are not fired'],
  ] as const) {
    cmd
      .command(name)
      .description(`${name} a schedule: ${what}`)
      .argument('<id>', 'schedule id')
      .action(async (id: string) => {
        const r = await client(`schedules ${name}`).call(
          ScheduleResponseSchema,
          'POST',
          `/api/schedules/${encodeURIComponent(id)}/${name}`,
          {},
        );
        if (d.json()) return d.printJson(r);
        d.print(`${describe(d.view(r.schedule))}\n`);
      });
  }

  cmd
    .command('remove')
    .description('remove a schedule and its firing records')
    .argument('<id>', 'schedule id')
    .action(async (id: string) => {
      const r = await client('schedules remove').call(
        ScheduleRemovedResponseSchema,
        'POST',
        `/api/schedules/${encodeURIComponent(id)}/remove`,
        {},
      );
      if (d.json()) return d.printJson(r);
      d.print(`removed ${d.view(r.removed)}\n`);
    });
}
