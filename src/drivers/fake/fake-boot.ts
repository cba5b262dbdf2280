/** Fake boot: records which boot files would be prepared, writes nothing. */
import type { BootInterface } from '../boot.js';
import type { DriverTask } from '../task.js';
import type { FakeHardwareState } from './fake-state.js';

export class FakeBoot implements BootInterface {
  constructor(private readonly state: FakeHardwareState) {}

  async prepareRamdisk(task: DriverTask, params?: Readonly<Record<string, string>>): Promise<void> {
    const machine = this.state.machine(task.node);
    machine.prepared = 'ramdisk';
    machine.ramdiskParams = { ...params };
  }

  async cleanUpRamdisk(task: DriverTask): Promise<void> {
    const machine = this.state.machine(task.node);
    if (machine.prepared === 'ramdisk') machine.prepared = null;
  }

  async prepareInstance(task: DriverTask): Promise<void> {
    this.state.machine(task.node).prepared = 'instance';
  }

  async prepareLocalBoot(task: DriverTask): Promise<void> {
    this.state.machine(task.node).prepared = 'localboot';
  }

  async cleanUpInstance(task: DriverTask): Promise<void> {
    const machine = this.state.machine(task.node);
    if (machine.prepared === 'instance' || machine.prepared === 'localboot') machine.prepared = null;
  }

  async validate(): Promise<void> {}
}
