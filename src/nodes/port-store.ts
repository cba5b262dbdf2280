/**
 * Reading and writing ports (a node's NICs): MAC addresses are normalised to lower-case
 * colon-separated form and unique across all nodes. A port is found by uuid only, as Ironic's;
 * it may belong to a port group of its node (`portgroup_id`), whose ports share one physical network.
 */
import { randomUUID } from 'node:crypto';
import type { Selectable } from 'kysely';
import { Conflict, InvalidParameter, NotFound } from '../common/errors.js';
import type { Store } from '../db/connect.js';
import { keysetPage } from '../db/keyset.js';
import type { PortsTable } from '../db/schema.js';
import { uniqueViolation } from './node-store.js';

/** A port as the views read it: its row, its node's uuid and its group's uuid (null for none). */
export type PortRow = Selectable<PortsTable> & { node_uuid: string; portgroup_uuid: string | null };

const MAC_PATTERN = /^([0-9a-f]{2})[:-]?([0-9a-f]{2})[:-]?([0-9a-f]{2})[:-]?([0-9a-f]{2})[:-]?([0-9a-f]{2})[:-]?([0-9a-f]{2})$/i;

/** True for a MAC address in any spelling `normalizeMac` takes. */
export function isMacAddress(value: unknown): boolean {
  return typeof value === 'string' && MAC_PATTERN.test(value.trim());
}

/** `AA-BB-CC-DD-EE-FF`, `aabbccddeeff`, … → `aa:bb:cc:dd:ee:ff`; a 400 naming the value otherwise. */
export function normalizeMac(value: unknown): string {
  const m = typeof value === 'string' ? MAC_PATTERN.exec(value.trim()) : null;
  if (!m) throw new InvalidParameter(`address: ${JSON.stringify(value)} is not a valid MAC address`);
  return m.slice(1, 7).join(':').toLowerCase();
}

function portQuery(store: Store) {
  return store.db
    .selectFrom('ports')
    .innerJoin('nodes', 'nodes.id', 'ports.node_id')
    .leftJoin('portgroups', 'portgroups.id', 'ports.portgroup_id')
    .selectAll('ports')
    .select(['nodes.uuid as node_uuid', 'portgroups.uuid as portgroup_uuid']);
}

/** Columns a port list may be sorted by (JSON columns cannot be, as in Ironic). */
export const PORT_SORT_KEYS = ['id', 'uuid', 'address', 'pxe_enabled', 'physical_network', 'created_at', 'updated_at'] as const;
export type PortSortKey = (typeof PORT_SORT_KEYS)[number];

export interface PortListQuery {
  limit: number;
  /** Uuid of the last port of the previous page. */
  marker?: string;
  nodeId?: number;
  /** Row id of a port group: its ports only. */
  portgroupId?: number;
  address?: string;
  /** `id` (creation order) when absent. */
  sortKey?: PortSortKey;
  sortDir: 'asc' | 'desc';
}

/** One page of ports, in order; keyset pagination on (sort key, id) as for nodes. */
export async function listPorts(store: Store, query: PortListQuery): Promise<PortRow[]> {
  let q = portQuery(store);
  if (query.nodeId !== undefined) q = q.where('ports.node_id', '=', query.nodeId);
  if (query.portgroupId !== undefined) q = q.where('ports.portgroup_id', '=', query.portgroupId);
  if (query.address !== undefined) q = q.where('ports.address', '=', normalizeMac(query.address));
  const sortKey = query.sortKey ?? 'id';
  const page = await keysetPage(store, {
    table: 'ports',
    sortKey,
    sortDir: query.sortDir,
    noun: 'port',
    ...(query.marker !== undefined ? { marker: query.marker } : {}),
    // NULL physical networks sort lowest.
    ...(sortKey === 'physical_network' ? { nullAs: '' } : {}),
  });
  if (page.after) q = q.where(page.after);
  return q.orderBy(page.sortExpr, query.sortDir).orderBy('ports.id', query.sortDir).limit(query.limit).execute();
}

/** The port with this uuid; `NotFound` otherwise. (Ironic finds ports by uuid only: a MAC is `?address=`.) */
export async function getPort(store: Store, uuid: string): Promise<PortRow> {
  const row = await portQuery(store).where('ports.uuid', '=', uuid.toLowerCase()).executeTakeFirst();
  if (!row) throw new NotFound(`port ${uuid} could not be found`);
  return row;
}

/**
 * Ironic's rule for a port group's ports: one physical network (which may be none) for all. 409
 * when a port with `physicalNetwork` joining, or staying in, group `portgroupId` would break it;
 * `except` is the port itself on an update.
 */
export async function checkGroupPhysnet(store: Store, portgroupId: number, portgroupUuid: string, physicalNetwork: string | null, except?: string): Promise<void> {
  let q = store.db.selectFrom('ports').select('physical_network').distinct().where('portgroup_id', '=', portgroupId);
  if (except !== undefined) q = q.where('uuid', '!=', except);
  const nets = (await q.execute()).map((r) => r.physical_network);
  if (nets.length === 0 || nets.includes(physicalNetwork)) return;
  throw new Conflict(`port with physical network ${String(physicalNetwork)} cannot become a member of port group ${portgroupUuid} which has ports in physical network ${nets.map(String).join(', ')}`);
}

export interface NewPort {
  uuid?: string;
  address: string;
  nodeId: number;
  /** Row id of the port's group (checked by the caller to be on the same node). */
  portgroupId?: number | null;
  pxeEnabled?: boolean;
  physicalNetwork?: string | null;
  localLinkConnection?: Record<string, unknown>;
  extra?: Record<string, unknown>;
  isSmartnic?: boolean;
}

export async function createPort(store: Store, port: NewPort): Promise<PortRow> {
  const uuid = (port.uuid ?? randomUUID()).toLowerCase();
  try {
    await store.db
      .insertInto('ports')
      .values({
        uuid,
        address: normalizeMac(port.address),
        node_id: port.nodeId,
        portgroup_id: port.portgroupId ?? null,
        pxe_enabled: port.pxeEnabled ?? true,
        physical_network: port.physicalNetwork ?? null,
        local_link_connection: JSON.stringify(port.localLinkConnection ?? {}),
        extra: JSON.stringify(port.extra ?? {}),
        ...(port.isSmartnic !== undefined ? { is_smartnic: port.isSmartnic } : {}),
        created_at: store.sqlNow(),
        updated_at: store.sqlNow(),
      })
      .execute();
  } catch (err) {
    throw uniqueViolation(err, [
      ['address', `a port with MAC address ${normalizeMac(port.address)} already exists`],
      ['uuid', `a port with uuid ${uuid} already exists`],
    ]);
  }
  return getPort(store, uuid);
}

export async function deletePort(store: Store, uuid: string): Promise<void> {
  const res = await store.db.deleteFrom('ports').where('uuid', '=', uuid).executeTakeFirst();
  if (Number(res.numDeletedRows) === 0) throw new NotFound(`port ${uuid} could not be found`);
}

/** The port fields a patch may change. */
export interface PortChanges {
  address?: string;
  /** Row id of the group to join; null leaves any group. */
  portgroupId?: number | null;
  pxeEnabled?: boolean;
  physicalNetwork?: string | null;
  extra?: Record<string, unknown>;
  localLinkConnection?: Record<string, unknown>;
  isSmartnic?: boolean;
}

/** Updates a port; a MAC address another port has → `Conflict`. */
export async function updatePort(store: Store, uuid: string, changes: PortChanges): Promise<PortRow> {
  const set: Record<string, unknown> = { updated_at: store.sqlNow() };
  if (changes.address !== undefined) set.address = normalizeMac(changes.address);
  if (changes.portgroupId !== undefined) set.portgroup_id = changes.portgroupId;
  if (changes.pxeEnabled !== undefined) set.pxe_enabled = changes.pxeEnabled;
  if (changes.physicalNetwork !== undefined) set.physical_network = changes.physicalNetwork;
  if (changes.extra !== undefined) set.extra = JSON.stringify(changes.extra);
  if (changes.localLinkConnection !== undefined) set.local_link_connection = JSON.stringify(changes.localLinkConnection);
  if (changes.isSmartnic !== undefined) set.is_smartnic = changes.isSmartnic;
  try {
    await store.db.updateTable('ports').set(set).where('uuid', '=', uuid).execute();
  } catch (err) {
    throw uniqueViolation(err, [['address', `a port with MAC address ${String(set.address)} already exists`]]);
  }
  return getPort(store, uuid);
}
