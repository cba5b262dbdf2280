/** Shared pieces of the driver tests: nodes, tasks, a silent logger, a recording boot environment. */
import type { BootImages, BootNode, BootPort } from '../../src/boot/types.js';
import type { BootEnvironmentPort } from '../../src/drivers/pxe/boot-environment-port.js';
import type { DriverRegistry, InterfaceSelection } from '../../src/drivers/registry.js';
import type { DriverLogger, DriverNode, DriverPort, DriverTask } from '../../src/drivers/task.js';

export const silentLogger: DriverLogger = { debug: () => undefined, info: () => undefined, warn: () => undefined };

export const PORTS: DriverPort[] = [{ address: '52:54:00:12:34:56', pxeEnabled: true }];

const SHA = `sha256:${'ab'.repeat(32)}`;

/** driver_info deploy images every network-booted node needs. */
export const DEPLOY_IMAGES = {
  deploy_kernel: 'http://images.example/deploy.kernel',
  deploy_kernel_checksum: SHA,
  deploy_ramdisk: 'http://images.example/deploy.initrd',
  deploy_ramdisk_checksum: SHA,
} as const;

/** instance_info of a ramdisk-deployed instance. */
export const INSTANCE_IMAGES = {
  kernel: 'http://images.example/vmlinuz',
  kernel_checksum: SHA,
  ramdisk: 'file:///srv/images/initrd.gz',
  ramdisk_checksum: SHA,
} as const;

let counter = 0;

/** A node with a fresh uuid; fields override the fake-hardware defaults. */
export function makeNode(fields: Partial<DriverNode> & InterfaceSelection = {}): DriverNode & InterfaceSelection {
  counter += 1;
  return {
    uuid: `00000000-0000-4000-8000-${counter.toString(16).padStart(12, '0')}`,
    driver: 'fake-hardware',
    driver_info: {},
    instance_info: {},
    properties: {},
    provision_state: 'available',
    ...fields,
  };
}

/** Binds a node through the registry, as the conductor's adapter does. */
export function makeTask(registry: DriverRegistry, node: DriverNode & InterfaceSelection, ports: readonly DriverPort[] = PORTS, signal?: AbortSignal): DriverTask {
  return registry.bind({ node, ports, logger: silentLogger, ...(signal ? { signal } : {}) });
}

/** One call the recording boot environment received. */
export type BootCall =
  | { op: 'prepare'; node: BootNode; ports: readonly BootPort[]; images: BootImages }
  | { op: 'cleanUp'; uuid: string; ports: readonly BootPort[] };

/** A boot environment that records calls and writes nothing. */
export class RecordingBootEnvironment implements BootEnvironmentPort {
  readonly calls: BootCall[] = [];

  async prepare(node: BootNode, ports: readonly BootPort[], images: BootImages): Promise<void> {
    this.calls.push({ op: 'prepare', node, ports, images });
  }

  async cleanUp(node: Pick<BootNode, 'uuid'>, ports: readonly BootPort[] = []): Promise<void> {
    this.calls.push({ op: 'cleanUp', uuid: node.uuid, ports });
  }
}
