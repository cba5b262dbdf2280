/**
 * Which scheduler runs periodic host discovery: one at a time, chosen from the service rows by the
 * database clock so every scheduler agrees without talking to the others.
 *
 * Candidates are the live schedulers that have periodic discovery enabled (they register with topic
 * `discover-hosts`); the leader is the one with the lowest row id, which is stable across restarts
 * because registration keeps the row. A scheduler with discovery off never leads, so starting one
 * with discovery on is enough to turn discovery on (Nova elects the first live scheduler by name,
 * whether or not it runs discovery). A leader that dies is replaced once its heartbeat is older than
 * `service_down_time`; one that stops gracefully at once.
 */
import type { ServiceState } from '../compute/services.js';

/** Topic of a scheduler service that runs periodic discovery. */
export const DISCOVERY_TOPIC = 'discover-hosts';

/** The id of the leading scheduler, or null when none is a candidate. `self` counts as live. */
export function electLeader(services: readonly Pick<ServiceState, 'id' | 'live' | 'topic'>[], self?: number): number | null {
  let leader: number | null = null;
  for (const s of services) {
    if (s.topic !== DISCOVERY_TOPIC) continue;
    if (!s.live && s.id !== self) continue;
    if (leader === null || s.id < leader) leader = s.id;
  }
  return leader;
}
