/**
 * Ironic's retired nodes (API 1.61): an operator marks a node `retired` (with an optional
 * `retired_reason`) so that it is not made available again — `provide` is refused, and the cleaning
 * after an undeploy ends in `manageable` instead of `available`. The rules of a change to the fields
 * and of the verbs, as Ironic's conductor has them. Pure.
 */
import { Conflict, InvalidParameter } from '../common/errors.js';

/** Thrown for `provide` of a retired node (Ironic's `NodeIsRetired`): 400, nothing changed. */
export class NodeIsRetired extends InvalidParameter {
  constructor(readonly op: string, readonly node: string) {
    super(`The ${op} operation can't be performed on node ${node} because it is retired`);
  }
}

/** The node fields the rules read. */
export interface RetirementFields {
  uuid: string;
  provision_state: string;
  retired: boolean;
  retired_reason: string | null;
}

/**
 * Checks a patch's changes against a node (Ironic's `_check_update_retired`) and returns what they
 * imply besides: the reason cleared when the node is no longer retired. Retiring an `available`
 * node is a 409 (it would be scheduled meanwhile: move it to `manageable` first), a reason without
 * retirement a 400.
 */
export function retirementChanges(node: RetirementFields, changes: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const retired = changes.retired !== undefined ? changes.retired === true : node.retired;
  if (changes.retired !== undefined) {
    if (!retired) out.retired_reason = null;
    else if (node.provision_state === 'available') {
      throw new Conflict(`Node ${node.uuid} can not have 'retired' set in provision state 'available', the current state is '${node.provision_state}'`);
    }
  }
  const reason = out.retired_reason !== undefined ? null : (changes.retired_reason ?? node.retired_reason);
  if (changes.retired_reason !== undefined && reason !== null && reason !== '' && !retired) {
    throw new InvalidParameter('retired_reason: can only be set when retired is True');
  }
  return out;
}

/** Throws `NodeIsRetired` when `node` is retired: before it is provided. */
export function refuseIfRetired(node: Pick<RetirementFields, 'uuid' | 'retired'>, op: string): void {
  if (node.retired) throw new NodeIsRetired(op, node.uuid);
}

/**
 * The event that ends a successful clean: `manage` for a manual clean (target `manageable`) or a
 * retired node's, `done` otherwise (Ironic's `do_node_clean` / `do_next_clean_step`).
 */
export function cleaningEndEvent(status: { state: string; target: string | null }, retired: boolean): 'done' | 'manage' {
  return (status.state === 'cleaning' && status.target === 'manageable') || retired ? 'manage' : 'done';
}
