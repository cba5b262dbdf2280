/** The ring options every process derives from `[conductor]`, so all of them place nodes alike. */
import type { HashRingOptions } from '../ring/index.js';
import type { Config } from '../config/options.js';

export function conductorRingOptions(conductor: Config['conductor']): HashRingOptions {
  return { mode: conductor.hash_ring_mode, partitions: 2 ** conductor.hash_partition_exponent };
}
