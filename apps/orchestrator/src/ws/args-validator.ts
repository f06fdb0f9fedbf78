/**
 * Validation of `command_call` arguments against the JSON Schema a client registered for the command, with ajv
 * (JSON Schema 2020-12; a declared `$schema` is ignored so simple draft-07 schemas from Lua clients work too).
 * Compiled validators are cached by schema text, so thousands of clients registering the same commands compile
 * each schema once.
 */
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';

/** Largest accepted `args_schema`, JSON text bytes (a hostile client cannot make the server compile megabytes). */
export const MAX_SCHEMA_BYTES = 32 * 1024;
const CACHE_LIMIT = 2000;

/** Outcome of compiling or checking. */
export type CheckResult = { ok: true } | { ok: false; message: string };

/** Compiles and caches validators; one per orchestrator. */
export class ArgsValidator {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
  private readonly cache = new Map<string, ValidateFunction | string>();
  /**
   * The same schema object (a registered command's descriptor) → its validator, so the per-call check does not
   * re-serialise the schema to find it in `cache`.
   */
  private readonly bySchemaObject = new WeakMap<object, ValidateFunction | string>();

  /** Compile (or fetch) the validator of a schema; a string is why it cannot be compiled. */
  private get(schema: unknown): ValidateFunction | string {
    const isObject = typeof schema === 'object' && schema !== null;
    if (isObject) {
      const known = this.bySchemaObject.get(schema);
      if (known !== undefined) return known;
    }
    const compiled = this.byText(schema);
    if (isObject) this.bySchemaObject.set(schema, compiled);
    return compiled;
  }

  private byText(schema: unknown): ValidateFunction | string {
    let text: string;
    try {
      text = JSON.stringify(schema);
    } catch {
      return 'schema is not JSON';
    }
    const hit = this.cache.get(text);
    if (hit !== undefined) {
      // Refresh recency (Map keeps insertion order).
      this.cache.delete(text);
      this.cache.set(text, hit);
      return hit;
    }
    let compiled: ValidateFunction | string;
    if (Buffer.byteLength(text) > MAX_SCHEMA_BYTES) {
      compiled = `schema is larger than ${MAX_SCHEMA_BYTES} bytes`;
    } else {
      try {
        const { $schema: _ignored, ...rest } = schema as Record<string, unknown>;
        compiled = this.ajv.compile(rest);
      } catch (err) {
        compiled = err instanceof Error ? err.message : String(err);
      }
    }
    this.cache.set(text, compiled);
    if (this.cache.size > CACHE_LIMIT) {
      const oldest = this.cache.keys().next().value;
      if (oldest !== undefined) this.cache.delete(oldest);
    }
    return compiled;
  }

  /** Whether a schema can be compiled (checked when a client registers it). */
  checkSchema(schema: unknown): CheckResult {
    const v = this.get(schema);
    return typeof v === 'string' ? { ok: false, message: v } : { ok: true };
  }

  /** Validate `args` against `schema`; the message lists each problem with its JSON path. */
  validate(schema: unknown, args: unknown): CheckResult {
    const v = this.get(schema);
    if (typeof v === 'string') return { ok: false, message: `the command's args_schema is unusable: ${v}` };
    if (v(args)) return { ok: true };
    return { ok: false, message: formatErrors(v.errors ?? []) };
  }
}

function formatErrors(errors: ErrorObject[]): string {
  return errors
    .slice(0, 8)
    .map((e) => {
      const where = e.instancePath === '' ? '$' : `$${e.instancePath.replace(/\//g, '.')}`;
      const extra =
        e.keyword === 'additionalProperties'
          ? ` (${String((e.params as { additionalProperty?: string }).additionalProperty)})`
          : '';
      return `${where}: ${e.message ?? e.keyword}${extra}`;
    })
    .join('; ');
}
