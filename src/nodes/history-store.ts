/**
 * Reading a node's history (`node_history`, written by conductors through `cluster/reservations.ts`'s
 * `writeHistory`): a page of events in the order they were recorded, and one event by uuid. Events
 * are read through their node, so one node's history never shows another's.
 */
import { InvalidParameter, NotFound } from '../common/errors.js';
import type { Store } from '../db/connect.js';

/** One recorded event. */
export interface HistoryEvent {
  uuid: string;
  created_at: Date;
  severity: string;
  event_type: string;
  event: string;
  conductor: string | null;
  user: string | null;
}

const COLUMNS = ['uuid', 'created_at', 'severity', 'event_type', 'event', 'conductor', 'user'] as const;

/**
 * Up to `limit` events of node `nodeId`, oldest first (by row id, as Ironic pages them), after the
 * event `marker` (a uuid of this node's history; 400 when it is not one).
 */
export async function listHistory(store: Store, nodeId: number, page: { limit: number; marker?: string }): Promise<HistoryEvent[]> {
  let q = store.db.selectFrom('node_history').select(COLUMNS).where('node_id', '=', nodeId);
  if (page.marker !== undefined) {
    const marker = await store.db.selectFrom('node_history').select('id').where('uuid', '=', page.marker).where('node_id', '=', nodeId).executeTakeFirst();
    if (!marker) throw new InvalidParameter(`marker: no event ${page.marker} in this node's history`);
    q = q.where('id', '>', marker.id);
  }
  return q.orderBy('id', 'asc').limit(page.limit).execute();
}

/** Event `uuid` of node `nodeId`; `NotFound` when the node has no such event. */
export async function getHistoryEvent(store: Store, nodeId: number, uuid: string): Promise<HistoryEvent> {
  const row = await store.db.selectFrom('node_history').select(COLUMNS).where('node_id', '=', nodeId).where('uuid', '=', uuid.toLowerCase()).executeTakeFirst();
  if (!row) throw new NotFound(`Node history record ${uuid} could not be found`);
  return row;
}
