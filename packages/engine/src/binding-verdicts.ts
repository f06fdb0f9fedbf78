/**
 * How `TaskStore.bindCall` judges a call, as pure functions every store applies to what it read inside its write
 * (the in-memory store here, SQLite and PostgreSQL through `@ccagent/store-core`): the store tries its binding, reads
 * the call back, asks the verdict and only persists. One copy, so no two stores judge the same call differently.
 */
import { EngineError } from './engine-error.js';

/** `TaskStore.bindCall`'s client id: a non-empty string, else the port's `invalid_input` (checked before writing). */
export function bindClientRefusal(clientId: unknown): EngineError | undefined {
  if (typeof clientId !== 'string' || clientId.length === 0) {
    return new EngineError('invalid_input', 'clientId must be a non-empty string');
  }
  return undefined;
}

/**
 * The outcome of `TaskStore.bindCall` once the store tried to bind (`bound`: its conditional UPDATE of a pending,
 * unbound call changed the row) and read the call back (`status`, undefined when there is no such call): the refusal
 * to throw — `unknown_call`, or `call_closed` for a call no longer pending — or undefined, when the call (bound now or
 * before, the first binding holds) is to be returned.
 */
export function bindingRefusal(
  callId: string,
  bound: boolean,
  status: string | undefined,
): EngineError | undefined {
  if (status === undefined) return new EngineError('unknown_call', `no command call ${callId}`);
  if (!bound && status !== 'pending') {
    return new EngineError('call_closed', `command call ${callId} is already ${status}`, {
      details: { callId, status },
    });
  }
  return undefined;
}
