/**
 * Fake RAID (Ironic's `FakeRAID`): takes any target configuration Ironic's rules accept, with no
 * hardware behind it — for tests and demos, like every `fake` interface.
 */
import type { RaidInterface } from '../raid.js';
import { checkRaidConfig, LOGICAL_DISK_PROPERTIES } from '../raid-config.js';

export class FakeRaid implements RaidInterface {
  async validate(): Promise<void> {}

  async validateRaidConfig(_task: unknown, config: unknown): Promise<void> {
    checkRaidConfig(config);
  }

  logicalDiskProperties(): Record<string, string> {
    return { ...LOGICAL_DISK_PROPERTIES };
  }
}
