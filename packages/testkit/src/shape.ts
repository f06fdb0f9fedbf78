/**
 * Structural comparison of JSON values: same field names, same JSON types, recursively. Used by the conformance
 * test to pin the fake server's payloads to recorded examples of the real APIs, so the double cannot drift.
 */

/** JSON type name of a value as the comparison sees it. */
export type JsonTypeName = 'string' | 'number' | 'boolean' | 'null' | 'array' | 'object' | 'undefined';

/** Options of `compareShape`. */
export interface CompareShapeOptions {
  /**
   * Dotted paths (array elements as `[]`) whose value is a free-form map in the real API (tool call arguments,
   * `model_info`): only their type is compared, not their keys. Example: `message.tool_calls[].function.arguments`.
   */
  opaquePaths?: readonly string[];
  /**
   * Dotted paths of fields the real API documents but may leave out (e.g. OpenAI's `choices[].logprobs`, which
   * Ollama's `/v1` omits): their absence is not a difference; when present their type must still match.
   */
  optionalPaths?: readonly string[];
  /** Dotted paths documented as "X or null" (e.g. OpenAI's `error.code`): `null` on either side is not a difference. */
  nullablePaths?: readonly string[];
}

/** JSON type of `value` (`array` and `null` distinguished from `object`). */
export function jsonTypeOf(value: unknown): JsonTypeName {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  const t = typeof value;
  if (t === 'string' || t === 'number' || t === 'boolean' || t === 'object') return t;
  return 'undefined';
}

/**
 * Lists every structural difference between `expected` (a recorded real payload) and `actual` (the fake's):
 * missing fields, extra fields and type mismatches, each as a readable line with its path. Empty = same shape.
 * Array elements of `actual` are each compared with the first element of `expected`.
 */
export function compareShape(
  expected: unknown,
  actual: unknown,
  options: CompareShapeOptions = {},
): string[] {
  const paths: Paths = {
    opaque: new Set(options.opaquePaths ?? []),
    optional: new Set(options.optionalPaths ?? []),
    nullable: new Set(options.nullablePaths ?? []),
  };
  const diffs: string[] = [];
  walk(expected, actual, '', paths, diffs);
  return diffs;
}

interface Paths {
  opaque: Set<string>;
  optional: Set<string>;
  nullable: Set<string>;
}

function walk(expected: unknown, actual: unknown, path: string, paths: Paths, diffs: string[]): void {
  const te = jsonTypeOf(expected);
  const ta = jsonTypeOf(actual);
  const where = path === '' ? '(root)' : path;
  if (te !== ta && !(paths.nullable.has(path) && (te === 'null' || ta === 'null'))) {
    diffs.push(`${where}: expected ${te}, got ${ta}`);
    return;
  }
  if (te !== ta || paths.opaque.has(path)) return;
  if (te === 'array') {
    const ea = expected as unknown[];
    const aa = actual as unknown[];
    if (ea.length === 0) return;
    for (const item of aa) walk(ea[0], item, `${path}[]`, paths, diffs);
    if (aa.length === 0) diffs.push(`${where}: expected a non-empty array like the example, got []`);
    return;
  }
  if (te === 'object') {
    const eo = expected as Record<string, unknown>;
    const ao = actual as Record<string, unknown>;
    for (const key of Object.keys(eo)) {
      const sub = path === '' ? key : `${path}.${key}`;
      if (!(key in ao)) {
        if (!paths.optional.has(sub)) diffs.push(`${sub}: missing (the real API sends it)`);
      } else walk(eo[key], ao[key], sub, paths, diffs);
    }
    for (const key of Object.keys(ao)) {
      if (!(key in eo))
        diffs.push(`${path === '' ? key : `${path}.${key}`}: extra field (not in the real API's payload)`);
    }
  }
}
