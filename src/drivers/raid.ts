/**
 * The RAID interface (Ironic's `RAIDInterface`): checks a node's target RAID configuration and
 * describes the logical disk properties it takes. Building the configuration (clean and deploy
 * steps) is not offered yet: no built-in implementation has a step, so none is claimed.
 */
import type { DriverTask } from './task.js';

export interface RaidInterface {
  /** Checks the interface can be used for the node. Throws `UnsupportedDriverExtension` for `no-raid`. */
  validate(task: DriverTask): Promise<void>;
  /**
   * Checks a non-empty target RAID configuration before it is stored: Ironic's schema
   * (`raid-config.ts`), then whatever this implementation adds. Throws `InvalidParameterValue`
   * (400), or `UnsupportedDriverExtension` for `no-raid`.
   */
  validateRaidConfig(task: DriverTask, config: Readonly<Record<string, unknown>>): Promise<void>;
  /** The properties a logical disk may name, each with its description (Ironic's `get_logical_disk_properties`). */
  logicalDiskProperties(): Record<string, string>;
}
