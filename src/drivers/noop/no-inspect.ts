/**
 * `no-inspect` (Ironic's `NoInspect`): the hardware type cannot inspect. Every method refuses with
 * `UnsupportedDriverExtension`, so `inspect` is answered 400 before the node leaves `manageable`.
 */
import { UnsupportedDriverExtension } from '../errors.js';
import type { InspectInterface } from '../inspect.js';
import type { DriverTask } from '../task.js';

export class NoInspect implements InspectInterface {
  async validate(task: DriverTask): Promise<void> {
    throw new UnsupportedDriverExtension(task.node.driver, 'inspect', 'no-inspect');
  }

  async inspectHardware(task: DriverTask): Promise<never> {
    throw new UnsupportedDriverExtension(task.node.driver, 'inspect', 'no-inspect');
  }
}
