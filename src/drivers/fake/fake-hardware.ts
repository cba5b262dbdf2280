/**
 * The `fake-hardware` hardware type: power and management simulated, for tests and demos. As in
 * Ironic, it also accepts the generic boot and deploy interfaces (`pxe`, `ipxe`, `ramdisk`), so a
 * fake node can network-boot from real boot files; the fake ones stay the defaults.
 *
 * The `fake` implementations succeed without touching any hardware — the only ones allowed to (they
 * exist for tests and demos). Every interface type but storage defaults to its `fake`
 * implementation, as Ironic's fake-hardware does where the fake ones are enabled (its tempest suite
 * relies on it); storage defaults to `noop`, Ironic's `default_storage_interface`. A node that should
 * refuse a verb sets `no-inspect`, `no-rescue`, `no-console`, `no-bios`… explicitly.
 */
import type { HardwareType } from '../hardware-type.js';

export const FAKE_HARDWARE: HardwareType = {
  name: 'fake-hardware',
  description: 'Simulated node: power, boot device, boot files and deploys kept in memory',
  supported: {
    bios: ['fake', 'no-bios'],
    boot: ['fake', 'pxe', 'ipxe'],
    console: ['fake', 'no-console'],
    deploy: ['fake', 'ramdisk', 'direct'],
    inspect: ['fake', 'no-inspect', 'agent'],
    management: ['fake'],
    network: ['noop'],
    power: ['fake'],
    raid: ['fake', 'no-raid'],
    rescue: ['fake', 'no-rescue', 'agent'],
    // Ironic's fake-hardware lists `fake` first, but its `[DEFAULT] default_storage_interface`
    // is `noop` out of the box, which makes noop the default: first here.
    storage: ['noop', 'fake'],
    vendor: ['fake', 'no-vendor'],
  },
};
