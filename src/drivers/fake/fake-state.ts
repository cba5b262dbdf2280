/**
 * The fake hardware's "machines": per node, a power state, a boot device and what boot files would
 * be prepared. Shared by the fake interfaces of one registry so that a fake deploy's power-on is what
 * the fake power interface reports afterwards. In memory: a conductor restart forgets it, and the
 * fake power interface then starts again from the node's recorded `power_state`.
 */
import type { BootDevice } from '../management.js';
import type { PowerState } from '../power.js';
import type { DriverNode } from '../task.js';

/** What the fake boot interface has prepared for a node. */
export const FAKE_BOOT_LABELS = ['ramdisk', 'instance', 'localboot'] as const;
export type FakeBootLabel = (typeof FAKE_BOOT_LABELS)[number];

/** One simulated machine. */
export interface FakeMachine {
  power: PowerState;
  bootDevice: BootDevice | null;
  persistent: boolean | null;
  /** Prepared boot files, or null when none. */
  prepared: FakeBootLabel | null;
  /** The kernel parameters of the last ramdisk prepared (the agent's `ipa-*`). */
  ramdiskParams?: Readonly<Record<string, string>>;
  /** How many times the machine was powered on (reboots included), for tests and demos. */
  powerOns: number;
  /** How many times the fake inspect interface "inspected" it. */
  inspections: number;
  /** True while the fake rescue interface has it rescued. */
  rescued: boolean;
  /** True while the fake console interface has its console started (absent: never started). */
  consoleStarted?: boolean;
  /** Clean steps the fake deploy interface "ran", in order (`deploy.erase_devices_metadata`…). */
  cleanSteps: string[];
  /** The boot mode the fake management interface was set to (absent: never set, reported unknown). */
  bootMode?: 'bios' | 'uefi';
  /** The secure boot state the fake management interface was set to (absent: never set, reported unknown). */
  secureBoot?: boolean;
  /** Deploy steps the fake BIOS and RAID interfaces "ran", in order (`bios.apply_configuration`…). */
  deploySteps: string[];
  /** Vendor methods the fake vendor interface ran, in order (absent: none yet). */
  vendorCalls?: Array<{ method: string; httpMethod: string; result: unknown }>;
  /** How many NMIs the fake management interface "injected" (absent: none). */
  nmis?: number;
  /** Indicator states the fake management interface was set to, by `name@component`. */
  indicators?: Record<string, string>;
}

export class FakeHardwareState {
  private readonly machines = new Map<string, FakeMachine>();

  /**
   * The node's machine, created on first use from its recorded power state (off when unknown),
   * booting from the network once — what Ironic's fake management reports for a machine.
   */
  machine(node: Pick<DriverNode, 'uuid' | 'power_state'>): FakeMachine {
    let machine = this.machines.get(node.uuid);
    if (machine === undefined) {
      machine = { power: node.power_state === 'power on' ? 'power on' : 'power off', bootDevice: 'pxe', persistent: false, prepared: null, powerOns: 0, inspections: 0, rescued: false, cleanSteps: [], deploySteps: [] };
      this.machines.set(node.uuid, machine);
    }
    return machine;
  }

  /** A copy of the node's machine, or undefined if no fake interface has touched it. */
  peek(uuid: string): FakeMachine | undefined {
    const machine = this.machines.get(uuid);
    return machine === undefined ? undefined : { ...machine, cleanSteps: [...machine.cleanSteps], deploySteps: [...machine.deploySteps] };
  }

  /** Forgets a node (e.g. when it is deleted). */
  forget(uuid: string): void {
    this.machines.delete(uuid);
  }
}
