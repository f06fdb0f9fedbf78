/**
 * Derive and validate the model's calls: argument values read by the same rules as a directive's fields.
 */
import type { CommandDescriptor } from '@ccagent/engine';
import { ARGS_FORMS, parseArgsValue, undecorate } from '../field-values.js';
import type { NativeCall } from './native-memory.js';

/** String arguments that name one value (a path, a shell command): their Markdown decoration is never part of it. */
const SINGLE_VALUE_KEYS = ['path', 'command'];

/**
 * A model's call with its argument values read by the same rules as a directive's fields (issue 31): a value the
 * command declares as an array of strings but given as one string (`"args": "`[\"add\"]`"`, `"args": "list"`) is
 * read as ARGS is — decoration removed, a JSON array or words —, and a `path` or `command` in inline code, emphasis
 * or quotes loses them. Each change is named in `notes`; a string that still is no list of words makes the call
 * `rejected` with the expected form (it would otherwise run with no arguments: the host ignores a string `args`).
 */
export function readCallArguments(
  call: { name: string; arguments: Record<string, unknown> },
  commands: readonly CommandDescriptor[],
  notes: string[],
): NativeCall {
  const schema = commands.find((c) => c.name === call.name)?.argsSchema;
  const props =
    schema && typeof schema === 'object' && !Array.isArray(schema) && typeof schema.properties === 'object'
      ? (schema.properties as Record<string, { type?: unknown; items?: { type?: unknown } } | undefined>)
      : {};
  const args: Record<string, unknown> = { ...call.arguments };
  for (const [key, value] of Object.entries(args)) {
    if (typeof value !== 'string') continue;
    const prop = props[key];
    if (prop?.type === 'array' && prop.items?.type === 'string') {
      const read = parseArgsValue(value);
      if (!read.ok) {
        return {
          name: call.name,
          arguments: call.arguments,
          rejected: `"${key}" must be an array of strings, e.g. ["add", "Buy milk"]; ${read.error.replace(ARGS_FORMS, 'an array')}`,
        };
      }
      args[key] = read.value;
      notes.push(`tolerated: ${call.name} "${key}" given as a string, read as ${JSON.stringify(read.value)}`);
    } else if (prop?.type === 'string' && SINGLE_VALUE_KEYS.includes(key) && undecorate(value) !== value) {
      args[key] = undecorate(value);
      notes.push(`tolerated: ${call.name} "${key}" ${JSON.stringify(value)} read without its decoration`);
    }
  }
  return { name: call.name, arguments: args };
}
