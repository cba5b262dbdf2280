/**
 * Fake deploy: completes at once, going through the node's own boot and power interfaces so that an
 * active fake node is powered on with its instance "prepared", and an undeployed one is off.
 */
import type { DeployInterface, DeployOutcome } from '../deploy.js';
import type { DriverTask } from '../task.js';

export class FakeDeploy implements DeployInterface {
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
}
