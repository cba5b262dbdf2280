/** The stored result of a node's last inspection (`node_inventory`), one row per node. */
import { NotFound } from '../common/errors.js';
import type { Store } from '../db/connect.js';

/** What `GET /v1/nodes/{node}/inventory` answers (Ironic's shape). */
export interface NodeInventory {
  inventory: Record<string, unknown>;
  plugin_data: Record<string, unknown>;
}

/** Stores the node's inventory, replacing what an earlier inspection stored. */
export async function saveInventory(store: Store, nodeId: number, found: NodeInventory): Promise<void> {
  await store.db.transaction().execute(async (trx) => {
    await trx.deleteFrom('node_inventory').where('node_id', '=', nodeId).execute();
    await trx
      .insertInto('node_inventory')
      .values({ node_id: nodeId, inventory_data: JSON.stringify(found.inventory), plugin_data: JSON.stringify(found.plugin_data), created_at: store.sqlNow() })
      .execute();
  });
}

/** The node's stored inventory; `NotFound` (Ironic's wording) when it was never inspected. */
export async function getInventory(store: Store, node: { id: number; uuid: string }): Promise<NodeInventory> {
  const row = await store.db.selectFrom('node_inventory').select(['inventory_data', 'plugin_data']).where('node_id', '=', node.id).executeTakeFirst();
  if (row === undefined) throw new NotFound(`Inventory not found for node ${node.uuid}.`);
  return { inventory: row.inventory_data, plugin_data: row.plugin_data };
}
