/**
 * HTTP schemas of run-time task kinds (`/api/task-kinds`): the kinds in effect (the config file's, and those an
 * operator saved, which win), and saving or removing one. A definition has the config file's task-kind shape
 * (docs/configuration.md, "Task kinds"); the orchestrator validates it with the same schema as the file.
 */
import { z } from 'zod';

/** A kind's definition: the config file's `taskKinds.<name>` object (validated by the orchestrator). */
export const TaskKindDefinitionSchema = z
  .record(z.string(), z.unknown())
  .describe(
    'The config file’s task-kind object: strategy, description, systemPrompt, allowedCommands, budgets, confirm, models (per role `name`, `provider`, `endpoint`) …',
  );

/** One kind as `GET /api/task-kinds` shows it. */
export const HttpTaskKindSchema = z.object({
  name: z.string(),
  source: z
    .enum(['config', 'stored', 'stored_over_config'])
    .describe(
      '`config`: the config file; `stored`: saved at run time; `stored_over_config`: saved, and it wins over the file’s.',
    ),
  definition: TaskKindDefinitionSchema.describe('The definition in effect, defaults filled in.'),
  config_definition: TaskKindDefinitionSchema.optional().describe(
    'The config file’s definition, when a stored one wins over it.',
  ),
  revision: z.number().int().optional().describe('The stored revision in effect (absent for a config kind).'),
  saved_at: z.number().optional(),
  saved_by: z.string().optional(),
  roles: z
    .array(
      z.object({
        role: z.string(),
        model: z.string(),
        provider: z.string(),
        endpoint: z
          .string()
          .describe('The configured role (`models.<endpoint>`) whose server serves the calls.'),
      }),
    )
    .describe(
      'The model roles the kind calls, with the model and provider of each: the kind’s own `models` over the configuration’s.',
    ),
  aliases: z.array(z.string()),
});

/** `GET /api/task-kinds`. */
export const TaskKindsResponseSchema = z.object({
  kinds: z.array(HttpTaskKindSchema),
  aliases: z.record(z.string(), z.string()),
  models: z
    .array(z.string())
    .optional()
    .describe('Model names a kind’s `models.<role>.name` may choose (the operator’s `limits.models`).'),
  endpoints: z
    .array(z.object({ endpoint: z.string(), provider: z.string(), url: z.string() }))
    .optional()
    .describe('The configured servers a kind’s `models.<role>.endpoint` may choose: one per model role.'),
});

/** Body of `POST /api/task-kinds/:name`: the whole definition (a new kind or a new revision of one). */
export const SaveTaskKindBodySchema = z.strictObject({
  definition: TaskKindDefinitionSchema,
  expected_revision: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe(
      'The stored revision the edit started from (0: none); another save since then is refused with 409.',
    ),
});

/** Body of `POST /api/task-kinds/:name/remove`. */
export const RemoveTaskKindBodySchema = z.strictObject({
  expected_revision: z.number().int().min(1).optional(),
});

/** Answer of a save. */
export const TaskKindResponseSchema = z.object({
  kind: HttpTaskKindSchema,
  warnings: z
    .array(z.string())
    .optional()
    .describe('Saved, but a model server did not answer, so the kind’s own models were not checked on it.'),
});

/** Answer of a removal: where the kind's definition now comes from (absent: the kind is gone). */
export const TaskKindRemovedResponseSchema = z.object({
  removed: z.string(),
  source: z.enum(['config', 'stored', 'stored_over_config']).optional(),
});

/** One kind as `GET /api/task-kinds` shows it. */
export type HttpTaskKind = z.infer<typeof HttpTaskKindSchema>;
