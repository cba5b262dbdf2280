/**
 * Reading and writing allocations (Ironic's `/v1/allocations`, API 1.52), and the writes that tie an
 * allocation to a node. An allocation is found by uuid or name. Every write that touches a node is
 * one transaction that also says, in its WHERE clause, what the node must still be — free of any
 * allocation and instance, and unlocked (`reservation IS NULL`, so a conductor's task is never
 * overwritten) — so two conductors, or two allocations, can never take one node: the loser's UPDATE
 * matches no row (and `allocations.node_id` is unique besides). The allocating process itself (which
 * nodes, in which order, retries) is the conductor's (`conductor/allocations.ts`).
 */
import { randomUUID } from 'node:crypto';
import type { Transaction } from 'kysely';
import { Conflict, InvalidParameter, NotFound } from '../common/errors.js';
import { UUID_PATTERN } from '../common/uuid.js';
import type { Store } from '../db/connect.js';
import { uniqueViolation as engineUniqueViolation } from '../db/errors.js';
import { keysetPage } from '../db/keyset.js';
import type { Database, NodeRow } from '../db/schema.js';
import { ALLOCATION_FIELDS } from './allocation-fields.js';
import type { AllocationView } from './allocation-fields.js';

export type { AllocationView };

/**
 * PostgreSQL NOTIFY channel announcing a new allocation (payload: its uuid), so that its conductor
 * starts at once; conductors also poll (SQLite has no notifications).
 */
export const ALLOCATIONS_CHANNEL = 'ironring_allocations';

/** Thrown for an allocation uuid or name that names none (404, Ironic's `AllocationNotFound`). */
export class AllocationNotFound extends NotFound {
  constructor(readonly allocation: string) {
    super(`allocation ${allocation} could not be found`);
  }
}

/** Provision states in which a node's allocation may go while the node has a target (Ironic's `UPDATE_ALLOWED_STATES`). */
export const UPDATE_ALLOWED_STATES: readonly string[] = ['deploy failed', 'inspecting', 'inspect failed', 'inspect wait', 'clean failed', 'error', 'verifying', 'adopt failed', 'rescue failed', 'unrescue failed'];

/** Columns an allocation list may be sorted by: `id` (creation order, the default) and every plain field. */
export const ALLOCATION_SORT_KEYS = ['id', ...ALLOCATION_FIELDS.sortKeys()] as readonly string[];

function allocationQuery(store: Store | Transaction<Database>) {
  const db = 'db' in store ? store.db : store;
  return db.selectFrom('allocations').leftJoin('nodes', 'nodes.id', 'allocations.node_id').selectAll('allocations').select('nodes.uuid as node_uuid');
}

export interface AllocationFilters {
  /** Row id of the node it holds. */
  nodeId?: number;
  resourceClass?: string;
  state?: string;
  owner?: string;
}

export interface AllocationListQuery {
  limit: number;
  /** Uuid of the last allocation of the previous page. */
  marker?: string;
  /** One of `ALLOCATION_SORT_KEYS`. */
  sortKey: string;
  sortDir: 'asc' | 'desc';
  filters: AllocationFilters;
}

/** One page of allocations, in order (keyset pagination on (sort key, id), as ports). */
export async function listAllocations(store: Store, query: AllocationListQuery): Promise<AllocationView[]> {
  if (!ALLOCATION_SORT_KEYS.includes(query.sortKey)) throw new InvalidParameter(`sort_key: expected one of ${ALLOCATION_SORT_KEYS.join(', ')}, got ${JSON.stringify(query.sortKey)}`);
  const { filters } = query;
  let q = allocationQuery(store);
  if (filters.nodeId !== undefined) q = q.where('allocations.node_id', '=', filters.nodeId);
  if (filters.resourceClass !== undefined) q = q.where('allocations.resource_class', '=', filters.resourceClass);
  if (filters.state !== undefined) q = q.where('allocations.state', '=', filters.state);
  if (filters.owner !== undefined) q = q.where('allocations.owner', '=', filters.owner);
  const nullable = ['name', 'last_error', 'resource_class', 'owner'].includes(query.sortKey);
  const page = await keysetPage(store, {
    table: 'allocations',
    sortKey: query.sortKey,
    sortDir: query.sortDir,
    noun: 'allocation',
    ...(query.marker !== undefined ? { marker: query.marker } : {}),
    ...(nullable ? { nullAs: '' } : {}),
  });
  if (page.after) q = q.where(page.after);
  return q.orderBy(page.sortExpr, query.sortDir).orderBy('allocations.id', query.sortDir).limit(query.limit).execute();
}

/** The allocation with this uuid or name; `AllocationNotFound` otherwise. */
export async function getAllocation(store: Store, ident: string): Promise<AllocationView> {
  const column = UUID_PATTERN.test(ident) ? 'allocations.uuid' : 'allocations.name';
  const row = await allocationQuery(store).where(column, '=', column === 'allocations.uuid' ? ident.toLowerCase() : ident).executeTakeFirst();
  if (!row) throw new AllocationNotFound(ident);
  return row;
}

/** The allocation holding the node with row id `nodeId`, or undefined. */
export function allocationOfNode(store: Store, nodeId: number): Promise<AllocationView | undefined> {
  return allocationQuery(store).where('allocations.node_id', '=', nodeId).executeTakeFirst();
}

/** A new allocation's values, as the API checked them. */
export interface NewAllocation {
  uuid?: string;
  name?: string | null;
  resource_class: string | null;
  traits?: string[];
  candidate_nodes?: string[];
  extra?: Record<string, unknown>;
  owner?: string | null;
}

/** The 409 for a duplicate name or uuid, as Ironic's `AllocationDuplicateName` / `AllocationAlreadyExists`. */
function duplicate(err: unknown, values: { uuid?: string; name?: string | null | undefined }): unknown {
  const violation = engineUniqueViolation(err);
  if (!violation) return err;
  if (violation.columns.includes('name')) return new Conflict(`an allocation with name ${values.name} already exists`);
  return new Conflict(`an allocation with uuid ${values.uuid} already exists`);
}

/** Inserts an allocation in state `allocating`; a name or uuid in use → 409. */
export async function createAllocation(store: Store, values: NewAllocation): Promise<AllocationView> {
  const uuid = (values.uuid ?? randomUUID()).toLowerCase();
  try {
    const row = await store.db
      .insertInto('allocations')
      .values({
        uuid,
        name: values.name ?? null,
        state: 'allocating',
        resource_class: values.resource_class,
        owner: values.owner ?? null,
        traits: JSON.stringify(values.traits ?? []),
        candidate_nodes: JSON.stringify(values.candidate_nodes ?? []),
        extra: JSON.stringify(values.extra ?? {}),
        created_at: store.sqlNow(),
        updated_at: store.sqlNow(),
      })
      .returningAll()
      .executeTakeFirstOrThrow();
    return { ...row, node_uuid: null };
  } catch (err) {
    throw duplicate(err, { uuid, name: values.name });
  }
}

/** Changes an allocation's name and extra (PATCH); a name in use → 409. */
export async function updateAllocation(store: Store, allocation: AllocationView, changes: { name?: string | null; extra?: Record<string, unknown> }): Promise<AllocationView> {
  try {
    const res = await store.db
      .updateTable('allocations')
      .set({
        updated_at: store.sqlNow(),
        ...(changes.name !== undefined ? { name: changes.name } : {}),
        ...(changes.extra !== undefined ? { extra: JSON.stringify(changes.extra) } : {}),
      })
      .where('id', '=', allocation.id)
      .executeTakeFirst();
    if (res.numUpdatedRows === 0n) throw new AllocationNotFound(allocation.uuid);
  } catch (err) {
    throw duplicate(err, { name: changes.name });
  }
  return getAllocation(store, allocation.uuid);
}

/** Marks an allocation failed (state `error`, no node) with `reason`, unless it went or was fulfilled meanwhile. */
export async function failAllocation(store: Store, allocationId: number, reason: string): Promise<boolean> {
  const res = await store.db
    .updateTable('allocations')
    .set({ state: 'error', node_id: null, last_error: reason.slice(0, 4000), updated_at: store.sqlNow() })
    .where('id', '=', allocationId)
    .where('state', '=', 'allocating')
    .executeTakeFirst();
  return res.numUpdatedRows > 0n;
}

/** What a claim of a node for an allocation came to. */
export type ClaimOutcome =
  /** The node is the allocation's now. */
  | 'claimed'
  /** The node no longer qualifies (taken, changed state, in maintenance…): try another. */
  | 'taken'
  /** The node is locked by a conductor's task: it may qualify once the lock goes. */
  | 'locked'
  /** The allocation is no longer `allocating` (deleted, or fulfilled by another conductor). */
  | 'gone';

/** Rolls a claim's transaction back without an error reaching the caller. */
class ClaimRollback extends Error {
  constructor(readonly outcome: ClaimOutcome) {
    super(outcome);
  }
}

export interface ClaimTarget {
  allocation: Pick<AllocationView, 'id' | 'uuid' | 'traits' | 'resource_class'>;
  node: Pick<NodeRow, 'id' | 'uuid' | 'instance_info'>;
  /** The conductor claiming, recorded as the allocation's `conductor_affinity`. */
  conductorId: number | null;
  /**
   * Backfilling (1.58): the node is deployed (`active`) and may already carry the allocation's uuid
   * as its instance; otherwise it must be `available`, powered (known power state), not in
   * maintenance, with no instance.
   */
  backfill?: boolean;
}

/**
 * Claims a node for an allocation in one transaction: the node's UPDATE matches only while the node
 * still qualifies and is unlocked, and the allocation's only while it is still `allocating`; either
 * failing rolls both back. The node's `instance_uuid` becomes the allocation's uuid and its
 * `instance_info.traits` the allocation's traits, as Ironic's. Throws 409 when the allocation's
 * uuid is already another node's instance (Ironic's `InstanceAssociated`).
 */
export async function claimNode(store: Store, target: ClaimTarget): Promise<ClaimOutcome> {
  const { allocation, node } = target;
  try {
    await store.db.transaction().execute(async (trx) => {
      const instanceInfo = { ...node.instance_info, traits: allocation.traits };
      let update = trx
        .updateTable('nodes')
        .set({ allocation_id: allocation.id, instance_uuid: allocation.uuid, instance_info: JSON.stringify(instanceInfo), updated_at: store.sqlNow() })
        .where('id', '=', node.id)
        .where('allocation_id', 'is', null)
        .where('reservation', 'is', null);
      if (target.backfill) {
        update = update.where('provision_state', '=', 'active').where((eb) => eb.or([eb('instance_uuid', 'is', null), eb('instance_uuid', '=', allocation.uuid)]));
      } else {
        update = update
          .where('provision_state', '=', 'available')
          .where('maintenance', '=', false)
          .where('instance_uuid', 'is', null)
          .where('power_state', 'is not', null)
          .where('resource_class', '=', allocation.resource_class ?? '');
      }
      const claimed = await update.executeTakeFirst();
      if (claimed.numUpdatedRows === 0n) {
        const now = await trx.selectFrom('nodes').select('reservation').where('id', '=', node.id).executeTakeFirst();
        throw new ClaimRollback(now?.reservation ? 'locked' : 'taken');
      }
      const done = await trx
        .updateTable('allocations')
        .set({ node_id: node.id, state: 'active', last_error: null, conductor_affinity: target.conductorId, updated_at: store.sqlNow() })
        .where('id', '=', allocation.id)
        .where('state', '=', 'allocating')
        .where('node_id', 'is', null)
        .executeTakeFirst();
      if (done.numUpdatedRows === 0n) throw new ClaimRollback('gone');
    });
    return 'claimed';
  } catch (err) {
    if (err instanceof ClaimRollback) return err.outcome;
    const violation = engineUniqueViolation(err);
    if (violation?.columns.includes('instance_uuid')) {
      // Another conductor claimed a node for this very allocation first: it is no longer ours to do.
      const holder = await store.db.selectFrom('nodes').select('allocation_id').where('instance_uuid', '=', allocation.uuid).executeTakeFirst();
      if (holder?.allocation_id === allocation.id) return 'gone';
      throw new Conflict(`instance ${allocation.uuid} is already associated with a node, it cannot be associated with node ${node.uuid}`);
    }
    // allocations.node_id is unique: another allocation holds the node (a race the WHERE missed).
    if (violation) return 'taken';
    throw err;
  }
}

/**
 * Why a node's allocation may not go now (Ironic's `verify_node_for_deallocation`), or null: always
 * in maintenance; otherwise not while the node is on its way somewhere outside the states where
 * updates are allowed, nor while it is deployed (`active`).
 */
export function whyNotDeallocate(node: Pick<NodeRow, 'uuid' | 'maintenance' | 'provision_state' | 'target_provision_state'>, allocationUuid: string): string | null {
  if (node.maintenance) return null;
  if (node.target_provision_state && !UPDATE_ALLOWED_STATES.includes(node.provision_state)) {
    return `cannot remove allocation ${allocationUuid} for node ${node.uuid}, because the node is in state ${node.provision_state} where updates are not allowed (and maintenance mode is off)`;
  }
  if (node.provision_state === 'active') return `cannot remove allocation ${allocationUuid} for node ${node.uuid}, because the node is active (and maintenance mode is off)`;
  return null;
}

/**
 * Deletes an allocation, and frees its node (`allocation_id` and `instance_uuid` cleared, as
 * Ironic's `destroy_allocation`) in the same transaction, under Ironic's state rules (409 when the
 * node may not lose it now). A node locked by a conductor's task is retried `attempts` times, then
 * 409 (as Ironic's `NodeLocked`).
 */
export async function deleteAllocation(store: Store, ident: string, retry: { attempts: number; intervalMs: number } = { attempts: 3, intervalMs: 1000 }): Promise<void> {
  for (let attempt = 1; ; attempt += 1) {
    const outcome = await store.db.transaction().execute(async (trx): Promise<{ node: string; holder: string } | null> => {
      let select = trx.selectFrom('allocations').select(['id', 'uuid', 'node_id']).where(UUID_PATTERN.test(ident) ? 'uuid' : 'name', '=', UUID_PATTERN.test(ident) ? ident.toLowerCase() : ident);
      if (store.engine === 'postgres') select = select.forUpdate();
      const allocation = await select.executeTakeFirst();
      if (!allocation) throw new AllocationNotFound(ident);
      if (allocation.node_id !== null) {
        const node = await trx.selectFrom('nodes').select(['uuid', 'maintenance', 'provision_state', 'target_provision_state', 'reservation']).where('id', '=', allocation.node_id).executeTakeFirst();
        if (node?.reservation) return { node: node.uuid, holder: node.reservation };
        const why = node ? whyNotDeallocate(node, allocation.uuid) : null;
        if (why !== null) throw new Conflict(why);
        const freed = await trx
          .updateTable('nodes')
          .set({ allocation_id: null, instance_uuid: null, updated_at: store.sqlNow() })
          .where('allocation_id', '=', allocation.id)
          .where('reservation', 'is', null)
          .executeTakeFirst();
        if (node && freed.numUpdatedRows === 0n) {
          const again = await trx.selectFrom('nodes').select('reservation').where('id', '=', allocation.node_id).executeTakeFirst();
          if (again?.reservation) return { node: node.uuid, holder: again.reservation };
        }
      }
      await trx.deleteFrom('allocations').where('id', '=', allocation.id).execute();
      return null;
    });
    if (outcome === null) return;
    if (attempt >= retry.attempts) throw new Conflict(`node ${outcome.node} is locked by conductor ${outcome.holder}, please retry later`);
    await new Promise((resolve) => setTimeout(resolve, retry.intervalMs));
  }
}

/**
 * Deletes the allocation of a node whose conductor holds its lock (tear-down, or a PATCH clearing
 * `instance_uuid`): the node's `allocation_id` goes with it (foreign key), its `instance_uuid` is
 * the caller's to write. Returns whether there was one.
 */
export async function deleteAllocationOfNode(store: Store, nodeId: number): Promise<boolean> {
  const res = await store.db.deleteFrom('allocations').where('node_id', '=', nodeId).executeTakeFirst();
  return res.numDeletedRows > 0n;
}

/** The uuids of the nodes named by `idents` (names or uuids), in order; 400 naming the first unknown one. */
export async function candidateUuids(store: Store, idents: readonly string[]): Promise<string[]> {
  if (idents.length === 0) return [];
  const uuids = idents.filter((i) => UUID_PATTERN.test(i)).map((i) => i.toLowerCase());
  const names = idents.filter((i) => !UUID_PATTERN.test(i));
  const rows = await store.db
    .selectFrom('nodes')
    .select(['uuid', 'name'])
    .where((eb) => eb.or([...(uuids.length > 0 ? [eb('uuid', 'in', uuids)] : []), ...(names.length > 0 ? [eb('name', 'in', names)] : [])]))
    .execute();
  const byUuid = new Set(rows.map((r) => r.uuid));
  const byName = new Map(rows.filter((r) => r.name !== null).map((r) => [r.name!, r.uuid]));
  return [
    ...new Set(
      idents.map((i) => {
        const uuid = UUID_PATTERN.test(i) ? (byUuid.has(i.toLowerCase()) ? i.toLowerCase() : undefined) : byName.get(i);
        if (uuid === undefined) throw new InvalidParameter(`candidate_nodes: node ${i} could not be found`);
        return uuid;
      }),
    ),
  ];
}

/** The `allocating` allocations, oldest first (the conductors' pass). */
export function allocatingAllocations(store: Store, limit: number): Promise<Array<{ id: number; uuid: string }>> {
  return store.db.selectFrom('allocations').select(['id', 'uuid']).where('state', '=', 'allocating').orderBy('id').limit(limit).execute();
}
