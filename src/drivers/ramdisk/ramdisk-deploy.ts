/**
 * The `ramdisk` deploy interface: nothing is written to the node's disks; the node network-boots the
 * instance kernel and ramdisk from `instance_info` on every boot. So deploying is "point the boot
 * files at the instance, make the BMC boot from the network for good, power on", and the owning
 * conductor's boot files matter for the node's whole life: `takeOver` rebuilds them on a new owner.
 */
import { bootNeed } from '../../nodes/state-machine.js';
import type { AgentProgress, DeployInterface, DeployOutcome } from '../deploy.js';
import { instanceImages } from '../pxe/pxe-boot.js';
import type { DriverTask } from '../task.js';

export class RamdiskDeploy implements DeployInterface {
  async validate(task: DriverTask): Promise<void> {
    await task.driver.boot.validate(task);
    instanceImages(task, 'the ramdisk deploy interface');
  }

  async prepare(task: DriverTask): Promise<void> {
    // Nothing to stage: the instance boots straight from the network. Fail early on missing images.
    instanceImages(task, 'the ramdisk deploy interface');
  }

  async deploy(task: DriverTask): Promise<DeployOutcome> {
    const { boot, management, power } = task.driver;
    await boot.prepareInstance(task);
    await management.setBootDevice(task, 'pxe', true);
    if ((await power.getPowerState(task)) === 'power on') await power.reboot(task);
    else await power.setPowerState(task, 'power on');
    return 'done';
  }

  async tearDown(task: DriverTask): Promise<void> {
    await task.driver.power.setPowerState(task, 'power off');
    await task.driver.boot.cleanUpInstance(task);
  }

  async cleanUp(task: DriverTask): Promise<void> {
    await task.driver.boot.cleanUpInstance(task);
  }

  /**
   * Rebuilds what the node boots in its provision state, as the state table says. The rescue agent
   * runs from the deploy ramdisk (no separate rescue images are modelled), and a state that boots
   * nothing from its conductor gets nothing.
   */
  async takeOver(task: DriverTask): Promise<void> {
    switch (bootNeed(task.node.provision_state ?? '')) {
      case 'deploy':
      case 'rescue':
        await task.driver.boot.prepareRamdisk(task);
        return;
      case 'instance':
        await task.driver.boot.prepareInstance(task);
        return;
      case 'none':
        return;
    }
  }

  /** The ramdisk deploy boots the instance's own ramdisk and drives no agent: nothing to continue. */
  async heartbeat(): Promise<AgentProgress> {
    return { kind: 'wait' };
  }
}
