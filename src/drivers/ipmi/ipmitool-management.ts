/**
 * Boot device through `ipmitool chassis bootdev` (set) and `chassis bootparam get 5` (read back).
 * UEFI nodes get `efiboot`, so the BMC does not switch them to legacy boot with the override.
 */
import { nodeBootMode } from '../capabilities.js';
import { BootDeviceActionFailed, InvalidParameterValue, IpmiFailure, ManagementActionFailed } from '../errors.js';
import type { BootDevice, BootDeviceState, ManagementInterface } from '../management.js';
import { BOOT_DEVICES } from '../management.js';
import type { DriverTask } from '../task.js';
import { parseIpmiDriverInfo } from './ipmi-driver-info.js';
import type { Ipmitool } from './ipmitool.js';
import { parseBootParam } from './ipmitool-output.js';

/** The ipmitool command that injects an NMI (Ironic's `power diag`); exported for tests. */
export const NMI_COMMAND: readonly string[] = ['chassis', 'power', 'diag'];

/** The `chassis bootdev` arguments for a device; exported for tests. */
export function bootdevCommand(device: BootDevice, persistent: boolean, uefi: boolean): string[] {
  const options = [...(persistent ? ['persistent'] : []), ...(uefi ? ['efiboot'] : [])];
  return ['chassis', 'bootdev', device, ...(options.length > 0 ? [`options=${options.join(',')}`] : [])];
}

export class IpmitoolManagement implements ManagementInterface {
  constructor(private readonly ipmitool: Ipmitool) {}

  async validate(task: DriverTask): Promise<void> {
    parseIpmiDriverInfo(task.node.driver_info);
    nodeBootMode(task.node);
  }

  async getSupportedBootDevices(): Promise<readonly BootDevice[]> {
    return BOOT_DEVICES;
  }

  async setBootDevice(task: DriverTask, device: BootDevice, persistent: boolean): Promise<void> {
    if (!BOOT_DEVICES.includes(device)) throw new InvalidParameterValue('boot_device', `must be one of ${BOOT_DEVICES.join(', ')}, not ${JSON.stringify(device)}`);
    const info = parseIpmiDriverInfo(task.node.driver_info);
    const command = bootdevCommand(device, persistent, nodeBootMode(task.node) === 'uefi');
    try {
      await this.ipmitool.run(info, command, task.signal);
    } catch (err) {
      if (err instanceof IpmiFailure) throw new BootDeviceActionFailed(task.node.uuid, `set boot device ${device}`, err.bmcMessage, { cause: err });
      throw err;
    }
    task.logger.info({ node: task.node.uuid, device, persistent }, 'boot device set');
  }

  /** Ironic's: `power diag`, the chassis command that pulses the NMI. */
  async injectNmi(task: DriverTask): Promise<void> {
    const info = parseIpmiDriverInfo(task.node.driver_info);
    try {
      await this.ipmitool.run(info, NMI_COMMAND, task.signal);
    } catch (err) {
      if (err instanceof IpmiFailure) throw new ManagementActionFailed(task.node.uuid, 'inject NMI', err.bmcMessage, { cause: err });
      throw err;
    }
    task.logger.info({ node: task.node.uuid }, 'NMI injected');
  }

  async getBootDevice(task: DriverTask): Promise<BootDeviceState> {
    const info = parseIpmiDriverInfo(task.node.driver_info);
    let stdout: string;
    try {
      stdout = await this.ipmitool.run(info, ['chassis', 'bootparam', 'get', '5'], task.signal);
    } catch (err) {
      if (err instanceof IpmiFailure) throw new BootDeviceActionFailed(task.node.uuid, 'get boot device', err.bmcMessage, { cause: err });
      throw err;
    }
    const state = parseBootParam(stdout);
    if (state === null) throw new BootDeviceActionFailed(task.node.uuid, 'get boot device', `unrecognised answer from the BMC: ${JSON.stringify(stdout.trim())}`);
    return state;
  }
}
