import { z } from 'zod';
import { MESSAGE_CATALOG } from './catalog.js';
import { PROTOCOL_VERSION } from './constants.js';
import { ProtocolError } from './protocol-error.js';

/** A JSON Schema document (draft 2020-12), as plain JSON data. */
export type JsonSchema = { [key: string]: unknown };

const DRAFT = 'https://json-schema.org/draft/2020-12/schema';

// Cross-field rules zod checks in code (superRefine) that plain JSON Schema can still express.
const CROSS_FIELD_RULES: Readonly<Record<string, JsonSchema>> = {
  command_result: {
    allOf: [
      { if: { properties: { ok: { const: true } }, required: ['ok'] }, then: { required: ['result'] } },
      { if: { properties: { ok: { const: false } }, required: ['ok'] }, then: { required: ['error'] } },
    ],
  },
};

const cache = new Map<string, JsonSchema>();

function build(type: string): JsonSchema {
  const entry = MESSAGE_CATALOG.find((m) => m.type === type);
  if (entry === undefined) throw new ProtocolError('unknown_type', `no message type ${JSON.stringify(type)}`);
  // `input` mode: optional fields are optional and extra fields are allowed, exactly what the parsers accept.
  const schema = z.toJSONSchema(entry.schema, { io: 'input', target: 'draft-2020-12' }) as JsonSchema;
  return { ...schema, title: type, description: entry.description, ...CROSS_FIELD_RULES[type] };
}

/**
 * The JSON Schema (draft 2020-12) of one message type, generated from its zod schema, with the `command_result`
 * ok/result/error rule expressed as `if`/`then`. Rules JSON Schema cannot say (a chunk's `index` < `count`) are
 * only in the description. Throws {@link ProtocolError} (`unknown_type`) for a type that does not exist.
 */
export function messageJsonSchema(type: string): JsonSchema {
  let schema = cache.get(type);
  if (schema === undefined) {
    schema = build(type);
    cache.set(type, schema);
  }
  return structuredClone(schema);
}

/**
 * One JSON Schema document for the whole protocol: every message under `$defs/<type>`, plus
 * `$defs/client_message` and `$defs/server_message` (a `oneOf` over what each side may send). The root accepts any
 * message of either direction.
 */
export function protocolJsonSchema(): JsonSchema {
  const defs: Record<string, JsonSchema> = {};
  for (const entry of MESSAGE_CATALOG) {
    const { $schema: _drop, ...schema } = messageJsonSchema(entry.type);
    defs[entry.type] = schema;
  }
  const refs = (exclude: string) =>
    MESSAGE_CATALOG.filter((m) => m.direction !== exclude).map((m) => ({ $ref: `#/$defs/${m.type}` }));
  defs['client_message'] = { oneOf: refs('server_to_client') };
  defs['server_message'] = { oneOf: refs('client_to_server') };
  return {
    $schema: DRAFT,
    $id: `https://ccagent.invalid/protocol/v${PROTOCOL_VERSION}.json`,
    title: `ccagent WebSocket protocol v${PROTOCOL_VERSION}`,
    anyOf: [{ $ref: '#/$defs/client_message' }, { $ref: '#/$defs/server_message' }],
    $defs: defs,
  };
}
