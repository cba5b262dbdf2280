/**
 * `no-rescue` (Ironic's `NoRescue`): the hardware type cannot rescue. Every method refuses with
 * `UnsupportedDriverExtension`, so `rescue` and `unrescue` are answered 400 before the node changes.
 */
import { UnsupportedDriverExtension } from '../errors.js';
import type { RescueInterface } from '../rescue.js';
import type { DriverTask } from '../task.js';

export class NoRescue implements RescueInterface {
  async validate(task: DriverTask): Promise<void> {
    throw new UnsupportedDriverExtension(task.node.driver, 'rescue', 'no-rescue');
  }

  async rescue(task: DriverTask): Promise<never> {
    throw new UnsupportedDriverExtension(task.node.driver, 'rescue', 'no-rescue');
  }

  async unrescue(task: DriverTask): Promise<void> {
    throw new UnsupportedDriverExtension(task.node.driver, 'rescue', 'no-rescue');
  }
}
