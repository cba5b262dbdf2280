/**
 * Fake deploy: completes at once, going through the node's own boot and power interfaces so that an
 * active fake node is powered on with its instance "prepared", and an undeployed one is off.
 *
 * It offers two manual clean steps, `erase_devices_metadata` and `erase_devices` (priority 0, so
 * automated cleaning runs none), which succeed without touching any disk: they only record on the
 * fake machine that they ran. Succeeding without hardware is what the fake interfaces are for.
 */
import type { CleanStep, CleanStepRequest } from '../clean-steps.js';
import type { AgentProgress, DeployInterface, DeployOutcome } from '../deploy.js';
import type { DriverTask } from '../task.js';
import type { FakeHardwareState } from './fake-state.js';

const FAKE_CLEAN_STEPS: readonly CleanStep[] = [
  { interface: 'deploy', step: 'erase_devices_metadata', priority: 0, description: 'Fake: records the step, erases nothing.' },
  { interface: 'deploy', step: 'erase_devices', priority: 0, description: 'Fake: records the step, erases nothing.' },
];

export class FakeDeploy implements DeployInterface {
  constructor(private readonly state: FakeHardwareState) {}

  getCleanSteps(): readonly CleanStep[] {
    return FAKE_CLEAN_STEPS;
  }

  async executeCleanStep(task: DriverTask, step: CleanStepRequest): Promise<void> {
    this.state.machine(task.node).cleanSteps.push(`${step.interface}.${step.step}`);
  }

  async validate(): Promise<void> {}

  async prepare(): Promise<void> {}

  async deploy(task: DriverTask): Promise<DeployOutcome> {
    await task.driver.boot.prepareInstance(task);
    await task.driver.power.setPowerState(task, 'power on');
    return 'done';
  }

  async tearDown(task: DriverTask): Promise<void> {
    await task.driver.power.setPowerState(task, 'power off');
    await task.driver.boot.cleanUpInstance(task);
  }

  async cleanUp(task: DriverTask): Promise<void> {
    await task.driver.boot.cleanUpInstance(task);
    await task.driver.boot.cleanUpRamdisk(task);
  }

  async takeOver(task: DriverTask): Promise<void> {
    await task.driver.boot.prepareInstance(task);
  }

  /** The fake deploy completes at once and drives no agent: a heartbeat has nothing to continue. */
  async heartbeat(): Promise<AgentProgress> {
    return { kind: 'wait' };
  }
}
