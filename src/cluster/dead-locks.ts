/**
 * Releasing the locks of dead conductors. A reservation is only as good as its holder's heartbeat:
 * once a holder's heartbeat is older than `heartbeat_timeout` by the database clock, any live
 * conductor may release it (each node once, with a history entry — see `releaseReservationsOf`).
 * A conductor that is stopping keeps heartbeating while it finishes, so its locks stay its own.
 */
import type { Store } from '../db/connect.js';
import { heartbeatingHosts } from './membership.js';
import { releaseReservationsOf } from './reservations.js';

/** Releases every reservation whose holder has no fresh heartbeat; returns the released node uuids. */
export async function releaseDeadReservations(store: Store, heartbeatTimeout: number, by: string): Promise<string[]> {
  const holders = await store.db
    .selectFrom('nodes')
    .select('reservation')
    .distinct()
    .where('reservation', 'is not', null)
    .execute();
  if (holders.length === 0) return [];
  const fresh = await heartbeatingHosts(store, heartbeatTimeout);
  const released: string[] = [];
  for (const { reservation } of holders) {
    if (reservation === null || fresh.has(reservation)) continue;
    released.push(...(await releaseReservationsOf(store, reservation, { by, reason: `heartbeat of conductor ${reservation} expired` })));
  }
  return released;
}
