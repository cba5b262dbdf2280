/**
 * `no-bios` (Ironic's `NoBIOS`): the node's BIOS cannot be managed. Validation refuses with
 * `UnsupportedDriverExtension` (400, Ironic's "Driver … does not support bios (disabled or not
 * implemented)").
 */
import type { BiosInterface } from '../bios.js';
import { UnsupportedDriverExtension } from '../errors.js';
import type { DriverTask } from '../task.js';

export class NoBios implements BiosInterface {
  async validate(task: DriverTask): Promise<void> {
    throw new UnsupportedDriverExtension(task.node.driver, 'bios', 'no-bios');
  }
}
