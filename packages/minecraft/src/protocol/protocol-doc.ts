import { z } from 'zod';
import { MC_ACTION_CATALOG, MC_MESSAGE_CATALOG } from './catalog.js';
import {
  DEFAULT_ACTION_TIMEOUT_MS,
  DEFAULT_MC_PORT,
  INSTANCE_KEEP_MS,
  MAX_FRAME_BYTES,
  MC_FRAME_ERROR_CODES,
  MC_PROTOCOL_VERSION,
  RECONNECT_DELAY_MS,
  type McFrameErrorCode,
} from './constants.js';
import { mcMessageJsonSchema } from './json-schema.js';

/** Marks the start of the generated protocol section in docs/minecraft.md. */
export const MC_DOC_START = '<!-- generated: mod protocol (npm run docs:minecraft) -->';
/** Marks its end. */
export const MC_DOC_END = '<!-- end of generated mod protocol -->';

const ERROR_MEANING: Record<McFrameErrorCode, string> = {
  not_json: 'The frame is not JSON text.',
  frame_too_large: `The frame is over ${MAX_FRAME_BYTES} bytes.`,
  unknown_type: '`type` is missing or not a mod → backend message.',
  invalid_message:
    'A field is missing or has the wrong type (`path` names it), or the frame is not an object.',
  not_registered: 'Anything but `register` before `register`.',
  instance_mismatch: '`instanceId` differs from the one this connection registered.',
  version_unsupported:
    "`register.protocolVersion`'s major differs from the backend's; the connection closes.",
  unknown_action: '`action_complete`/`action_failed` for an action id never sent to this instance.',
  action_closed:
    '`action_complete`/`action_failed` for an action already closed (reported, timed out or stopped).',
  rate_limited:
    'The instance sent more frames than its rate limit (default 50/s, burst 200); the frame was dropped. At most one ' +
    'such error a second; 1,000 refused with no frame to spare in between close the connection (4008).',
};

function json(v: unknown): string {
  return JSON.stringify(v, null, 2);
}

/**
 * The generated protocol section of docs/minecraft.md (between {@link MC_DOC_START} and {@link MC_DOC_END}):
 * constants, every message with its example and JSON Schema, every action type, every error code.
 */
export function renderMcProtocolDoc(): string {
  const out: string[] = [MC_DOC_START, ''];
  out.push(
    `Protocol version \`${MC_PROTOCOL_VERSION}\`. Default endpoint \`ws://localhost:${DEFAULT_MC_PORT}\`. ` +
      `One JSON object per text frame, at most ${MAX_FRAME_BYTES} bytes. A mod reconnects ${RECONNECT_DELAY_MS / 1000} s ` +
      `after losing the connection; the backend keeps a disconnected instance's state for ${INSTANCE_KEEP_MS / 1000} s, ` +
      `then declares it dead (its open action fails). An action not reported within its timeout ` +
      `(default ${DEFAULT_ACTION_TIMEOUT_MS / 1000} s) is failed and the task moves on.`,
    '',
    '### Messages',
    '',
    '| type | direction | |',
    '| --- | --- | --- |',
  );
  for (const m of MC_MESSAGE_CATALOG) {
    out.push(
      `| [\`${m.type}\`](#mc-${m.type.replace(/_/g, '-')}) | ${m.direction} | ${(m.description.split('. ')[0] ?? '').replace(/\.$/, '').replace(/\|/g, '\\|')}. |`,
    );
  }
  out.push('');
  for (const m of MC_MESSAGE_CATALOG) {
    out.push(
      `#### <a id="mc-${m.type.replace(/_/g, '-')}"></a>\`${m.type}\` (${m.direction})`,
      '',
      m.description,
      '',
      '```json',
      JSON.stringify(m.example),
      '```',
      '',
      '<details><summary>JSON Schema</summary>',
      '',
      '```json',
      json(mcMessageJsonSchema(m.type)),
      '```',
      '',
      '</details>',
      '',
    );
  }
  out.push(
    '### Actions',
    '',
    'Every `execute_action.action` has an `id` (string) and one of these shapes:',
    '',
  );
  out.push('| type | parameters | what the mod does |', '| --- | --- | --- |');
  for (const a of MC_ACTION_CATALOG) {
    const schema = z.toJSONSchema(a.schema, { io: 'input' }) as {
      properties: Record<string, { type?: string }>;
    };
    const params = Object.entries(schema.properties)
      .filter(([k]) => k !== 'type')
      .map(([k, v]) => `\`${k}\` ${v.type ?? ''}`.trim())
      .join(', ');
    out.push(`| \`${a.type}\` | ${params} | ${a.description} |`);
  }
  out.push('', '### Error codes of the `error` frame', '', '| code | meaning |', '| --- | --- |');
  for (const code of MC_FRAME_ERROR_CODES) out.push(`| \`${code}\` | ${ERROR_MEANING[code]} |`);
  out.push('', MC_DOC_END);
  return out.join('\n');
}
