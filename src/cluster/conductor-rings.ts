/**
 * The conductors' live rings — one per conductor group, from the `conductors` table — and the
 * answers every role asks of them about a node: its owner, its replicas, the conductor named by its
 * `conductor_affinity`, and where to reach a conductor. The conductor, the API (views, routing,
 * `/v1/ring`, `/metrics`) all use these, built with the same `[conductor]` ring options.
 */
import type { Logger } from '../common/logger.js';
import type { Config } from '../config/options.js';
import type { Store } from '../db/connect.js';
import { LiveRings } from './live-rings.js';
import type { LiveMember, MembershipSource } from './live-rings.js';
import { MEMBERSHIP_CHANNEL, listConductors } from './membership.js';
import type { ConductorState } from './membership.js';
import { conductorRingOptions } from './ring-options.js';

/** A conductor row as a ring member: named by its hostname, grouped by its conductor group. */
export type ConductorMember = ConductorState & LiveMember;

export type ConductorRings = LiveRings<ConductorMember>;

/** A node's place on the rings: its uuid is the key in its conductor group's ring. */
export interface RingNode {
  uuid: string;
  conductor_group: string;
}

function asMember(c: ConductorState): ConductorMember {
  return { ...c, name: c.hostname, group: c.conductorGroup, heartbeatAt: c.updatedAt };
}

/** Conductor membership, liveness by the database clock (`heartbeatTimeout` seconds). */
export function conductorMembership(store: Store, heartbeatTimeout: number): MembershipSource<ConductorMember> {
  return {
    channel: MEMBERSHIP_CHANNEL,
    timeoutSeconds: heartbeatTimeout,
    read: async () => (await listConductors(store, heartbeatTimeout)).map(asMember),
    asSelf: (self, row) =>
      row !== undefined
        ? { ...row, alive: true, weight: self.weight, group: self.group, conductorGroup: self.group }
        : asMember({ id: -1, hostname: self.name, conductorGroup: self.group, online: true, alive: true, drivers: [], weight: self.weight, rpcUrl: null, createdAt: new Date(0), updatedAt: new Date(0) }),
  };
}

export interface ConductorRingsOptions {
  logger: Logger;
  /** See `LiveRingsOptions`: a conductor polls; the API reads when asked. */
  pollIntervalMs?: number;
  maxAgeMs?: number;
}

/** The conductors' live rings with the `[conductor]` settings (heartbeat timeout, ring mode). */
export function conductorRings(store: Store, conductor: Config['conductor'], options: ConductorRingsOptions): ConductorRings {
  return new LiveRings(store, conductorMembership(store, conductor.heartbeat_timeout), {
    ring: conductorRingOptions(conductor),
    logger: options.logger,
    ...(options.pollIntervalMs !== undefined ? { pollIntervalMs: options.pollIntervalMs } : {}),
    ...(options.maxAgeMs !== undefined ? { maxAgeMs: options.maxAgeMs } : {}),
  });
}

/** What the API shows and routes by, for any node, from the rings as they are now. */
export interface NodeOwners {
  /** The live conductor that owns the node; null when its group has none. */
  owner(node: RingNode): string | null;
  /** The conductors after the owner, in ring order (`replicas` − 1 of them at most). */
  replicas(node: RingNode): string[];
  /** The hostname of a conductor by row id, live or not (for `conductor_affinity`). */
  hostname(id: number | null): string | null;
  /** The RPC address a live conductor publishes. */
  rpcUrl(host: string): string | null;
}

/** Answers already built, per membership read (the rows array of one read) and replica count. */
const answered = new WeakMap<readonly ConductorMember[], Map<number, NodeOwners>>();

/**
 * Node-level answers over `rings` as they are now, for `replicas` conductors per node (owner
 * included): taken at once, so that one answer (a node list) never mixes two memberships. Built
 * once per membership read: every API request asks.
 */
export function nodeOwners(rings: ConductorRings, replicas = 1): NodeOwners {
  const read = rings.rowsRead();
  let byReplicas = answered.get(read);
  if (byReplicas === undefined) answered.set(read, (byReplicas = new Map()));
  let owners = byReplicas.get(replicas);
  if (owners === undefined) byReplicas.set(replicas, (owners = buildNodeOwners(rings, replicas)));
  return owners;
}

function buildNodeOwners(rings: ConductorRings, replicas: number): NodeOwners {
  const byGroup = new Map(rings.groups().map((g) => [g, rings.ring(g)!]));
  const names = new Map(rings.rowsRead().map((c) => [c.id, c.hostname]));
  const urls = new Map(rings.members().map((c) => [c.hostname, c.rpcUrl]));
  return {
    owner: (node) => byGroup.get(node.conductor_group)?.owner(node.uuid) ?? null,
    replicas: (node) => byGroup.get(node.conductor_group)?.lookup(node.uuid, { replicas }).slice(1) ?? [],
    hostname: (id) => (id === null ? null : (names.get(id) ?? null)),
    rpcUrl: (host) => urls.get(host) ?? null,
  };
}
