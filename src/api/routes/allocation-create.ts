/**
 * `POST /v1/allocations`: the body checked against the allocation field table, candidate nodes
 * turned from names into uuids (an unknown one is a 400), the allocation stored `allocating` and its
 * conductor told (`conductor/allocations.ts` does the rest). With `node` (1.58) it is a backfill, as
 * Ironic's `backfill_allocation`: the allocation is tied to that deployed node here and now, or
 * left in `error` with the reason and the request refused (400, or 409 for a node that another
 * instance or allocation holds).
 */
import { Conflict, InvalidParameter, NodeNotFound } from '../../common/errors.js';
import type { Store } from '../../db/connect.js';
import { ALLOCATION_FIELDS } from '../../nodes/allocation-fields.js';
import type { AllocationView } from '../../nodes/allocation-fields.js';
import { ALLOCATIONS_CHANNEL, AllocationNotFound, candidateUuids, claimNode, createAllocation, failAllocation, getAllocation } from '../../nodes/allocation-store.js';
import type { NewAllocation } from '../../nodes/allocation-store.js';
import { formatVersion } from '../../nodes/field-table.js';
import { getNode } from '../../nodes/node-store.js';
import type { NodeRow } from '../../nodes/node-store.js';
import { checkJsonField } from '../json-fields.js';
import type { JsonFieldLimits } from '../json-fields.js';
import { compareVersions } from '../microversions.js';
import type { Microversion } from '../microversions.js';

export interface CreateOptions {
  limits: JsonFieldLimits;
  /** How often, and how far apart, a backfill tries a node locked by a conductor's task. */
  retry: { attempts: number; intervalMs: number };
  /** The microversion that takes `node` (1.58). */
  backfillSince: Microversion;
}

/** Creates the allocation a request body asks for; resolves to it as stored (or as backfilled). */
export async function createAllocationRequest(store: Store, body: unknown, version: Microversion, options: CreateOptions): Promise<AllocationView> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new InvalidParameter('request body: expected a JSON object');
  const { node: nodeIdent, ...rest } = body as Record<string, unknown>;
  let node: NodeRow | undefined;
  if (nodeIdent !== undefined && nodeIdent !== null) {
    if (compareVersions(version, options.backfillSince) < 0) throw new InvalidParameter(`node: cannot set node when creating an allocation in this API version; it needs ${formatVersion(options.backfillSince)} or later`);
    if (typeof nodeIdent !== 'string' || nodeIdent === '') throw new InvalidParameter(`node: expected a node name or uuid, got ${JSON.stringify(nodeIdent)}`);
    try {
      node = await getNode(store, nodeIdent);
    } catch (err) {
      if (err instanceof NodeNotFound) throw new InvalidParameter(`node: node ${nodeIdent} could not be found`);
      throw err;
    }
  }
  const input = ALLOCATION_FIELDS.create(rest, version) as Omit<NewAllocation, 'resource_class'> & { resource_class?: string | null };
  if (input.extra !== undefined) checkJsonField('extra', input.extra, options.limits);
  // Ironic's test is for a true value: an empty resource class counts as none.
  const resourceClass = input.resource_class || (node ? node.resource_class : null);
  if (!resourceClass && !node) throw new InvalidParameter('resource_class: required when not backfilling (naming a node)');
  const values: NewAllocation = {
    ...input,
    resource_class: resourceClass ?? null,
    ...(input.candidate_nodes !== undefined ? { candidate_nodes: await candidateUuids(store, input.candidate_nodes) } : {}),
  };
  // Backfilling an instance without naming the allocation: its uuid is the instance's, as Ironic's.
  if (values.uuid === undefined && node?.instance_uuid) values.uuid = node.instance_uuid;
  const allocation = await createAllocation(store, values);
  if (node === undefined) {
    await store.notify(ALLOCATIONS_CHANNEL, allocation.uuid).catch(() => undefined);
    return allocation;
  }
  await backfill(store, allocation, node, options.retry);
  return getAllocation(store, allocation.uuid);
}

/** What keeps `node` from being backfilled into `allocation` (Ironic's `_do_backfill_allocation` checks), or null. */
function whyNotBackfill(allocation: AllocationView, node: NodeRow): string | null {
  const errors: string[] = [];
  if (node.provision_state !== 'active') errors.push(`Node must be in the "active" state, but the current state is "${node.provision_state}"`);
  if (allocation.resource_class && node.resource_class !== allocation.resource_class) {
    errors.push(`Resource class ${node.resource_class} does not match the requested resource class ${allocation.resource_class}`);
  }
  if (allocation.traits.length > 0 && !allocation.traits.every((t) => node.traits.includes(t))) {
    errors.push(`List of traits ${JSON.stringify(node.traits)} does not match the requested traits ${JSON.stringify(allocation.traits)}`);
  }
  if (allocation.candidate_nodes.length > 0 && !allocation.candidate_nodes.includes(node.uuid)) {
    errors.push(`Candidate nodes must be empty or contain the target node, but got ${JSON.stringify(allocation.candidate_nodes)}`);
  }
  return errors.length === 0 ? null : `Cannot backfill an allocation for node ${node.uuid}: ${errors.join('; ')}`;
}

/** Ties `allocation` to the deployed `node`, or marks it failed and throws why. */
async function backfill(store: Store, allocation: AllocationView, node: NodeRow, retry: CreateOptions['retry']): Promise<void> {
  const refuse = async (err: Error): Promise<never> => {
    await failAllocation(store, allocation.id, `Failed to process allocation ${allocation.uuid}: ${err.message}.`);
    throw err;
  };
  for (let attempt = 1; ; attempt += 1) {
    const current = await getNode(store, node.uuid).catch(() => undefined);
    if (current === undefined) return refuse(new InvalidParameter(`node: node ${node.uuid} could not be found`));
    const why = whyNotBackfill(allocation, current);
    if (why !== null) return refuse(new InvalidParameter(why));
    if (current.allocation_id !== null) return refuse(new Conflict(`node ${current.uuid} is associated with allocation ${current.allocation_uuid ?? current.allocation_id}`));
    if (current.instance_uuid !== null && current.instance_uuid !== allocation.uuid) return refuse(new Conflict(`node ${current.uuid} is associated with instance ${current.instance_uuid}`));
    let outcome;
    try {
      outcome = await claimNode(store, { allocation, node: current, conductorId: null, backfill: true });
    } catch (err) {
      return refuse(err as Error);
    }
    if (outcome === 'claimed') return;
    if (outcome === 'gone') throw new AllocationNotFound(allocation.uuid);
    if (outcome === 'locked' && attempt < retry.attempts) {
      await new Promise((resolve) => setTimeout(resolve, retry.intervalMs));
      continue;
    }
    if (outcome === 'locked') return refuse(new Conflict(`node ${current.uuid} is locked by ${current.reservation ?? 'a conductor'}, please retry later`));
    // Taken meanwhile: the next look says by what (a bounded number of times).
    if (attempt > retry.attempts + 3) return refuse(new Conflict(`node ${current.uuid} changed while being backfilled; retry`));
  }
}
