/** Fake management: remembers the boot device per node like a BMC would. */
import { InvalidParameterValue } from '../errors.js';
import type { BootDevice, BootDeviceState, ManagementInterface } from '../management.js';
import { BOOT_DEVICES } from '../management.js';
import type { DriverTask } from '../task.js';
import type { FakeHardwareState } from './fake-state.js';

export class FakeManagement implements ManagementInterface {
  constructor(private readonly state: FakeHardwareState) {}

  async getSupportedBootDevices(): Promise<readonly BootDevice[]> {
    return BOOT_DEVICES;
  }

  async setBootDevice(task: DriverTask, device: BootDevice, persistent: boolean): Promise<void> {
    if (!BOOT_DEVICES.includes(device)) throw new InvalidParameterValue('boot_device', `must be one of ${BOOT_DEVICES.join(', ')}`);
    const machine = this.state.machine(task.node);
    machine.bootDevice = device;
    machine.persistent = persistent;
  }

  async getBootDevice(task: DriverTask): Promise<BootDeviceState> {
    const machine = this.state.machine(task.node);
    return { boot_device: machine.bootDevice, persistent: machine.persistent };
  }

  async validate(): Promise<void> {}
}
