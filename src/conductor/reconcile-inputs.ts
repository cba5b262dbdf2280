/**
 * What a reconcile pass decides with, read in one go: the group's nodes (a few columns each), their
 * ports, and the node directories on this conductor's disk; and the fingerprint that says whether
 * boot files made for a node are still right for it.
 */
import { sql } from 'kysely';
import type { BootEnvironment } from '../boot/index.js';
import type { Store } from '../db/connect.js';
import type { NodeRow } from '../nodes/node-store.js';

/** The columns a pass decides with; full rows are read only for nodes that need work. */
export type NodeBrief = Pick<NodeRow, 'id' | 'uuid' | 'provision_state' | 'reservation' | 'conductor_affinity' | 'maintenance'> & { stamp: string };
export const stampColumn = sql<string>`cast(updated_at as text)`.as('stamp');

export type Port = { address: string; pxeEnabled: boolean };

/**
 * A node's version: its `updated_at` as the database wrote it (every write of a node row sets it, by
 * the database clock, to the microsecond on PostgreSQL) and its ports. Equal fingerprints mean the
 * boot files made for one are still right for the other.
 */
export function fingerprint(stamp: string, ports: readonly Port[]): string {
  let out = stamp;
  for (const p of ports) out += `|${p.address}${p.pxeEnabled ? '+' : '-'}`;
  return out;
}

export interface PassReads {
  nodes: NodeBrief[];
  /** Ports by node id, in port id order (the order fingerprints are made in). */
  ports: Map<number, Port[]>;
  /** Node directories on this conductor's disk (none without a boot environment). */
  onDisk: string[];
}

/** Reads the group's nodes and ports and the prepared node directories, concurrently. */
export async function readPassInputs(store: Store, group: string, boot: BootEnvironment | undefined): Promise<PassReads> {
  const [nodes, portRows, onDisk] = await Promise.all([
    store.db
      .selectFrom('nodes')
      .select(['id', 'uuid', 'provision_state', 'reservation', 'conductor_affinity', 'maintenance', stampColumn])
      .where('conductor_group', '=', group)
      .execute() as Promise<NodeBrief[]>,
    store.db
      .selectFrom('ports')
      .innerJoin('nodes', 'nodes.id', 'ports.node_id')
      .select(['ports.node_id', 'ports.address', 'ports.pxe_enabled'])
      .where('nodes.conductor_group', '=', group)
      .orderBy('ports.id')
      .execute(),
    boot ? boot.listPrepared() : Promise.resolve([] as string[]),
  ]);
  const ports = new Map<number, Port[]>();
  for (const p of portRows) {
    let list = ports.get(p.node_id);
    if (!list) ports.set(p.node_id, (list = []));
    list.push({ address: p.address, pxeEnabled: p.pxe_enabled });
  }
  return { nodes, ports, onDisk };
}
