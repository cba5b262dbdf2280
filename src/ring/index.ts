/**
 * `ironring/ring`: the hash ring as a library — placement of keys (node UUIDs) on weighted hosts
 * in ironring's balanced mode or byte-for-byte like OpenStack's tooz ring, and a manager that
 * keeps one ring per group. Pure and synchronous; it imports nothing else of ironring.
 */
export { HashRing, DEFAULT_PARTITIONS, RING_MODES, normalizeHosts, resolveRingOptions } from './hash-ring.js';
export type { HashRingOptions, HostInput, LookupOptions, RingHost, RingMode } from './hash-ring.js';
export { RingManager } from './ring-manager.js';
export type { RingChange, RingListener } from './ring-manager.js';
export {
  DuplicateHostError,
  InvalidHostError,
  InvalidReplicasError,
  InvalidRingOptionError,
  InvalidWeightError,
  NoHostsError,
  RingError,
  UnknownHostError,
} from './errors.js';
export { murmur3 } from './hash.js';
