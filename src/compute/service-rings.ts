/**
 * The compute services' live ring of one cell: the cell's `services` rows of the compute binary,
 * live by the database clock (`service_down_time`), on one ring over their lower-cased host names
 * (as Nova builds its ring), kept by the same live-rings service the conductors use.
 */
import { LiveRings } from '../cluster/live-rings.js';
import type { LiveMember, MembershipSource } from '../cluster/live-rings.js';
import type { Logger } from '../common/logger.js';
import type { Store } from '../db/connect.js';
import type { RingMode } from '../ring/index.js';
import { ServiceRing } from './ownership.js';
import { COMPUTE_BINARY, SERVICES_CHANNEL, listServices } from './services.js';
import type { ServiceState } from './services.js';

/** A compute service as a ring member: its lower-cased host on the ring, `host` as registered. */
export type ServiceMember = ServiceState & LiveMember;

export type ServiceRings = LiveRings<ServiceMember>;

/** The one group of a cell's ring: a compute service only ever sees its own cell. */
export const CELL_RING = '';

function asMember(s: ServiceState): ServiceMember {
  return { ...s, name: s.host.toLowerCase(), group: CELL_RING, weight: 1, alive: s.live, heartbeatAt: s.lastSeenUp };
}

/** Compute service membership of the cell behind `store`; `selfHost` is the caller's host as registered. */
export function serviceMembership(store: Store, downTime: number, selfHost: string): MembershipSource<ServiceMember> {
  return {
    channel: SERVICES_CHANNEL,
    timeoutSeconds: downTime,
    read: async () => (await listServices(store, COMPUTE_BINARY, downTime)).map(asMember),
    asSelf: (_self, row) =>
      row !== undefined
        ? { ...row, alive: true }
        : asMember({ id: -1, uuid: '', host: selfHost, binary: COMPUTE_BINARY, topic: null, disabled: false, forcedDown: false, mapped: false, lastSeenUp: null, live: true }),
  };
}

/** The live ring of the cell behind `store`, `selfHost` always in it while the caller runs. */
export function serviceRings(store: Store, options: { selfHost: string; downTime: number; pollIntervalMs: number; ringMode?: RingMode; logger: Logger }): ServiceRings {
  const rings = new LiveRings(store, serviceMembership(store, options.downTime, options.selfHost), {
    pollIntervalMs: options.pollIntervalMs,
    ring: { mode: options.ringMode ?? 'balanced' },
    logger: options.logger,
  });
  rings.setSelf({ name: options.selfHost.toLowerCase(), group: CELL_RING, weight: 1 });
  return rings;
}

/** The ring an ownership plan uses, as the live rings hold it now. */
export function serviceRing(rings: ServiceRings): ServiceRing {
  return new ServiceRing(
    rings.members().map((m) => m.host),
    rings.ring(CELL_RING) ?? null,
  );
}
