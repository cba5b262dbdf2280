/** The ring options every process derives from `[conductor]`, so all of them place nodes alike. */
import type { HashRingOptions } from '../ring/index.js';
import type { Config } from '../config/options.js';

/**
 * `hash_partition_exponent` is Ironic's knob and applies to `tooz` mode only; `balanced` mode keeps
 * its own number of points per host (16384), which its balance and its replica walks depend on — a
 * balanced ring of 32 points per host is 1.3× out of balance and walks tens of thousands of table
 * slots to find a replica.
 */
export function conductorRingOptions(conductor: Config['conductor']): HashRingOptions {
  if (conductor.hash_ring_mode === 'balanced') return { mode: 'balanced' };
  return { mode: conductor.hash_ring_mode, partitions: 2 ** conductor.hash_partition_exponent };
}
