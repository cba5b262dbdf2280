/** Fake power: instant, always succeeds, and remembers each node's state. */
import type { PowerInterface, PowerState } from '../power.js';
import { POWER_STATES } from '../power.js';
import { InvalidParameterValue } from '../errors.js';
import type { DriverTask } from '../task.js';
import type { FakeHardwareState } from './fake-state.js';

export class FakePower implements PowerInterface {
  constructor(private readonly state: FakeHardwareState) {}

  async getPowerState(task: DriverTask): Promise<PowerState> {
    return this.state.machine(task.node).power;
  }

  async setPowerState(task: DriverTask, state: PowerState): Promise<void> {
    // The API validates too; this guards callers inside the process that pass a raw string.
    if (!POWER_STATES.includes(state)) throw new InvalidParameterValue('target', `must be one of ${POWER_STATES.join(', ')}`);
    const machine = this.state.machine(task.node);
    if (state === 'power on' && machine.power !== 'power on') machine.powerOns += 1;
    machine.power = state;
    task.logger.debug({ node: task.node.uuid, state }, 'fake power');
  }

  async reboot(task: DriverTask): Promise<void> {
    const machine = this.state.machine(task.node);
    machine.power = 'power on';
    machine.powerOns += 1;
  }

  async validate(): Promise<void> {}
}
