/**
 * Reading and writing volume connectors and volume targets (Ironic's `/v1/volume`, API 1.32). Both
 * belong to a node, and Ironic changes or deletes them only under the node's lock and only while
 * the node is powered off (its conductor's `update_volume_*` and `destroy_volume_*`): here each such
 * write is one statement conditional on the node being unlocked and `power off` at that instant,
 * which gives the same guarantee without taking the lock. When the condition fails, one read says
 * why: the resource is gone (404), the node is locked (the caller retries, as a lock is waited
 * for), or its power state forbids the change (Ironic's `InvalidStateRequested`, 400). Creating
 * needs no such check, as in Ironic.
 */
import { randomUUID } from 'node:crypto';
import type { Selectable } from 'kysely';
import { Conflict, InvalidParameter, NotFound } from '../common/errors.js';
import type { Store } from '../db/connect.js';
import { isForeignKeyViolation, uniqueViolation } from '../db/errors.js';
import { keysetPage } from '../db/keyset.js';
import type { VolumeConnectorsTable, VolumeTargetsTable } from '../db/schema.js';

export type VolumeConnectorRow = Selectable<VolumeConnectorsTable> & { node_uuid: string };
export type VolumeTargetRow = Selectable<VolumeTargetsTable> & { node_uuid: string };

/** Thrown for a uuid that names no volume connector or target (404, Ironic's `Volume*NotFound`). */
export class VolumeNotFound extends NotFound {
  constructor(readonly noun: string, readonly uuid: string) {
    super(`${noun[0]!.toUpperCase()}${noun.slice(1)} ${uuid} could not be found.`);
  }
}

/**
 * Thrown for a change of a node's volume resources while the node is not powered off (400, in
 * Ironic's words: clients match `The requested action "volume connector update"…`).
 */
export class InvalidStateRequested extends InvalidParameter {
  constructor(readonly action: string, readonly node: string, readonly state: string | null) {
    // Ironic prints a node without a power state as Python's None.
    super(`The requested action "${action}" can not be performed on node "${node}" while it is in state "${state ?? 'None'}".`);
  }
}

export type VolumeTable = 'volume_connectors' | 'volume_targets';

/** What varies between the two resources; everything else is shared. */
export interface VolumeKind<T extends VolumeTable = VolumeTable> {
  table: T;
  /** `volume connector` or `volume target`, as Ironic's messages name them. */
  noun: string;
  /** The 409 for a unique violation on these columns (the uuid's is shared). */
  duplicate: (columns: readonly string[], values: Record<string, unknown>) => string | null;
}

export const VOLUME_CONNECTOR: VolumeKind<'volume_connectors'> = {
  table: 'volume_connectors',
  noun: 'volume connector',
  duplicate: (columns, v) => (columns.includes('connector_id') || columns.includes('type') ? `A volume connector with type ${String(v.type)} and connector ID ${String(v.connector_id)} already exists.` : null),
};

export const VOLUME_TARGET: VolumeKind<'volume_targets'> = {
  table: 'volume_targets',
  noun: 'volume target',
  duplicate: (columns, v) => (columns.includes('boot_index') ? `A volume target with boot index '${String(v.boot_index)}' for the same node already exists.` : null),
};

/** The row type of a kind. */
export type VolumeRowOf<K extends VolumeKind> = K extends VolumeKind<'volume_targets'> ? VolumeTargetRow : VolumeConnectorRow;

/**
 * The statements below name only columns both tables have (id, uuid, node_id, the timestamps), so
 * they are typed against one of them; `VolumeRowOf` gives callers the row of the kind they asked for.
 */
const tableOf = (kind: VolumeKind) => kind.table as 'volume_connectors';

function rows(store: Store, kind: VolumeKind) {
  const t = tableOf(kind);
  return store.db.selectFrom(t).innerJoin('nodes', 'nodes.id', `${t}.node_id`).selectAll(t).select('nodes.uuid as node_uuid');
}

export interface VolumeListQuery {
  limit: number;
  /** Uuid of the last row of the previous page. */
  marker?: string;
  /** Only the resources of this node (row id). */
  nodeId?: number;
  /** A column of the table, checked by the caller against the kind's sort keys. */
  sortKey: string;
  sortDir: 'asc' | 'desc';
}

/** One page of a kind's rows, in order (keyset pagination on (sort key, id), as chassis). */
export async function listVolumes<K extends VolumeKind>(store: Store, kind: K, query: VolumeListQuery): Promise<Array<VolumeRowOf<K>>> {
  const t = tableOf(kind);
  const page = await keysetPage(store, { table: kind.table, sortKey: query.sortKey, sortDir: query.sortDir, noun: kind.noun, ...(query.marker !== undefined ? { marker: query.marker } : {}) });
  let q = rows(store, kind);
  if (query.nodeId !== undefined) q = q.where(`${t}.node_id`, '=', query.nodeId);
  if (page.after) q = q.where(page.after);
  return (await q.orderBy(page.sortExpr, query.sortDir).orderBy(`${t}.id`, query.sortDir).limit(query.limit).execute()) as Array<VolumeRowOf<K>>;
}

/** The row with this uuid; `VolumeNotFound` otherwise. */
export async function getVolume<K extends VolumeKind>(store: Store, kind: K, uuid: string): Promise<VolumeRowOf<K>> {
  const row = await rows(store, kind).where(`${tableOf(kind)}.uuid`, '=', uuid.toLowerCase()).executeTakeFirst();
  if (!row) throw new VolumeNotFound(kind.noun, uuid);
  return row as VolumeRowOf<K>;
}

/** The 409 for a unique violation (uuid, or the kind's own pair); the error itself otherwise. */
function duplicateError(kind: VolumeKind, err: unknown, values: Record<string, unknown>): unknown {
  const violation = uniqueViolation(err);
  if (!violation) return err;
  const own = kind.duplicate(violation.columns, values);
  if (own !== null) return new Conflict(own);
  // SQLite names the columns; a PostgreSQL report without them is the uuid's, the one other key.
  return new Conflict(`A ${kind.noun} with UUID ${String(values.uuid)} already exists.`);
}

/** The 400 Ironic gives a node_uuid that names no node (its `InvalidInput`). */
export function unknownNodeOfVolume(uuid: string): InvalidParameter {
  return new InvalidParameter(`Invalid input for field/attribute node_uuid. Value: '${uuid}'. node_uuid: node ${uuid} could not be found`);
}

/**
 * Inserts a row (a fresh uuid unless given) for the node with row id `nodeId`; values are the
 * kind's checked columns (JSON columns as objects). 409 for a duplicate, 400 if the node went.
 */
export async function createVolume<K extends VolumeKind>(store: Store, kind: K, nodeId: number, nodeUuid: string, values: Record<string, unknown>): Promise<VolumeRowOf<K>> {
  const uuid = (typeof values.uuid === 'string' ? values.uuid : randomUUID()).toLowerCase();
  const columns = { ...jsonColumns(values), uuid, node_id: nodeId, created_at: store.sqlNow(), updated_at: store.sqlNow() };
  try {
    await store.db.insertInto(tableOf(kind)).values(columns as never).execute();
  } catch (err) {
    if (isForeignKeyViolation(err)) throw unknownNodeOfVolume(nodeUuid);
    throw duplicateError(kind, err, columns);
  }
  return getVolume(store, kind, uuid);
}

function jsonColumns(values: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(values)) out[k] = k === 'extra' || k === 'properties' ? JSON.stringify(v) : v;
  return out;
}

/** The outcome of a write that needs the node unlocked: done, or the holder to wait for. */
export type IdleWrite<T> = { done: T } | { locked: { node: string; holder: string } };

/** Row ids of the nodes a volume write may touch now: unlocked and powered off. */
const idleNodes = (store: Store) => store.db.selectFrom('nodes').select('id').where('reservation', 'is', null).where('power_state', '=', 'power off');

/** Tries of a conditional write whose refusal turned out stale (the node became writable between the two statements). */
const STALE_TRIES = 3;

/** The 409 when a node keeps changing under the write (locked and released between each try). */
const busy = (kind: VolumeKind, uuid: string) => new Conflict(`the node of ${kind.noun} ${uuid} kept changing; please retry`);

/**
 * After a conditional write that matched nothing: 404 if the row is gone, the holder when the node
 * is locked, `InvalidStateRequested` when it is not powered off; null when it has become writable
 * meanwhile (the caller tries again at once).
 */
async function whyNot(store: Store, kind: VolumeKind, uuid: string, nodeId: number | null, action: string): Promise<{ node: string; holder: string } | null> {
  const t = tableOf(kind);
  const row = await store.db.selectFrom(t).select('node_id').where('uuid', '=', uuid).executeTakeFirst();
  if (!row) throw new VolumeNotFound(kind.noun, uuid);
  const node = await store.db.selectFrom('nodes').select(['uuid', 'reservation', 'power_state']).where('id', '=', nodeId ?? row.node_id).executeTakeFirst();
  // Only a move to a node deleted meanwhile gets here (a row's own node takes its rows with it).
  if (!node) throw new InvalidParameter(`node_uuid: the node went while the ${kind.noun} was being changed`);
  if (node.reservation !== null) return { node: node.uuid, holder: node.reservation };
  if (node.power_state !== 'power off') throw new InvalidStateRequested(action, node.uuid, node.power_state);
  return null;
}

/**
 * Changes a row read before (checked columns; `nodeId` to move it) if its node — the new one when it moves, as
 * in Ironic — is unlocked and powered off; one try (see `IdleWrite`).
 */
export async function updateVolume<K extends VolumeKind>(store: Store, kind: K, current: VolumeRowOf<K>, nodeId: number, changes: Record<string, unknown>): Promise<IdleWrite<VolumeRowOf<K>>> {
  const { uuid } = current;
  const t = tableOf(kind);
  for (let i = 0; i < STALE_TRIES; i++) {
    let updated: { uuid: string } | undefined;
    try {
      updated = await store.db
        .updateTable(t)
        .set({ ...jsonColumns(changes), node_id: nodeId, updated_at: store.sqlNow() } as never)
        .where('uuid', '=', uuid)
        .where((eb) => eb.exists(idleNodes(store).where('id', '=', nodeId)))
        .returning('uuid')
        .executeTakeFirst();
    } catch (err) {
      if (isForeignKeyViolation(err)) throw new InvalidParameter(`node_uuid: the node went while the ${kind.noun} was being changed`);
      throw duplicateError(kind, err, { ...current, ...changes });
    }
    if (updated) return { done: await getVolume(store, kind, uuid) };
    const locked = await whyNot(store, kind, uuid, nodeId, `${kind.noun} update`);
    if (locked) return { locked };
  }
  throw busy(kind, uuid);
}

/** Deletes a row if its node is unlocked and powered off; one try (see `IdleWrite`). */
export async function deleteVolume(store: Store, kind: VolumeKind, uuid: string): Promise<IdleWrite<true>> {
  for (let i = 0; i < STALE_TRIES; i++) {
    const res = await store.db.deleteFrom(tableOf(kind)).where('uuid', '=', uuid).where('node_id', 'in', idleNodes(store)).executeTakeFirst();
    if (res.numDeletedRows > 0n) return { done: true };
    const locked = await whyNot(store, kind, uuid, null, `${kind.noun} deletion`);
    if (locked) return { locked };
  }
  throw busy(kind, uuid);
}
