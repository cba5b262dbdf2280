/**
 * Ironic's protected nodes (API 1.48): an active or rescued node an operator marks `protected` may
 * not be undeployed, rebuilt or deleted until the mark is removed. The rules of a change to the
 * fields, and the refusal of the verbs, as Ironic's conductor has them. Pure.
 */
import { Conflict, InvalidParameter, IronringError } from '../common/errors.js';

/** The provision states in which a node may be made protected. */
export const PROTECTABLE_STATES: readonly string[] = ['active', 'rescue'];

/** Thrown for undeploy, rebuild or delete of a protected node (Ironic's `NodeProtected`). 403. */
export class NodeProtected extends IronringError {
  override readonly httpStatus = 403;
  constructor(readonly node: string) {
    super(`Node ${node} is protected and cannot be undeployed, rebuilt or deleted`);
  }
}

/** The node fields the rules read. */
export interface ProtectionFields {
  uuid: string;
  provision_state: string;
  protected: boolean;
  protected_reason: string | null;
  maintenance: boolean;
}

/**
 * Checks a patch's changes against a node (Ironic's `_check_update_protected`) and returns what it
 * implies besides: the reason cleared when protection or maintenance ends. Protecting a node outside
 * `active`/`rescue` is a 409, a reason without protection a 400.
 */
export function protectionChanges(node: ProtectionFields, changes: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const isProtected = changes.protected !== undefined ? changes.protected === true : node.protected;
  if (changes.protected !== undefined) {
    if (!isProtected) out.protected_reason = null;
    else if (!PROTECTABLE_STATES.includes(node.provision_state)) {
      throw new Conflict(`Node ${node.uuid} can only be made protected in provision states 'active' or 'rescue', the current state is '${node.provision_state}'`);
    }
  }
  const reason = out.protected_reason !== undefined ? null : (changes.protected_reason ?? node.protected_reason);
  if (changes.protected_reason !== undefined && reason !== null && reason !== '' && !isProtected) {
    throw new InvalidParameter('protected_reason: can only be set when protected is True');
  }
  if (changes.maintenance === false) out.maintenance_reason = null;
  return out;
}

/** Throws `NodeProtected` when `node` is protected: before an undeploy, a rebuild or a delete. */
export function refuseIfProtected(node: Pick<ProtectionFields, 'uuid' | 'protected'>): void {
  if (node.protected) throw new NodeProtected(node.uuid);
}
