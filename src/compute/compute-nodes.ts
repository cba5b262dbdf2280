/**
 * Writes that keep `compute_nodes` and the instances' hosts in line with an `OwnershipPlan`.
 *
 * Every write is conditional on the host it expects to replace, so two services that briefly
 * disagree about the ring never duplicate a row (uuid is unique, inserts skip existing rows) and an
 * old owner never overwrites or deletes a row a new owner took. A moved row gets `mapped = false`,
 * so even node-based discovery notices that the new host may need a mapping (the seed's option 2;
 * discovery by service makes it moot, DESIGN §1 invariant 4).
 */
import type { Store } from '../db/connect.js';
import type { ComputeNodeRow, OwnershipPlan, PlacedInstance } from './ownership.js';

const CHUNK = 500;

function chunks<T>(items: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += CHUNK) out.push(items.slice(i, i + CHUNK));
  return out;
}

export async function readComputeNodes(store: Store): Promise<ComputeNodeRow[]> {
  const rows = await store.db.selectFrom('compute_nodes').select(['uuid', 'host', 'resource_class']).execute();
  return rows.map((r) => ({ uuid: r.uuid, host: r.host, resourceClass: r.resource_class }));
}

export async function readPlacedInstances(store: Store): Promise<PlacedInstance[]> {
  const rows = await store.db.selectFrom('instances').select(['uuid', 'host', 'node']).where('node', 'is not', null).execute();
  return rows.map((r) => ({ uuid: r.uuid, host: r.host, node: r.node! }));
}

export interface AppliedPlan {
  created: number;
  takenOver: number;
  refreshed: number;
  adopted: number;
  removed: number;
  /** Writes that found the row changed by someone else; the next pass re-reads. */
  lost: number;
}

/** Applies `me`'s plan; returns what changed. */
export async function applyPlan(store: Store, me: string, plan: OwnershipPlan): Promise<AppliedPlan> {
  const { db } = store;
  const out: AppliedPlan = { created: 0, takenOver: 0, refreshed: 0, adopted: 0, removed: 0, lost: 0 };

  const creates = plan.claim.filter((c) => c.from === null);
  for (const batch of chunks(creates)) {
    const res = await db
      .insertInto('compute_nodes')
      .values(batch.map((c) => ({ uuid: c.uuid, host: me, hypervisor_hostname: c.uuid, resource_class: c.resourceClass, mapped: false })))
      .onConflict((oc) => oc.column('uuid').doNothing())
      .returning('uuid')
      .execute();
    out.created += res.length;
    out.lost += batch.length - res.length;
  }

  for (const claim of plan.claim) {
    if (claim.from === null) continue;
    const moving = claim.from !== me;
    const res = await db
      .updateTable('compute_nodes')
      .set({ host: me, resource_class: claim.resourceClass, updated_at: store.sqlNow(), ...(moving ? { mapped: false } : {}) })
      .where('uuid', '=', claim.uuid)
      .where('host', '=', claim.from)
      .executeTakeFirst();
    const n = Number(res.numUpdatedRows);
    if (n === 0) out.lost++;
    else if (moving) out.takenOver++;
    else out.refreshed++;
  }

  for (const adopt of plan.adoptInstances) {
    let q = db.updateTable('instances').set({ host: me, updated_at: store.sqlNow() }).where('uuid', '=', adopt.uuid);
    q = adopt.from === null ? q.where('host', 'is', null) : q.where('host', '=', adopt.from);
    const n = Number((await q.executeTakeFirst()).numUpdatedRows);
    if (n === 0) out.lost++;
    else out.adopted++;
  }

  for (const gone of plan.remove) {
    const n = Number((await db.deleteFrom('compute_nodes').where('uuid', '=', gone.uuid).where('host', '=', gone.host).executeTakeFirst()).numDeletedRows);
    if (n === 0) out.lost++;
    else out.removed++;
  }
  return out;
}
