/** The `ipmi` hardware type: IPMI power and boot device, network boot, ramdisk deploy. */
import type { HardwareType } from '../hardware-type.js';

export const IPMI_HARDWARE: HardwareType = {
  name: 'ipmi',
  description: 'IPMI BMC through ipmitool (lanplus): power and boot device; PXE or iPXE boot; ramdisk or direct deploy; agent inspection and rescue',
  supported: {
    bios: ['no-bios'],
    boot: ['ipxe', 'pxe'],
    console: ['no-console'],
    deploy: ['ramdisk', 'direct'],
    inspect: ['no-inspect', 'agent'],
    management: ['ipmitool'],
    network: ['noop'],
    power: ['ipmitool'],
    raid: ['no-raid'],
    rescue: ['no-rescue', 'agent'],
    storage: ['noop'],
    vendor: ['no-vendor'],
  },
};
