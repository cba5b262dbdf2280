/** The `fake-hardware` hardware type: every interface simulated, for tests and demos. */
import type { HardwareType } from '../hardware-type.js';

export const FAKE_HARDWARE: HardwareType = {
  name: 'fake-hardware',
  description: 'Simulated node: power, boot device, boot files and deploys kept in memory',
  supported: {
    boot: ['fake'],
    console: ['no-console', 'fake'],
    deploy: ['fake'],
    inspect: ['no-inspect', 'fake'],
    management: ['fake'],
    network: ['noop'],
    power: ['fake'],
    rescue: ['no-rescue', 'fake'],
    vendor: ['no-vendor', 'fake'],
  },
};
