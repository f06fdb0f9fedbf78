import type { OpenCallView, StepView } from './source.js';

/** The call id of a step-log record's tool call, if it has one. */
export function callIdOf(s: StepView): string | undefined {
  const c = s.toolCall;
  if (typeof c !== 'object' || c === null || Array.isArray(c)) return undefined;
  const id = (c as Record<string, unknown>).callId;
  return typeof id === 'string' ? id : undefined;
}

/**
 * Set `sentTo` on the records whose tool call went to a recorded client (`sentTo`: call id → client id, from the
 * calls of a task bound to no client). Records of other calls are left as they are. Returns `steps`.
 */
export function withSentTo(steps: StepView[], sentTo: ReadonlyMap<string, string>): StepView[] {
  if (sentTo.size === 0) return steps;
  for (const s of steps) {
    const id = callIdOf(s);
    const client = id !== undefined ? sentTo.get(id) : undefined;
    if (client !== undefined) s.sentTo = client;
  }
  return steps;
}

/** What both sources read of a task's command calls. */
export interface CallRouting {
  callId: string;
  command: string;
  status: string;
  sentTo?: string;
}

/**
 * Where the calls of a task went: call id → client for the calls that have one, and the open (pending) call of the
 * task, if any. For a task bound to a client both are empty: its calls go to that client.
 */
export function routingOf(calls: readonly CallRouting[]): {
  sentTo: Map<string, string>;
  openCall?: OpenCallView;
} {
  const sentTo = new Map<string, string>();
  let open: CallRouting | undefined;
  for (const c of calls) {
    if (c.sentTo !== undefined) sentTo.set(c.callId, c.sentTo);
    if (c.status === 'pending') open = c;
  }
  if (open === undefined) return { sentTo };
  const openCall: OpenCallView = { callId: open.callId, command: open.command };
  if (open.sentTo !== undefined) openCall.sentTo = open.sentTo;
  return { sentTo, openCall };
}
