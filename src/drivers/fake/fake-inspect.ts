/**
 * Fake inspect: succeeds at once without touching any hardware — that is what `fake` interfaces are
 * for (tests and demos; DESIGN "No verb pretends" allows it to the fake interfaces only). It counts
 * the inspection on the fake machine and changes no node property.
 */
import type { InspectInterface } from '../inspect.js';
import type { DriverTask } from '../task.js';
import type { FakeHardwareState } from './fake-state.js';

export class FakeInspect implements InspectInterface {
  constructor(private readonly state: FakeHardwareState) {}

  async validate(): Promise<void> {}

  async inspectHardware(task: DriverTask): Promise<'done'> {
    this.state.machine(task.node).inspections += 1;
    task.logger.debug({ node: task.node.uuid }, 'fake inspection: nothing inspected');
    return 'done';
  }
}
