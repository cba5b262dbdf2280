/**
 * JSON Patch (RFC 6902) for nodes, as the Ironic API accepts it: `add`, `replace` and `remove` on the
 * node's writable fields and inside its JSON fields (`/driver_info/ipmi_address`). Which fields
 * those are, and what they accept, is the node field table's (`node-fields.ts`). Pure: it takes the
 * node's current values and returns the columns to write, or throws a 400 naming the path.
 */
import type { NodeRow } from '../db/schema.js';
import { parsePatch, pathTokens } from './field-table.js';
import type { PatchOperation } from './field-table.js';
import { NODE_FIELDS } from './node-fields.js';
import { networkDataProblem } from './network-data.js';
import { InvalidParameter } from '../common/errors.js';

export { parsePatch, pathTokens };
export type { PatchOperation };

/**
 * The fields a patch changes, by name (each is the node's column of that name): JSON fields as whole
 * objects, the others as stored. The few the conductor reads by name are typed.
 */
export type NodeChanges = { [field: string]: unknown; driver?: string; name?: string | null; instance_uuid?: string | null };

/** Applies the operations to the node's current values; returns only what changed. */
export function applyNodePatch(node: NodeRow, ops: readonly PatchOperation[]): NodeChanges {
  const changes = NODE_FIELDS.applyPatch(node, ops) as NodeChanges;
  // network_data is checked as a whole, also when the patch reached inside it (`/network_data/links`).
  if (changes.network_data !== undefined) {
    const problem = networkDataProblem(changes.network_data);
    if (problem !== null) throw new InvalidParameter(problem);
  }
  return changes;
}
