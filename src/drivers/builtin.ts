/**
 * The built-in hardware types and implementations, assembled into a registry. This is what the
 * conductor and the API construct; tests may build a `DriverRegistry` from parts instead.
 */
import { BootEnvironmentUnavailable } from './errors.js';
import type { ImplementationCatalog } from './hardware-type.js';
import { FakeBios } from './fake/fake-bios.js';
import { FakeBoot } from './fake/fake-boot.js';
import { FakeConsole } from './fake/fake-console.js';
import { FakeRaid } from './fake/fake-raid.js';
import { FakeStorage } from './fake/fake-storage.js';
import { FakeVendor } from './fake/fake-vendor.js';
import { NoVendor } from './noop/no-vendor.js';
import { NoBios } from './noop/no-bios.js';
import { NoConsole } from './noop/no-console.js';
import { NoopStorage } from './noop/noop-storage.js';
import { NoRaid } from './noop/no-raid.js';
import { FakeDeploy } from './fake/fake-deploy.js';
import { AgentInspect } from './direct/agent-inspect.js';
import { AgentRescue } from './direct/agent-rescue.js';
import { FakeInspect } from './fake/fake-inspect.js';
import { FAKE_HARDWARE } from './fake/fake-hardware.js';
import { FakeManagement } from './fake/fake-management.js';
import { FakePower } from './fake/fake-power.js';
import { FakeRescue } from './fake/fake-rescue.js';
import { FakeHardwareState } from './fake/fake-state.js';
import { IPMI_HARDWARE } from './ipmi/ipmi-hardware.js';
import { Ipmitool } from './ipmi/ipmitool.js';
import type { IpmitoolOptions } from './ipmi/ipmitool.js';
import { IpmitoolManagement } from './ipmi/ipmitool-management.js';
import { IpmitoolPower } from './ipmi/ipmitool-power.js';
import { NoInspect } from './noop/no-inspect.js';
import { NoRescue } from './noop/no-rescue.js';
import type { PowerPollOptions } from './ipmi/ipmitool-power.js';
import type { BootEnvironmentPort } from './pxe/boot-environment-port.js';
import { PxeBoot } from './pxe/pxe-boot.js';
import { RamdiskDeploy } from './ramdisk/ramdisk-deploy.js';
import { DirectDeploy } from './direct/direct-deploy.js';
import type { InstanceImagePort } from './direct/direct-deploy.js';
import { AgentClient } from '../agent/agent-client.js';
import type { AgentClientOptions } from '../agent/agent-client.js';
import { DriverRegistry } from './registry.js';
import type { DriverRegistryOptions } from './registry.js';

/** Options of `createDriverRegistry`. */
export interface BuiltinDriverOptions extends Pick<DriverRegistryOptions, 'enabledInterfaces' | 'defaultInterfaces'> {
  /**
   * This conductor's boot environment. A process that only lists and validates (the API) passes
   * none; its `pxe`/`ipxe` interfaces then throw `BootEnvironmentUnavailable` if ever called.
   */
  bootEnvironment?: BootEnvironmentPort;
  /** Hardware types to enable; default all (`fake-hardware`, `ipmi`). */
  enabledHardwareTypes?: readonly string[];
  /** ipmitool runner tuning (binary, timeouts, retries). */
  ipmitool?: IpmitoolOptions;
  /** Power-state polling after a change. */
  powerPoll?: PowerPollOptions;
  /** The API URL deploy agents reach (`[deploy] agent_api_url`); without one the direct deploy refuses. */
  agentApiUrl?: string | null;
  /** Talking to deploy agents (`[agent]`): timeout and attempts. */
  agentClient?: AgentClientOptions;
  /** Converts and serves qcow2 instance images for the direct deploy; absent: qcow2 is refused. */
  instanceImages?: InstanceImagePort;
  /** `[deploy] fast_track` and `fast_track_timeout` for the direct deploy; default off. */
  fastTrack?: { enabled: boolean; timeoutSeconds: number };
  /** `[deploy] erase_devices_metadata_priority`; default 99. */
  eraseMetadataPriority?: number;
  /** `[deploy] erase_devices_priority`, `shred_random_overwrite_iterations`, `shred_final_overwrite_with_zeros`. */
  eraseDevices?: { priority: number; iterations: number; zeroize: boolean };
  /** `[inspector] power_off`: the agent inspection powers the node off after its inventory (default true). */
  inspectorPowerOff?: boolean;
  /** `[inspector] extra_kernel_params`: the ramdisk's extra parameters while it inspects. */
  inspectionKernelParams?: Readonly<Record<string, string>>;
  /** The fake machines; pass one to inspect them from a test. Default a fresh one. */
  fakeState?: FakeHardwareState;
}

/** The port of a process without boot files: every call fails, naming why. */
export const NO_BOOT_ENVIRONMENT: BootEnvironmentPort = {
  prepare: () => Promise.reject(new BootEnvironmentUnavailable()),
  cleanUp: () => Promise.reject(new BootEnvironmentUnavailable()),
};

/** The registry of built-in hardware types. */
export function createDriverRegistry(options: BuiltinDriverOptions = {}): DriverRegistry {
  const fake = options.fakeState ?? new FakeHardwareState();
  const ipmitool = new Ipmitool(options.ipmitool);
  const environment = options.bootEnvironment ?? NO_BOOT_ENVIRONMENT;
  const boot: ImplementationCatalog['boot'] = { fake: new FakeBoot(fake), pxe: new PxeBoot(environment, 'pxe'), ipxe: new PxeBoot(environment, 'ipxe') };
  return new DriverRegistry({
    hardwareTypes: [FAKE_HARDWARE, IPMI_HARDWARE],
    implementations: {
      bios: { 'no-bios': new NoBios(), fake: new FakeBios(fake) },
      boot,
      console: { 'no-console': new NoConsole(), fake: new FakeConsole(fake) },
      deploy: {
        fake: new FakeDeploy(fake),
        ramdisk: new RamdiskDeploy(),
        direct: new DirectDeploy({
          apiUrl: () => options.agentApiUrl ?? null,
          client: new AgentClient(options.agentClient),
          ...(options.instanceImages ? { images: options.instanceImages } : {}),
          ...(options.fastTrack ? { fastTrack: options.fastTrack } : {}),
          ...(options.eraseMetadataPriority !== undefined ? { eraseMetadataPriority: options.eraseMetadataPriority } : {}),
          ...(options.eraseDevices !== undefined ? { eraseDevices: options.eraseDevices } : {}),
          ...(options.inspectionKernelParams ? { inspectionKernelParams: options.inspectionKernelParams } : {}),
        }),
      },
      inspect: {
        'no-inspect': new NoInspect(),
        fake: new FakeInspect(fake),
        agent: new AgentInspect({
          apiUrl: () => options.agentApiUrl ?? null,
          fastTrack: options.fastTrack?.enabled === true,
          powerOff: options.inspectorPowerOff ?? true,
          ...(options.inspectionKernelParams ? { kernelParams: options.inspectionKernelParams } : {}),
        }),
      },
      management: { fake: new FakeManagement(fake), ipmitool: new IpmitoolManagement(ipmitool) },
      power: { fake: new FakePower(fake), ipmitool: new IpmitoolPower(ipmitool, options.powerPoll) },
      raid: { 'no-raid': new NoRaid(), fake: new FakeRaid(fake) },
      rescue: { 'no-rescue': new NoRescue(), fake: new FakeRescue(fake), agent: new AgentRescue({ apiUrl: () => options.agentApiUrl ?? null, client: new AgentClient(options.agentClient) }) },
      storage: { noop: new NoopStorage(), fake: new FakeStorage() },
    },
    vendorInterfaces: { fake: new FakeVendor(fake), 'no-vendor': new NoVendor() },
    enabledHardwareTypes: options.enabledHardwareTypes,
    enabledInterfaces: options.enabledInterfaces,
    defaultInterfaces: options.defaultInterfaces,
  });
}
