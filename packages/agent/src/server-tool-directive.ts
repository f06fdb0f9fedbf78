/**
 * The planner's `TOOL` directive: how a planner/executor task calls a server-side tool (a command the engine offers
 * with `origin: 'server'`). The planner's system prompt lists the tools the task may call (prompt `planner-tools`);
 * a reply whose first directive is `TOOL` names one and gives its arguments as a JSON object, which becomes one
 * tool call as written (no executor model: the arguments are already structured; the tool's schema is checked by
 * the engine's registry before it runs).
 */
import type { CommandDescriptor, Decision, JsonValue, StepRecord, Task } from '@ccagent/engine';
import { extractJsonObject } from './json-extract.js';
import { fillTemplate, loadPrompt } from './prompts.js';
import type { CommandCall } from './tools.js';

/** A parsed `TOOL` directive: the tool's name and its arguments, or why it cannot be used. */
export type ToolDirective =
  { ok: true; name: string; args: Record<string, JsonValue> } | { ok: false; name?: string; error: string };

/** The server-side tools among the commands a task may call now. */
export function serverToolsOf(commands: readonly CommandDescriptor[]): CommandDescriptor[] {
  return commands.filter((c) => c.origin === 'server');
}

/** `system` with the `planner-tools` section listing `tools` appended; `system` unchanged when there are none. */
export function withServerToolSection(system: string, tools: readonly CommandDescriptor[]): string {
  if (tools.length === 0) return system;
  const list = tools
    .map((t) => {
      const schema = t.argsSchema as
        { properties?: Record<string, unknown>; required?: string[] } | undefined;
      const params = schema?.properties ? JSON.stringify(schema.properties) : '{}';
      const required = schema?.required?.length ? ` required: ${schema.required.join(', ')}` : '';
      return `- ${t.name}: ${t.description ?? t.name} parameters: ${params}${required}`;
    })
    .join('\n');
  return `${system}\n\n${fillTemplate(loadPrompt('planner-tools').text, { tools: list })}`;
}

const HEADER = /^\s*(?:#{1,6}\s*)?[*_`]*\s*(?:directive\s*:\s*)?tool\s*:?\s*[*_`]*\s*$/i;
const OTHER_HEADER =
  /^\s*(?:#{1,6}\s*)?[*_`]*\s*(?:directive\s*:\s*)?(?:ask[ _-]?user|write[ _-]?file|run|shell|done)\s*:?\s*[*_`]*\s*$/i;
const FIELD = /^\s*[-*]?\s*[*_`]*(NAME|ARGS)[*_`]*\s*:\s*[*_`]*\s*(.*)$/i;

/**
 * The reply's `TOOL` directive when it is the reply's first directive (a `TOOL` header line before any other
 * directive's); undefined when there is none, so the reply goes to the directive parser as before.
 */
export function parseToolDirective(reply: string): ToolDirective | undefined {
  const lines = reply.replace(/\r\n/g, '\n').split('\n');
  let start = -1;
  let fenced = false;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    if (/^\s*(`{3,}|~{3,})/.test(line)) fenced = !fenced;
    if (fenced) continue;
    if (OTHER_HEADER.test(line)) return undefined;
    if (HEADER.test(line)) {
      start = i;
      break;
    }
  }
  if (start < 0) return undefined;
  let name: string | undefined;
  let argsText: string | undefined;
  for (let i = start + 1; i < lines.length; i++) {
    const line = lines[i] ?? '';
    if (OTHER_HEADER.test(line) || HEADER.test(line)) break;
    const f = FIELD.exec(line);
    if (!f) continue;
    const key = (f[1] ?? '').toUpperCase();
    const value = (f[2] ?? '').trim();
    // Decoration around the name only (`**get_time**`, "get_time"): underscores inside it are part of it.
    if (key === 'NAME' && name === undefined) name = value.replace(/^[*_`"'\s]+|[*_`"'\s]+$/g, '');
    if (key === 'ARGS' && argsText === undefined) {
      // The JSON object may continue on the following lines (or sit in a code fence below the field).
      const rest = [value];
      for (
        let j = i + 1;
        j < lines.length && !FIELD.test(lines[j] ?? '') && !OTHER_HEADER.test(lines[j] ?? '');
        j++
      ) {
        rest.push(lines[j] ?? '');
      }
      argsText = rest.join('\n').trim();
    }
  }
  if (!name) return { ok: false, error: 'TOOL needs a NAME: the server tool to call' };
  if (argsText === undefined || argsText === '' || argsText === '{}') return { ok: true, name, args: {} };
  const json = extractJsonObject(argsText);
  const value: unknown = json.ok ? json.value.value : undefined;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return {
      ok: false,
      name,
      error: `ARGS of TOOL ${name} must be one JSON object, e.g. {"format": "iso"}; got ${JSON.stringify(argsText.slice(0, 120))}`,
    };
  }
  return { ok: true, name, args: value as Record<string, JsonValue> };
}

/** What {@link decideToolDirective} needs of the planner/executor strategy's step. */
export interface ToolDirectiveStep {
  readonly task: Task;
  mem: { lastDirective: string | null };
  log(record: StepRecord): Promise<unknown>;
  bounce(code: string, reason: string): Promise<Decision>;
  toolCall(
    calls: readonly CommandCall[],
    origin: { from: 'tool'; call: CommandCall },
    message: string,
  ): Promise<Decision>;
}

/**
 * Carry out a parsed `TOOL` directive: logged with the planner's call, bounced to the planner when it cannot be used
 * (unreadable, not a server tool the task may call), else one tool call exactly as written.
 */
export async function decideToolDirective(
  s: ToolDirectiveStep,
  d: ToolDirective,
  record: StepRecord,
  available: readonly CommandDescriptor[],
): Promise<Decision> {
  await s.log({
    ...record,
    directive: {
      kind: 'TOOL',
      ...(d.name !== undefined ? { name: d.name } : {}),
      ...(d.ok ? { args: d.args } : {}),
    },
    ...(d.ok ? {} : { validationErrors: [d.error] }),
  });
  if (!d.ok) return s.bounce('directive_invalid_field', d.error);
  s.mem.lastDirective = `TOOL ${d.name} ${JSON.stringify(d.args)}`;
  const tools = serverToolsOf(available).map((t) => t.name);
  if (!tools.includes(d.name)) {
    const allowed = s.task.allowedCommands;
    const code = allowed.length > 0 && !allowed.includes(d.name) ? 'not_allowed' : 'not_available';
    return s.bounce(
      code,
      `"${d.name}" is not a server tool this task may call (the server tools: ${tools.join(', ') || 'none'})`,
    );
  }
  const call: CommandCall = { command: d.name, args: d.args };
  return s.toolCall([call], { from: 'tool', call }, `TOOL ${d.name}`);
}
