/**
 * Reading and writing port groups (Ironic's `/v1/portgroups`): ports of one node bonded together.
 * A group is found by uuid or name; its node by uuid. Ports name their group by a foreign key, so a
 * group with ports is never deleted however two requests interleave; this module turns the
 * engines' violations into Ironic's errors.
 */
import { randomUUID } from 'node:crypto';
import { InvalidParameter, NodeNotFound, NotFound } from '../common/errors.js';
import { UUID_PATTERN } from '../common/uuid.js';
import type { Store } from '../db/connect.js';
import { isForeignKeyViolation } from '../db/errors.js';
import { keysetPage } from '../db/keyset.js';
import { uniqueViolation } from './node-store.js';
import { PORTGROUP_FIELDS } from './portgroup-fields.js';
import type { PortgroupRow } from './portgroup-fields.js';
import { normalizeMac } from './port-store.js';

export type { PortgroupRow };

/** A new group's mode when none is given (Ironic's `[DEFAULT] default_portgroup_mode`). */
export const DEFAULT_PORTGROUP_MODE = 'active-backup';

/** Thrown for a port group uuid or name that names no group (404, Ironic's `PortgroupNotFound`). */
export class PortgroupNotFound extends NotFound {
  constructor(readonly portgroup: string) {
    super(`portgroup ${portgroup} could not be found`);
  }
}

/** Thrown when deleting (or moving) a group that ports still belong to (400, Ironic's `PortgroupNotEmpty`). */
export class PortgroupNotEmpty extends InvalidParameter {
  constructor(readonly portgroup: string) {
    super(`cannot complete the requested action because portgroup ${portgroup} contains ports`);
  }
}

/** Columns a group list may be sorted by: `id` (creation order, the default) and every plain field. */
export const PORTGROUP_SORT_KEYS = ['id', ...PORTGROUP_FIELDS.sortKeys().filter((k) => k !== 'node_uuid')] as readonly string[];

function portgroupQuery(store: Store) {
  return store.db.selectFrom('portgroups').innerJoin('nodes', 'nodes.id', 'portgroups.node_id').selectAll('portgroups').select('nodes.uuid as node_uuid');
}

export interface PortgroupListQuery {
  limit: number;
  /** Uuid of the last group of the previous page. */
  marker?: string;
  /** One of `PORTGROUP_SORT_KEYS`. */
  sortKey: string;
  sortDir: 'asc' | 'desc';
  nodeId?: number;
  address?: string;
}

/** One page of port groups, in order (keyset pagination on (sort key, id), as ports). */
export async function listPortgroups(store: Store, query: PortgroupListQuery): Promise<PortgroupRow[]> {
  if (!PORTGROUP_SORT_KEYS.includes(query.sortKey)) throw new InvalidParameter(`sort_key: expected one of ${PORTGROUP_SORT_KEYS.join(', ')}, got ${JSON.stringify(query.sortKey)}`);
  let q = portgroupQuery(store);
  if (query.nodeId !== undefined) q = q.where('portgroups.node_id', '=', query.nodeId);
  if (query.address !== undefined) q = q.where('portgroups.address', '=', normalizeMac(query.address));
  const page = await keysetPage(store, {
    table: 'portgroups',
    sortKey: query.sortKey,
    sortDir: query.sortDir,
    noun: 'portgroup',
    ...(query.marker !== undefined ? { marker: query.marker } : {}),
    // Nullable text columns: NULL sorts lowest.
    ...(['name', 'address', 'mode'].includes(query.sortKey) ? { nullAs: '' } : {}),
  });
  if (page.after) q = q.where(page.after);
  return q.orderBy(page.sortExpr, query.sortDir).orderBy('portgroups.id', query.sortDir).limit(query.limit).execute();
}

/** The group with this uuid or name; `PortgroupNotFound` otherwise. */
export async function getPortgroup(store: Store, ident: string): Promise<PortgroupRow> {
  const q = UUID_PATTERN.test(ident) ? portgroupQuery(store).where('portgroups.uuid', '=', ident.toLowerCase()) : portgroupQuery(store).where('portgroups.name', '=', ident);
  const row = await q.executeTakeFirst();
  if (!row) throw new PortgroupNotFound(ident);
  return row;
}

/**
 * The group a port is to belong to, by uuid: 400 when there is none, as Ironic answers its
 * `PortgroupNotFound` on port requests (the port, not the group, is the resource asked for).
 */
export async function portgroupForPort(store: Store, uuid: string): Promise<PortgroupRow> {
  try {
    return await getPortgroup(store, uuid);
  } catch (err) {
    if (err instanceof PortgroupNotFound) throw new InvalidParameter(`portgroup_uuid: portgroup ${uuid} could not be found`);
    throw err;
  }
}

/** The row id of the node a group (or port) is to belong to, by uuid: 400 naming `node_uuid` when there is none. */
export async function nodeIdForChild(store: Store, uuid: string): Promise<{ id: number; provision_state: string; maintenance: boolean }> {
  const row = await store.db.selectFrom('nodes').select(['id', 'provision_state', 'maintenance']).where('uuid', '=', uuid.toLowerCase()).executeTakeFirst();
  if (!row) throw new InvalidParameter(`node_uuid: ${new NodeNotFound(uuid).message}`);
  return row;
}

export interface PortgroupValues {
  name?: string | null;
  address?: string | null;
  mode?: string | null;
  standalone_ports_supported?: boolean;
  extra?: Record<string, unknown>;
  properties?: Record<string, unknown>;
}

function conflict(err: unknown, values: PortgroupValues & { uuid?: string }): unknown {
  return uniqueViolation(err, [
    ['name', `a portgroup with name ${JSON.stringify(values.name)} already exists`],
    ['address', `a portgroup with MAC address ${String(values.address)} already exists`],
    ['uuid', `a portgroup with uuid ${String(values.uuid)} already exists`],
  ]);
}

/** Inserts a group on a node (a fresh uuid unless given); a uuid, name or address in use → `Conflict`. */
export async function createPortgroup(store: Store, nodeId: number, values: PortgroupValues & { uuid?: string }): Promise<PortgroupRow> {
  const uuid = (values.uuid ?? randomUUID()).toLowerCase();
  try {
    await store.db
      .insertInto('portgroups')
      .values({
        uuid,
        node_id: nodeId,
        name: values.name ?? null,
        address: values.address ?? null,
        mode: values.mode ?? DEFAULT_PORTGROUP_MODE,
        standalone_ports_supported: values.standalone_ports_supported ?? true,
        extra: JSON.stringify(values.extra ?? {}),
        internal_info: '{}',
        properties: JSON.stringify(values.properties ?? {}),
        created_at: store.sqlNow(),
        updated_at: store.sqlNow(),
      })
      .execute();
  } catch (err) {
    // A node deleted meanwhile is the node_uuid that names no node.
    if (isForeignKeyViolation(err)) throw new InvalidParameter(`node_uuid: the node was deleted meanwhile`);
    throw conflict(err, { ...values, uuid });
  }
  return getPortgroup(store, uuid);
}

/**
 * Changes a group; `nodeId` moves it to another node, which Ironic allows only for a group
 * without ports (`PortgroupNotEmpty`). `PortgroupNotFound` if it went meanwhile.
 */
export async function updatePortgroup(store: Store, group: PortgroupRow, changes: PortgroupValues & { nodeId?: number }): Promise<PortgroupRow> {
  const { nodeId, ...values } = changes;
  const set: Record<string, unknown> = { updated_at: store.sqlNow() };
  for (const [k, v] of Object.entries(values)) if (v !== undefined) set[k] = k === 'extra' || k === 'properties' ? JSON.stringify(v) : v;
  const moves = nodeId !== undefined && nodeId !== group.node_id;
  if (moves) set.node_id = nodeId;
  let q = store.db.updateTable('portgroups').set(set).where('uuid', '=', group.uuid);
  if (moves) {
    // The check and the move are one statement: a port joining meanwhile keeps the group where it is.
    q = q.where(({ not, exists, selectFrom }) => not(exists(selectFrom('ports').select('ports.id').whereRef('ports.portgroup_id', '=', 'portgroups.id'))));
  }
  let updated: bigint;
  try {
    updated = (await q.executeTakeFirst()).numUpdatedRows;
  } catch (err) {
    throw conflict(err, values);
  }
  if (updated === 0n) {
    await getPortgroup(store, group.uuid);
    throw new PortgroupNotEmpty(group.uuid);
  }
  return getPortgroup(store, group.uuid);
}

/** Deletes a group; `PortgroupNotFound`, or `PortgroupNotEmpty` while ports belong to it. */
export async function deletePortgroup(store: Store, uuid: string): Promise<void> {
  let deleted: bigint;
  try {
    deleted = (await store.db.deleteFrom('portgroups').where('uuid', '=', uuid).executeTakeFirst()).numDeletedRows;
  } catch (err) {
    if (isForeignKeyViolation(err)) throw new PortgroupNotEmpty(uuid);
    throw err;
  }
  if (deleted === 0n) throw new PortgroupNotFound(uuid);
}

/** Thrown when a port's group is on another node (400, as Ironic's port create). */
export function portgroupOfOtherNode(): InvalidParameter {
  return new InvalidParameter('portgroup_uuid: port can not be added to a portgroup belonging to a different node');
}

