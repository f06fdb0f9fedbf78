/**
 * HTTP schemas of durable schedules (`/api/schedules`): a cron expression in a time zone or a fixed interval, and
 * what each firing does — create a task from a template (the fields of `POST /api/tasks`) or post an event to a
 * running task, such as a resident agent (the fields of `POST /api/tasks/:id/events`).
 */
import { z } from 'zod';
import { ClientIdSchema, PrintableIdSchema, TaskSettingsSchema } from '../messages.js';

/** What happens to occurrences missed while no server ran: fire the latest once, or skip them. */
export const MissedPolicySchema = z
  .enum(['run_once', 'skip'])
  .describe('Occurrences missed while no server ran: `run_once` fires the latest once, `skip` fires none.');

/** The task a firing creates (as `POST /api/tasks` takes it). */
export const ScheduleTaskTemplateSchema = z.strictObject({
  task_kind: PrintableIdSchema,
  prompt: z.string().min(1),
  client_id: ClientIdSchema.nullable().optional(),
  context: z.unknown().optional(),
  allowed_commands: z.array(PrintableIdSchema).optional(),
  settings: TaskSettingsSchema.optional(),
});

/**
 * The event a firing posts (as `POST /api/tasks/:id/events` takes it, with the task's id), or to the agent of a name
 * (as `POST /api/agents/:name/events`, resolved at each firing).
 */
export const ScheduleEventSchema = z.strictObject({
  task_id: PrintableIdSchema.optional().describe('The task that gets the event (or `agent`).'),
  agent: PrintableIdSchema.max(100)
    .optional()
    .describe(
      'Instead of `task_id`: the name of the agent (a task created with `name`), resolved when the schedule fires; none or several is a failed firing that says so.',
    ),
  client_id: ClientIdSchema.optional().describe('With `agent`: only the agents this computer reaches.'),
  name: PrintableIdSchema.max(100),
  data: z.unknown().optional(),
});

const when = {
  cron: z
    .string()
    .min(1)
    .max(200)
    .optional()
    .describe('Cron expression, 5 fields (or 6 with seconds first).'),
  timezone: z.string().min(1).max(100).optional().describe('IANA time zone of `cron` (default UTC).'),
  every_ms: z.number().int().min(1000).optional().describe('Fixed interval in ms, instead of `cron`.'),
};

/** Body of `POST /api/schedules`: exactly one of `cron` / `every_ms`, exactly one of `task` / `event`. */
export const CreateScheduleBodySchema = z
  .strictObject({
    id: PrintableIdSchema.max(100).optional().describe('Default: a random id.'),
    name: z.string().max(200).optional(),
    ...when,
    missed: MissedPolicySchema.optional().describe('Default `run_once`.'),
    paused: z.boolean().optional(),
    task: ScheduleTaskTemplateSchema.optional(),
    event: ScheduleEventSchema.optional(),
  })
  .superRefine((b, ctx) => {
    if ((b.cron === undefined) === (b.every_ms === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['cron'], message: 'give exactly one of cron and every_ms' });
    }
    if (b.timezone !== undefined && b.cron === undefined) {
      ctx.addIssue({ code: 'custom', path: ['timezone'], message: 'timezone applies to cron schedules' });
    }
    if ((b.task === undefined) === (b.event === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['task'], message: 'give exactly one of task and event' });
    }
    if (b.event !== undefined && (b.event.task_id === undefined) === (b.event.agent === undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: ['event', 'task_id'],
        message: 'give exactly one of task_id and agent',
      });
    }
    if (b.event?.client_id !== undefined && b.event.agent === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['event', 'client_id'],
        message: 'client_id narrows an agent name',
      });
    }
  });

/** A schedule as the API shows it. Times are epoch ms. */
export const HttpScheduleSchema = z.object({
  id: z.string(),
  name: z.string().optional(),
  cron: z.string().optional(),
  timezone: z.string().optional(),
  every_ms: z.number().optional(),
  missed: MissedPolicySchema,
  paused: z.boolean(),
  task: z.unknown().optional().describe('The template of the task each firing creates.'),
  event: z.unknown().optional().describe('The event each firing posts.'),
  created_by: z.string().optional(),
  created_at: z.number(),
  updated_at: z.number(),
  last_due_at: z.number().optional().describe('Due time of the last firing recorded (fired or skipped).'),
  next_due_at: z.number().optional().describe('Due time of the next firing (none while paused).'),
});

/** One recorded firing. */
export const HttpScheduleFiringSchema = z.object({
  schedule_id: z.string(),
  due_at: z.number(),
  fired_at: z.number(),
  status: z.enum(['pending', 'done', 'failed', 'skipped']),
  task_id: z.string().optional(),
  error: z.string().optional(),
});

/** Response of `GET /api/schedules`: every schedule, and the latest firings (newest first). */
export const SchedulesResponseSchema = z.object({
  schedules: z.array(HttpScheduleSchema),
  firings: z.array(HttpScheduleFiringSchema),
});

/** Response of the schedule routes that act on one schedule. */
export const ScheduleResponseSchema = z.object({ schedule: HttpScheduleSchema });

/** Response of `POST /api/schedules/:id/remove`. */
export const ScheduleRemovedResponseSchema = z.object({ removed: z.string() });

/** Body of the pause, resume and remove routes (empty, or `{}`). */
export const EmptyScheduleBodySchema = z.strictObject({});

/** A schedule as the API shows it (the type of {@link HttpScheduleSchema}). */
export type HttpSchedule = z.infer<typeof HttpScheduleSchema>;
