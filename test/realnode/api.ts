/**
 * What a real-node scenario does through the REST API: enroll a lab machine as an `ipmi` node with
 * its port, move it through provision states, and wait for them. The client retries an action the
 * API refuses because the node is locked for a moment, as python-ironicclient does.
 */
import type { FastifyInstance } from 'fastify';
import { waitUntil } from '../helpers/conductors.js';
import type { LabMachine } from './lab.js';
import type { Asset, BootAssets } from './assets.js';

const HEADERS = { 'x-openstack-ironic-api-version': 'latest' };

export interface ApiAnswer {
  status: number;
  body: string;
  json<T = Record<string, unknown>>(): T;
}

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export async function api(app: FastifyInstance, method: Method, url: string, payload?: unknown): Promise<ApiAnswer> {
  for (let attempt = 1; ; attempt++) {
    const res = await app.inject({ method, url, headers: HEADERS, ...(payload !== undefined ? { payload: payload as object } : {}) });
    if (method === 'GET' || res.statusCode !== 409 || !/is locked by/.test(res.body) || attempt === 20) {
      return { status: res.statusCode, body: res.body, json: <T>() => res.json() as T };
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

export interface NodeStates {
  provision_state: string;
  target_provision_state: string | null;
  power_state: string | null;
  last_error: string | null;
}

export async function nodeStates(app: FastifyInstance, node: string): Promise<NodeStates> {
  return (await api(app, 'GET', `/v1/nodes/${node}/states`)).json<NodeStates>();
}

/** Waits until the node rests in `state` (no target); fails at once when it lands in a failed state. */
export async function waitForProvisionState(app: FastifyInstance, node: string, state: string, timeoutMs: number): Promise<number> {
  let last: NodeStates | undefined;
  try {
    return await waitUntil(async () => {
      last = await nodeStates(app, node);
      if (last.provision_state !== state && /failed$|^error$/.test(last.provision_state)) throw new Error(`node ${node} went ${last.provision_state}: ${last.last_error}`);
      return last.provision_state === state && last.target_provision_state === null;
    }, timeoutMs, `node ${node} to reach ${state}`);
  } catch (err) {
    throw new Error(`${(err as Error).message}; last seen ${JSON.stringify(last)}`);
  }
}

/** Asks for a provision action and checks the API accepted it. */
export async function provision(app: FastifyInstance, node: string, target: string): Promise<void> {
  const res = await api(app, 'PUT', `/v1/nodes/${node}/states/provision`, { target });
  if (res.status !== 202) throw new Error(`provision ${target} of ${node}: HTTP ${res.status} ${res.body}`);
}

/** Takes an enrolled node through manage and provide to `available`. */
export async function makeAvailable(app: FastifyInstance, node: string, timeoutMs: number): Promise<void> {
  await provision(app, node, 'manage');
  await waitForProvisionState(app, node, 'manageable', timeoutMs);
  await provision(app, node, 'provide');
  await waitForProvisionState(app, node, 'available', timeoutMs);
}

export interface EnrollOptions {
  bootInterface: 'pxe' | 'ipxe';
  bootMode: 'bios' | 'uefi';
  /** Default `ramdisk`. */
  deployInterface?: 'ramdisk' | 'direct';
  /** The deploy kernel and ramdisk; default the lab's marker kernel and initrd. */
  deployImages?: { kernel: Asset; ramdisk: Asset };
  /** `driver_info.kernel_append_params`, the deploy ramdisk's command line. */
  deployKernelParams?: string;
}

/**
 * Enrolls `machine` as an `ipmi` node (its BMC's address and credentials; the lab's kernel and
 * ramdisk as deploy images too, which the pxe/ipxe boot interfaces require) with one pxe-enabled
 * port for the VM's MAC. Returns the node's uuid.
 */
export async function enrollMachine(app: FastifyInstance, machine: LabMachine, bmcAddress: string, assets: BootAssets, options: EnrollOptions): Promise<string> {
  const created = await api(app, 'POST', '/v1/nodes', {
    name: machine.name,
    driver: 'ipmi',
    boot_interface: options.bootInterface,
    deploy_interface: options.deployInterface ?? 'ramdisk',
    properties: { capabilities: `boot_mode:${options.bootMode}` },
    driver_info: {
      ipmi_address: bmcAddress,
      ipmi_port: machine.bmc.port,
      ipmi_username: machine.bmc.user,
      ipmi_password: machine.bmc.password,
      deploy_kernel: `file://${(options.deployImages?.kernel ?? assets.kernel).path}`,
      deploy_kernel_checksum: (options.deployImages?.kernel ?? assets.kernel).checksum,
      deploy_ramdisk: `file://${(options.deployImages?.ramdisk ?? assets.initrd).path}`,
      deploy_ramdisk_checksum: (options.deployImages?.ramdisk ?? assets.initrd).checksum,
      ...(options.deployKernelParams !== undefined ? { kernel_append_params: options.deployKernelParams } : {}),
    },
  });
  if (created.status !== 201) throw new Error(`enrolling ${machine.name}: HTTP ${created.status} ${created.body}`);
  const uuid = created.json<{ uuid: string }>().uuid;
  const port = await api(app, 'POST', '/v1/ports', { node_uuid: uuid, address: machine.mac, pxe_enabled: true });
  if (port.status !== 201) throw new Error(`port ${machine.mac} of ${machine.name}: HTTP ${port.status} ${port.body}`);
  return uuid;
}

/**
 * Sets the instance a ramdisk deploy boots: the lab's kernel and ramdisk, and `kernelParams`
 * (`instance_info.kernel_append_params`).
 */
export async function setRamdiskInstance(app: FastifyInstance, node: string, assets: BootAssets, kernelParams: string): Promise<void> {
  const patch = [
    { op: 'add', path: '/instance_info/kernel', value: `file://${assets.kernel.path}` },
    { op: 'add', path: '/instance_info/kernel_checksum', value: assets.kernel.checksum },
    { op: 'add', path: '/instance_info/ramdisk', value: `file://${assets.initrd.path}` },
    { op: 'add', path: '/instance_info/ramdisk_checksum', value: assets.initrd.checksum },
    { op: 'add', path: '/instance_info/kernel_append_params', value: kernelParams },
  ];
  const res = await api(app, 'PATCH', `/v1/nodes/${node}`, patch);
  if (res.status !== 200) throw new Error(`instance_info of ${node}: HTTP ${res.status} ${res.body}`);
}
