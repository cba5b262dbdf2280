/**
 * The `pxe` and `ipxe` boot interfaces: the node network-boots from this conductor's boot environment.
 * Deploy images come from `driver_info` (`deploy_kernel`, `deploy_ramdisk`, each with a `_checksum`),
 * instance images from `instance_info` (`kernel`, `ramdisk`, with checksums). Kernel parameters:
 * `driver_info.kernel_append_params` (plus the agent's parameters) for the deploy ramdisk only,
 * `instance_info.kernel_append_params` (else the driver_info one, as Ironic falls back) for the
 * instance only. Booting the instance needs no deploy images, so `prepareInstance` neither requires
 * nor fetches them; `validate` still requires them, as Ironic does: cleaning and rescue boot them.
 */
import { ipxeParamsProblem } from '../../boot/templates/ipxe.js';
import type { BootInterface } from '../boot.js';
import { nodeBootMode } from '../capabilities.js';
import { InvalidParameterValue } from '../errors.js';
import type { FieldBag, ImageRef } from '../fields.js';
import { optionalString, requiredImage } from '../fields.js';
import type { DriverTask } from '../task.js';
import type { BootEnvironmentPort, BootNode } from './boot-environment-port.js';

/** The boot environment's interfaces: `pxe` (TFTP) or `ipxe` (HTTP). */
export const NETWORK_BOOT_KINDS = ['pxe', 'ipxe'] as const;
export type NetworkBootKind = (typeof NETWORK_BOOT_KINDS)[number];

const PARAM = /^[A-Za-z0-9_.-]+$/;

/** The deploy image pair every network-booted node needs (the boot environment always links it). */
export function deployImages(task: DriverTask, purpose: string): { deployKernel: ImageRef; deployRamdisk: ImageRef } {
  const bag: FieldBag = { name: 'driver_info', value: task.node.driver_info };
  return { deployKernel: requiredImage(bag, 'deploy_kernel', purpose), deployRamdisk: requiredImage(bag, 'deploy_ramdisk', purpose) };
}

/** The instance kernel and ramdisk of a network-booted instance. */
export function instanceImages(task: DriverTask, purpose: string): { kernel: ImageRef; ramdisk: ImageRef } {
  const bag: FieldBag = { name: 'instance_info', value: task.node.instance_info };
  return { kernel: requiredImage(bag, 'kernel', purpose), ramdisk: requiredImage(bag, 'ramdisk', purpose) };
}

export class PxeBoot implements BootInterface {
  constructor(
    private readonly environment: BootEnvironmentPort,
    readonly kind: NetworkBootKind,
  ) {}

  async validate(task: DriverTask): Promise<void> {
    if (!task.ports.some((p) => p.pxeEnabled)) {
      throw new InvalidParameterValue('ports', `of node ${task.node.uuid}: none is pxe-enabled, so the node cannot network-boot`);
    }
    deployImages(task, `the ${this.kind} boot interface`);
    nodeBootMode(task.node);
    this.kernelParams(task, 'driver_info');
    this.kernelParams(task, 'instance_info');
  }

  async prepareRamdisk(task: DriverTask, params: Readonly<Record<string, string>> = {}): Promise<void> {
    for (const key of Object.keys(params)) {
      if (!PARAM.test(key)) throw new InvalidParameterValue(`ramdisk parameter ${JSON.stringify(key)}`, 'is not a valid kernel parameter name');
    }
    const extra = Object.entries(params).map(([k, v]) => `${k}=${v}`);
    const kernelParams = [this.kernelParams(task, 'driver_info'), ...extra].filter((p) => p !== undefined).join(' ');
    const node = this.bootNode(task, 'deploy');
    if (kernelParams !== '') node.deployKernelParams = kernelParams;
    await this.environment.prepare(node, task.ports, deployImages(task, `the ${this.kind} boot interface`));
  }

  async cleanUpRamdisk(task: DriverTask): Promise<void> {
    await this.environment.cleanUp({ uuid: task.node.uuid }, task.ports);
  }

  async prepareInstance(task: DriverTask): Promise<void> {
    const images = instanceImages(task, `a network-booted instance (${this.kind})`);
    const kernelParams = this.kernelParams(task, 'instance_info') ?? this.kernelParams(task, 'driver_info');
    const node = this.bootNode(task, 'boot_ramdisk');
    if (kernelParams !== undefined && kernelParams !== '') node.instanceKernelParams = kernelParams;
    await this.environment.prepare(node, task.ports, images);
  }

  async prepareLocalBoot(task: DriverTask): Promise<void> {
    await this.environment.prepare(this.bootNode(task, 'localboot'), task.ports, {});
  }

  async cleanUpInstance(task: DriverTask): Promise<void> {
    await this.environment.cleanUp({ uuid: task.node.uuid }, task.ports);
  }

  private bootNode(task: DriverTask, label: BootNode['label']): BootNode {
    const node: BootNode = { uuid: task.node.uuid, bootInterface: this.kind, label };
    const mode = nodeBootMode(task.node);
    if (mode !== undefined) node.bootMode = mode;
    return node;
  }

  private kernelParams(task: DriverTask, bag: 'driver_info' | 'instance_info'): string | undefined {
    const value = optionalString({ name: bag, value: task.node[bag] }, 'kernel_append_params');
    // A line break would end the kernel line in the boot config and let the rest run as commands.
    if (value !== undefined && /[\r\n]/.test(value)) throw new InvalidParameterValue(`${bag}.kernel_append_params`, 'must be one line');
    // Refused here too, not only when the config is rendered: `validate` then names the node's field.
    const problem = value !== undefined && this.kind === 'ipxe' ? ipxeParamsProblem(value) : null;
    if (problem !== null) throw new InvalidParameterValue(`${bag}.kernel_append_params`, problem);
    return value;
  }
}
