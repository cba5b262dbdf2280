/**
 * The `fake-hardware` hardware type: power and management simulated, for tests and demos. As in
 * Ironic, it also accepts the generic boot and deploy interfaces (`pxe`, `ipxe`, `ramdisk`), so a
 * fake node can network-boot from real boot files; the fake ones stay the defaults.
 *
 * The `fake` implementations succeed without touching any hardware — the only ones allowed to (they
 * exist for tests and demos). Inspect and rescue default to Ironic's `no-inspect` and `no-rescue`,
 * which refuse the verbs (400); a node opts into `fake` inspect or rescue explicitly.
 */
import type { HardwareType } from '../hardware-type.js';

export const FAKE_HARDWARE: HardwareType = {
  name: 'fake-hardware',
  description: 'Simulated node: power, boot device, boot files and deploys kept in memory',
  supported: {
    boot: ['fake', 'pxe', 'ipxe'],
    console: ['no-console', 'fake'],
    deploy: ['fake', 'ramdisk', 'direct'],
    inspect: ['no-inspect', 'fake', 'agent'],
    management: ['fake'],
    network: ['noop'],
    power: ['fake'],
    rescue: ['no-rescue', 'fake', 'agent'],
    vendor: ['no-vendor', 'fake'],
  },
};
