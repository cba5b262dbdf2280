/**
 * Fake rescue: succeeds at once without touching any hardware — allowed to the `fake` interfaces
 * only, for tests and demos. The fake machine records that it is rescued, so a test can see the verb
 * reached the interface.
 */
import type { RescueInterface } from '../rescue.js';
import type { DriverTask } from '../task.js';
import type { FakeHardwareState } from './fake-state.js';

export class FakeRescue implements RescueInterface {
  constructor(private readonly state: FakeHardwareState) {}

  async validate(): Promise<void> {}

  async rescue(task: DriverTask): Promise<'done'> {
    this.state.machine(task.node).rescued = true;
    return 'done';
  }

  async unrescue(task: DriverTask): Promise<void> {
    this.state.machine(task.node).rescued = false;
  }
}
