/**
 * Prepare the prompt of a `minecraft_agent` model request in the task's layout, and fold the answered exchange into
 * the memory. `single`: the prompt file rendered into one message. `conversation`: one stable system message, the
 * conversation so far unchanged and one new message with the state and only the results since the message before,
 * so a model server's prompt cache covers everything earlier; it restarts from the task when it outgrew its budget.
 */
import type { ChatMessage } from '@ccagent/models';
import { z } from 'zod';
import type { InstanceInfo } from '../endpoint/mc-endpoint.js';
import { MC_ACTION_CATALOG } from '../protocol/catalog.js';
import { fillMcPrompt, loadMcPrompt, type McPrompt } from '../prompts.js';
import { modelJson } from './mc-model-call.js';
import type { McConversation, McMemory, McStep, ResultNote } from './mc-step.js';
import type { PlanMode } from './plan-modes.js';
import { resultLines, stateLine, vitalsText } from './turn-text.js';

export const MODE_RULES: Record<PlanMode, { rule: string; shape: string }> = {
  'low-level': {
    rule: 'Give every action of the whole task, in order.',
    shape: '{"actions": [ {"type": "goto", "x": 10, "y": 64, "z": 5}, {"type": "chat", "message": "hi"} ]}',
  },
  'high-level': {
    rule: 'Give the goals in words, in order; each goal is turned into actions later, when it is reached.',
    shape: '{"goals": [ {"goal": "walk to the tree at 10 64 5"}, {"goal": "collect 3 oak logs"} ]}',
  },
  hybrid: {
    rule:
      'Give the goals in order. Give a goal its "actions" when you already know them; leave "actions" out when the ' +
      'goal depends on what the player finds, and it is turned into actions when it is reached.',
    shape:
      '{"goals": [ {"goal": "walk to the tree", "actions": [ {"type": "goto", "x": 10, "y": 64, "z": 5} ]}, ' +
      '{"goal": "collect 3 logs"} ]}',
  },
};

/** An instance's action allow/deny lists as the prompt reads them (the service's `ActionPolicy`). */
export interface McActionLists {
  allow?: readonly string[] | undefined;
  deny?: readonly string[] | undefined;
}

/** Whether an instance's lists let an action type through (not denied; allowed, or no allow list). */
export function actionAllowedBy(lists: McActionLists): (type: string) => boolean {
  return (t) => lists.deny?.includes(t) !== true && (lists.allow === undefined || lists.allow.includes(t));
}

/**
 * The action catalogue as prompt text: the actions the instance's lists let through, then (when the lists refuse
 * any) one line naming the refused ones, so the model does not plan them. The executor still refuses them at the
 * last point, whatever the model answers. Without lists the text is the whole catalogue, as before.
 */
export function actionsText(lists?: McActionLists, instanceId?: string): string {
  const denied = (t: string): boolean => lists?.deny?.includes(t) === true;
  const notAllowed = (t: string): boolean => lists?.allow !== undefined && !lists.allow.includes(t);
  const usable = MC_ACTION_CATALOG.filter((a) => !denied(a.type) && !notAllowed(a.type));
  const lines = usable.map((a) => {
    const params = Object.keys((z.toJSONSchema(a.schema) as { properties: object }).properties).filter(
      (k) => k !== 'type',
    );
    return `- {"type": "${a.type}"${params.map((p) => `, "${p}": …`).join('')}}: ${a.description}`;
  });
  const refused = MC_ACTION_CATALOG.filter((a) => denied(a.type) || notAllowed(a.type)).map((a) => a.type);
  if (refused.length === 0) return lines.join('\n');
  const which = [
    ...(refused.some(denied) ? ['deny list'] : []),
    ...(refused.some(notAllowed) ? ['allow list'] : []),
  ].join(' and ');
  return [
    ...(lines.length > 0 ? lines : ['(none: this instance refuses every action)']),
    `Refused on instance ${instanceId ?? 'this instance'} (its ${which}), never plan them: ${refused.join(', ')}.`,
  ].join('\n');
}

function stateText(info: InstanceInfo | undefined): string {
  if (info === undefined) return 'unknown (the instance has not connected yet)';
  if (info.lastState === null) return `no state reported yet (instance ${info.status})`;
  const s = info.lastState;
  const inv = s.inventory.map((i) => `${i.item} x${i.count}`).join(', ') || 'empty';
  const p = s.position;
  return (
    `position ${p.x.toFixed(1)} ${p.y.toFixed(1)} ${p.z.toFixed(1)} in ${s.dimension}; health ${s.health}, ` +
    `hunger ${s.hunger}, saturation ${s.saturation}; game mode ${s.gameMode}; inventory: ${inv}`
  );
}

function resultsText(results: ResultNote[], none = 'none yet'): string {
  if (results.length === 0) return none;
  return results
    .slice(-12)
    .map((r) => `- ${JSON.stringify(r.action)} → ${r.ok ? 'done' : 'FAILED'}: ${JSON.stringify(r.detail)}`)
    .join('\n');
}

/** The variables every `single`-layout prompt file uses. */
export function baseVars(s: McStep, mem: McMemory): Record<string, string> {
  return {
    actions: s.actions,
    task: s.task.prompt,
    state: stateText(s.info),
    results: resultsText(mem.results),
  };
}

/** A request of a plan, re-plan or goal expansion, in both layouts. */
export interface McAsk {
  kind: 'mc_plan' | 'mc_replan' | 'mc_expand';
  single: { prompt: McPrompt; vars: Record<string, string>; extra?: string; logged?: McPrompt };
  request: string;
  schema: z.ZodType;
  format: Record<string, unknown>;
}

/** The stable system message of the `conversation` layout (role, actions, the task's mode and answer shape). */
function systemMessage(s: McStep): ChatMessage {
  const mode = MODE_RULES[s.settings.mode];
  const systemPrompt = loadMcPrompt('system');
  return {
    role: 'system',
    content: fillMcPrompt(systemPrompt.text, {
      actions: s.actions,
      mode: s.settings.mode,
      modeRule: mode.rule,
      shape: mode.shape,
    }),
  };
}

/** The conversation's new user message; `fresh`: it starts the conversation (the task and every result). */
function turnMessage(
  s: McStep,
  mem: McMemory,
  conv: McConversation,
  request: string,
  fresh: boolean,
): string {
  const since = conv.lastResultId === null ? -1 : mem.results.findIndex((r) => r.id === conv.lastResultId);
  const state = s.info?.lastState ?? null;
  const lines = (results: ResultNote[], none: string): string =>
    results.length === 0 ? none : resultLines(results.slice(-12));
  return fillMcPrompt(loadMcPrompt('turn').text, {
    head: fresh ? `TASK: ${s.task.prompt}\n\n` : '',
    state: state === null ? stateText(s.info) : stateLine(state, fresh ? null : (conv.vitals ?? null)),
    resultsTitle: fresh ? 'RESULTS SO FAR' : 'RESULTS SINCE THE LAST MESSAGE',
    results: fresh ? lines(mem.results, 'none yet') : lines(mem.results.slice(since + 1), 'none'),
    request,
  });
}

/**
 * One model request in the task's layout. `single`: the prompt file rendered into one message (plus `extra`, the
 * re-plan note). `conversation`: the system message, the conversation so far unchanged and one new message with
 * the state, the results since the last message and `request`; it restarts from the task when it outgrew its
 * budget. Returns the parsed answer and the memory with the exchange appended.
 */
export async function ask(s: McStep, mem: McMemory, call: McAsk): Promise<{ value: unknown; mem: McMemory }> {
  if (s.cfg.layout === 'single') {
    const messages: ChatMessage[] = [
      { role: 'user', content: fillMcPrompt(call.single.prompt.text, call.single.vars) },
    ];
    if (call.single.extra !== undefined) messages.push({ role: 'user', content: call.single.extra });
    const r = await modelJson(s, {
      kind: call.kind,
      messages,
      schema: call.schema,
      format: call.format,
      prompt: call.single.logged ?? call.single.prompt,
    });
    return { value: r.value, mem };
  }
  const system = systemMessage(s);
  const conv: McConversation = mem.conversation ?? { messages: [], lastResultId: null, restarts: 0 };
  let earlier = conv.messages;
  let user = turnMessage(s, mem, conv, call.request, earlier.length === 0);
  let restarted = false;
  const size = earlier.reduce((n, m) => n + m.content.length, 0) + user.length;
  if (earlier.length > 0 && size > s.cfg.conversationChars) {
    earlier = [];
    user = turnMessage(s, mem, conv, call.request, true);
    restarted = true;
  }
  const restarts = conv.restarts + (restarted ? 1 : 0);
  const r = await modelJson(s, {
    kind: call.kind,
    messages: [system, ...earlier, { role: 'user', content: user }],
    schema: call.schema,
    format: call.format,
    prompt: loadMcPrompt('turn'),
    layout: {
      conversation: true,
      turn: earlier.filter((m) => m.role === 'user').length + 1,
      restarted,
      restarts,
    },
  });
  const state = s.info?.lastState ?? null;
  return {
    value: r.value,
    mem: {
      ...mem,
      conversation: {
        messages: r.exchange.slice(1),
        lastResultId: mem.results.at(-1)?.id ?? null,
        restarts,
        vitals: state === null ? null : vitalsText(state),
      },
    },
  };
}
