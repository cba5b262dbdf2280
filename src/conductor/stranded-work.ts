/**
 * Work a conductor left behind (docs/takeover.md, "Work left behind"). A working state (`deploying`,
 * `deleting`, `verifying`…) runs in one conductor's memory, holding the node's lock; found unlocked,
 * nobody is doing it any more — its conductor died (kill -9, power loss) or stopped before it ended,
 * or this conductor restarted. The node's owner then either resumes it (re-runs the state's work,
 * which is idempotent for every state ironring implements) or, where resuming is not safe, fails
 * it the way Ironic's conductor does at start (`_fail_transient_state`): the state's `fail` event
 * with `last_error`, so the node rests in a state whose actions an operator can take.
 *
 * Not resumed, failed instead:
 * - a node in **maintenance**: nobody may touch its hardware on their own initiative;
 * - work that was **resumed once already and interrupted again** before it moved on: the work
 *   itself may be what kills conductors, and resuming it again would take the next one down too.
 */
import type { NodeTask } from '../cluster/task.js';
import type { Store } from '../db/connect.js';
import type { NodeRow } from '../nodes/node-store.js';
import { transition } from '../nodes/state-machine.js';
import { withAgentSession } from './agent-session.js';
import type { ProvisionStatus } from '../nodes/state-machine.js';
import type { ProvisionState, StableState } from '../nodes/states.js';

/** The history line a resume starts with; `lastResume` recognises it. */
export function resumeEvent(state: string, host: string): string {
  return `resuming "${state}" on conductor ${host}: the conductor doing it went away`;
}

/**
 * The conductor that last resumed the node's current working state, when nothing happened to the
 * node since (its last provisioning history entry is that resume); null otherwise. Clock-free: the
 * history's order, not timestamps of different processes, says what came last.
 */
async function lastResume(store: Store, node: Pick<NodeRow, 'id' | 'provision_state'>): Promise<string | null> {
  const last = await store.db
    .selectFrom('node_history')
    .select(['event', 'conductor'])
    .where('node_id', '=', node.id)
    .where('event_type', '=', 'provisioning')
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
  if (!last || !last.event.startsWith(`resuming "${node.provision_state}" `)) return null;
  return last.conductor ?? 'unknown';
}

/** Why the working state `node` was left in must be failed rather than resumed; null to resume it. */
export async function whyNotResume(store: Store, node: NodeRow): Promise<string | null> {
  if (node.maintenance) return 'the node is in maintenance';
  const by = await lastResume(store, node);
  if (by !== null) return `conductor ${by} had already resumed it, and was interrupted too before it moved on`;
  return null;
}

/** The `last_error` of work failed because it cannot be resumed. */
export function strandedError(state: string, host: string, why: string, to: string): string {
  return `"${state}" was interrupted (the conductor doing it went away) and conductor ${host} cannot resume it: ${why}; moved to "${to}"`;
}

/**
 * Fails the working state of the locked node in `task` (its `fail` event, as Ironic's conductor
 * does with work it cannot resume), with `last_error` and an ERROR history entry, and releases the
 * lock. Touches no hardware. Returns the state the node moved to.
 */
export async function failStrandedWork(task: NodeTask, host: string, why: string): Promise<ProvisionState> {
  try {
    const node = task.node;
    const status: ProvisionStatus = { state: node.provision_state as ProvisionState, target: node.target_provision_state as StableState | null };
    const next = transition(status, 'fail');
    const error = strandedError(status.state, host, why, next.state);
    await task.update(withAgentSession(node, { provision_state: next.state, target_provision_state: next.target, provision_updated_at: new Date(), last_error: error }));
    await task.recordHistory({ eventType: 'provisioning', severity: 'ERROR', event: `${status.state} → ${next.state}: ${error}` });
    return next.state;
  } finally {
    await task.release();
  }
}
