/**
 * Fake console (Ironic's `FakeConsole`): starting and stopping succeed without hardware and are
 * recorded on the fake machine, so a test can see the request reached the interface; there is
 * nothing to connect to, so its connection information is `{}`, as Ironic's.
 */
import type { ConsoleInterface } from '../console.js';
import type { DriverTask } from '../task.js';
import type { FakeHardwareState } from './fake-state.js';

export class FakeConsole implements ConsoleInterface {
  constructor(private readonly state: FakeHardwareState) {}

  async validate(): Promise<void> {}

  async start(task: DriverTask): Promise<void> {
    this.state.machine(task.node).consoleStarted = true;
  }

  async stop(task: DriverTask): Promise<void> {
    this.state.machine(task.node).consoleStarted = false;
  }

  async info(): Promise<Record<string, never>> {
    return {};
  }
}
