import { z } from 'zod';
import { MinecraftError } from '../minecraft-error.js';
import { MC_MESSAGE_CATALOG } from './catalog.js';

/** A JSON Schema document (draft 2020-12) as plain data. */
export type McJsonSchema = { [key: string]: unknown };

const cache = new Map<string, McJsonSchema>();

/**
 * The JSON Schema (draft 2020-12) of one message type, generated from its zod schema in `input` mode (what the
 * parsers accept: extra fields allowed). Throws {@link MinecraftError} (`invalid_config`) for an unknown type.
 */
export function mcMessageJsonSchema(type: string): McJsonSchema {
  const hit = cache.get(type);
  if (hit !== undefined) return hit;
  const entry = MC_MESSAGE_CATALOG.find((m) => m.type === type);
  if (entry === undefined)
    throw new MinecraftError('invalid_config', `no mod protocol message ${JSON.stringify(type)}`);
  const schema = {
    ...(z.toJSONSchema(entry.schema, {
      io: 'input',
      target: 'draft-2020-12',
      unrepresentable: 'any',
    }) as McJsonSchema),
    title: type,
    description: entry.description,
  };
  cache.set(type, schema);
  return schema;
}

/** JSON Schemas of every message, keyed by type. */
export function mcJsonSchemas(): Record<string, McJsonSchema> {
  return Object.fromEntries(MC_MESSAGE_CATALOG.map((m) => [m.type, mcMessageJsonSchema(m.type)]));
}
