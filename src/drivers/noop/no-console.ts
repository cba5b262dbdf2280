/**
 * `no-console` (Ironic's `NoConsole`): the node has no console. Every method refuses with
 * `UnsupportedDriverExtension` (400), before anything changes.
 */
import type { ConsoleInterface } from '../console.js';
import { UnsupportedDriverExtension } from '../errors.js';
import type { DriverTask } from '../task.js';

const refuse = (task: DriverTask): never => {
  throw new UnsupportedDriverExtension(task.node.driver, 'console', 'no-console');
};

export class NoConsole implements ConsoleInterface {
  async validate(task: DriverTask): Promise<void> {
    refuse(task);
  }

  async start(task: DriverTask): Promise<void> {
    refuse(task);
  }

  async stop(task: DriverTask): Promise<void> {
    refuse(task);
  }

  async info(task: DriverTask): Promise<never> {
    return refuse(task);
  }
}
