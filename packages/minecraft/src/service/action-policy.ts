/**
 * The seed's "future enhancement" of an allow/deny list of actions per instance. An action type refused by its
 * instance's list never reaches the mod: the executor fails it with `action_refused` and a message saying which list
 * refused it, which is what the model reads in its results (and re-plans from).
 */
import type { ActionType } from '../protocol/messages.js';
import { ActionPolicySchema, type ActionPolicy, type InstanceSeat } from './instance-seat.js';

export { ActionPolicySchema, type ActionPolicy };

/** Why an action type is refused on an instance, or null when it may run. */
export function policyRefusal(
  policy: ActionPolicy | undefined,
  instanceId: string,
  type: string,
): string | null {
  if (policy === undefined) return null;
  if (policy.deny?.includes(type as ActionType)) {
    return `the action ${type} is refused on instance ${instanceId} (its deny list); plan without it`;
  }
  if (policy.allow !== undefined && !policy.allow.includes(type as ActionType)) {
    return (
      `the action ${type} is refused on instance ${instanceId}: its allow list has only ` +
      `${policy.allow.join(', ') || 'no action'}; plan with those`
    );
  }
  return null;
}

/** The per-instance lists, read from and written to the {@link InstanceSeat}. */
export class ActionPolicies {
  constructor(private readonly seat: InstanceSeat) {}

  get(instanceId: string): ActionPolicy | undefined {
    return this.seat.policy(instanceId);
  }

  /** Resolves once the lists are saved (then the executor and the prompt read them). */
  set(instanceId: string, policy: ActionPolicy): Promise<void> {
    return this.seat.setPolicy(instanceId, policy);
  }

  /** Why `type` is refused on `instanceId`, or null. */
  refusal(instanceId: string, type: string): string | null {
    return policyRefusal(this.seat.policy(instanceId), instanceId, type);
  }
}
