/**
 * A node's VIFs (Ironic's `vif_list`, `vif_attach`, `vif_detach`) as its owner records them: the
 * VIF id is kept on a free port or port group of the node, in its `internal_info` as
 * `tenant_vif_port_id` — Ironic's bookkeeping (`VIFPortIDMixin`) without Neutron. ironring has no
 * Neutron and talks to none: attaching records which NIC the VIF is bound to, and nothing else
 * happens on any network (Ironic's `noop` network interface would not even record it; ironring
 * keeps the record so that list and detach tell the truth). A network interface ironring does not
 * know is refused (400, naming it).
 *
 * Choice of the port-like object, as Ironic's `get_free_port_like_object` with no physical
 * networks to match: the VIF must not be attached to the node already (409); port groups come
 * before ports, pxe-enabled ports before others; a port group whose ports carry a VIF is passed
 * over for its free ports; an empty group is never chosen. With `port_uuid` or `portgroup_uuid`
 * (API 1.67) only that one is considered. None free: 400.
 */
import { withTask } from '../cluster/task.js';
import { Conflict, InvalidParameter } from '../common/errors.js';
import type { NodeTask } from '../cluster/task.js';
import type { NodeWork } from './node-operations.js';

/** Ironic's key of the attached VIF in a port's or port group's `internal_info`. */
export const TENANT_VIF_KEY = 'tenant_vif_port_id';

/** Network interfaces whose VIFs ironring records (without talking to any network service). */
export const VIF_NETWORK_INTERFACES: readonly string[] = ['noop'];

/** What an attach asks for (the API checked the shapes). */
export interface VifInfo {
  id: string;
  /** API 1.67: attach to this port only. */
  port_uuid?: string;
  /** API 1.67: attach to this port group only. */
  portgroup_uuid?: string;
}

interface PortLike {
  kind: 'port' | 'portgroup';
  id: number;
  uuid: string;
  internal_info: Record<string, unknown>;
  extra: Record<string, unknown>;
  /** Ports only. */
  portgroup_id: number | null;
  pxe_enabled: boolean;
  is_smartnic: boolean;
  local_link_connection: Record<string, unknown>;
}

const vifOf = (o: PortLike): string | undefined => {
  const v = o.internal_info[TENANT_VIF_KEY];
  return typeof v === 'string' ? v : undefined;
};

async function portsAndGroups(work: NodeWork, nodeId: number): Promise<{ ports: PortLike[]; groups: PortLike[] }> {
  const { db } = work.deps.store;
  const ports = await db.selectFrom('ports').select(['id', 'uuid', 'internal_info', 'extra', 'portgroup_id', 'pxe_enabled', 'is_smartnic', 'local_link_connection']).where('node_id', '=', nodeId).orderBy('id').execute();
  const groups = await db.selectFrom('portgroups').select(['id', 'uuid', 'internal_info', 'extra']).where('node_id', '=', nodeId).orderBy('id').execute();
  return {
    ports: ports.map((p) => ({ kind: 'port', ...p, pxe_enabled: Boolean(p.pxe_enabled), is_smartnic: Boolean(p.is_smartnic) }) as PortLike),
    groups: groups.map((g) => ({ kind: 'portgroup', ...g, portgroup_id: null, pxe_enabled: true, is_smartnic: false, local_link_connection: {} }) as PortLike),
  };
}

/** The node's network interface, refused unless ironring records VIFs for it. */
async function checkNetwork(work: NodeWork, task: NodeTask): Promise<void> {
  const driverTask = await work.driverTask(task);
  const name = driverTask.driver.names.network;
  if (!VIF_NETWORK_INTERFACES.includes(name)) {
    throw new InvalidParameter(`Driver ${task.node.driver} does not support VIFs with network_interface ${JSON.stringify(name)}; ironring records VIFs for ${VIF_NETWORK_INTERFACES.join(', ')} only`);
  }
}

/** The VIFs attached to the node: ports first, then port groups, as Ironic lists them. */
export function listVifs(work: NodeWork, uuid: string): Promise<Array<{ id: string }>> {
  return withTask(work.deps.store, uuid, { host: work.deps.host, shared: true, purpose: 'list vifs' }, async (task) => {
    await checkNetwork(work, task);
    const { ports, groups } = await portsAndGroups(work, task.node.id);
    return [...ports, ...groups].flatMap((o) => {
      const vif = vifOf(o);
      return vif === undefined ? [] : [{ id: vif }];
    });
  });
}

/** Ironic's `validate_port_info` for a network without Neutron: Smart NIC ports must be consistent. */
function portUsable(p: PortLike): boolean {
  if (typeof p.extra['client-id'] === 'string' && p.extra['client-id'] !== '') return true;
  const smartLink = typeof p.local_link_connection.port_id === 'string' && typeof p.local_link_connection.hostname === 'string';
  return p.is_smartnic === smartLink;
}

/** Ironic's `_vif_attached`: 409 when `vif` is on `o` already; else whether another VIF is. */
function attachedElsewhere(o: PortLike, vif: string): boolean {
  const current = vifOf(o);
  if (current === vif) throw new Conflict(`Unable to attach VIF because VIF ${vif} is already attached to Ironic ${o.kind === 'port' ? 'Port' : 'Portgroup'} ${o.uuid}`);
  return current !== undefined;
}

/** The free port or port group `info` goes to (Ironic's rules, no physical networks to match). */
export function choosePortLike(ports: readonly PortLike[], groups: readonly PortLike[], info: VifInfo): PortLike {
  const free: PortLike[] = [];
  const byGroup = new Map<number, PortLike[]>();
  const unusableGroups = new Set<number | null>();
  for (const p of ports) {
    if ((info.port_uuid !== undefined && info.port_uuid !== p.uuid) || !portUsable(p)) continue;
    if (attachedElsewhere(p, info.id)) {
      unusableGroups.add(p.portgroup_id);
      continue;
    }
    if (p.portgroup_id === null && info.portgroup_uuid === undefined) free.push(p);
    else if (p.portgroup_id !== null) byGroup.set(p.portgroup_id, [...(byGroup.get(p.portgroup_id) ?? []), p]);
  }
  if (info.port_uuid === undefined) {
    for (const g of groups) {
      if ((info.portgroup_uuid !== undefined && info.portgroup_uuid !== g.uuid) || attachedElsewhere(g, info.id)) continue;
      if (unusableGroups.has(g.id)) {
        if (info.portgroup_uuid === undefined) free.push(...(byGroup.get(g.id) ?? []));
      } else if ((byGroup.get(g.id) ?? []).length > 0) {
        free.push(g);
      }
    }
  }
  // Port groups first, then pxe-enabled ports; stable otherwise (creation order).
  const rank = (o: PortLike) => (o.kind === 'portgroup' ? 2 : 0) + (o.pxe_enabled ? 1 : 0);
  const best = [...free].sort((a, b) => rank(b) - rank(a))[0];
  if (best === undefined) throw new InvalidParameter(`Unable to attach VIF ${info.id}, not enough free physical ports.`);
  return best;
}

async function writeInternal(work: NodeWork, o: PortLike, internal: Record<string, unknown>, extra?: Record<string, unknown>): Promise<void> {
  const { store } = work.deps;
  const set = { internal_info: JSON.stringify(internal), ...(extra !== undefined ? { extra: JSON.stringify(extra) } : {}), updated_at: store.sqlNow() };
  const res = o.kind === 'port'
    ? await store.db.updateTable('ports').set(set).where('id', '=', o.id).executeTakeFirst()
    : await store.db.updateTable('portgroups').set(set).where('id', '=', o.id).executeTakeFirst();
  // Ports are deleted through the API, not under the node's lock: one gone meanwhile is not "attached".
  if (Number(res.numUpdatedRows) !== 1) throw new Conflict(`${o.kind} ${o.uuid} was deleted while its VIF was being changed; try again`);
}

/** Attaches a VIF: records it on the chosen port or port group, under the node's lock. */
export async function attachVif(work: NodeWork, uuid: string, info: VifInfo): Promise<void> {
  const task = await work.lock(uuid, 'attach vif');
  try {
    await checkNetwork(work, task);
    const { ports, groups } = await portsAndGroups(work, task.node.id);
    const target = choosePortLike(ports, groups, info);
    await writeInternal(work, target, { ...target.internal_info, [TENANT_VIF_KEY]: info.id });
    await task.recordHistory({ eventType: 'network', severity: 'INFO', event: `VIF ${info.id} attached to ${target.kind} ${target.uuid}` });
  } finally {
    await task.release();
  }
}

/** Detaches a VIF: clears it from the port or port group it is on (400 when on none). */
export async function detachVif(work: NodeWork, uuid: string, vif: string): Promise<void> {
  const task = await work.lock(uuid, 'detach vif');
  try {
    await checkNetwork(work, task);
    const { ports, groups } = await portsAndGroups(work, task.node.id);
    const target = [...groups, ...ports].find((o) => vifOf(o) === vif);
    if (target === undefined) throw new InvalidParameter(`Unable to detach VIF ${vif} from node ${task.node.uuid} because it is not attached to it.`);
    const { [TENANT_VIF_KEY]: _vif, ...internal } = target.internal_info;
    // Ironic also drops the legacy `extra.vif_port_id` of the object.
    const { vif_port_id: legacy, ...extra } = target.extra;
    await writeInternal(work, target, internal, legacy === undefined ? undefined : extra);
    await task.recordHistory({ eventType: 'network', severity: 'INFO', event: `VIF ${vif} detached from ${target.kind} ${target.uuid}` });
  } finally {
    await task.release();
  }
}
