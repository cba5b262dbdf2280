/**
 * `no-raid` (Ironic's `NoRAID`): the node's RAID cannot be configured. Validation refuses with
 * `UnsupportedDriverExtension`; the logical disk properties are still described, as Ironic's
 * `NoRAID` (which inherits them) does.
 */
import { UnsupportedDriverExtension } from '../errors.js';
import type { RaidInterface } from '../raid.js';
import { LOGICAL_DISK_PROPERTIES } from '../raid-config.js';
import type { DriverTask } from '../task.js';

export class NoRaid implements RaidInterface {
  async validate(task: DriverTask): Promise<void> {
    throw new UnsupportedDriverExtension(task.node.driver, 'raid', 'no-raid');
  }

  async validateRaidConfig(task: DriverTask): Promise<void> {
    throw new UnsupportedDriverExtension(task.node.driver, 'raid', 'no-raid');
  }

  logicalDiskProperties(): Record<string, string> {
    return { ...LOGICAL_DISK_PROPERTIES };
  }
}
