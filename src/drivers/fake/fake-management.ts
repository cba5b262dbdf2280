/**
 * Fake management: remembers the boot device per node like a BMC would. Its indicators are Ironic's
 * fake ones (`led-0` on the chassis, read-only; `led` on the system), reading `ON` until set; unlike
 * Ironic's, the `led` can be set, and an NMI is "injected" (counted on the fake machine) — no
 * hardware behind either, as with every `fake` interface.
 */
import { InvalidParameterValue } from '../errors.js';
import type { BootDevice, BootDeviceState, IndicatorMap, IndicatorState, ManagementInterface } from '../management.js';
import { BOOT_DEVICES } from '../management.js';
import type { DriverTask } from '../task.js';
import { NODE_BOOT_MODES } from '../capabilities.js';
import type { NodeBootMode } from '../capabilities.js';
import type { FakeHardwareState } from './fake-state.js';

export class FakeManagement implements ManagementInterface {
  constructor(private readonly state: FakeHardwareState) {}

  async getSupportedBootDevices(): Promise<readonly BootDevice[]> {
    return BOOT_DEVICES;
  }

  async setBootDevice(task: DriverTask, device: BootDevice, persistent: boolean): Promise<void> {
    if (!BOOT_DEVICES.includes(device)) throw new InvalidParameterValue('boot_device', `must be one of ${BOOT_DEVICES.join(', ')}`);
    const machine = this.state.machine(task.node);
    machine.bootDevice = device;
    machine.persistent = persistent;
  }

  async getBootDevice(task: DriverTask): Promise<BootDeviceState> {
    const machine = this.state.machine(task.node);
    return { boot_device: machine.bootDevice, persistent: machine.persistent };
  }

  async validate(): Promise<void> {}

  /** What it was set to; unknown (null) until then, as a machine whose firmware nothing asked. */
  async getBootMode(task: DriverTask): Promise<NodeBootMode | null> {
    return this.state.machine(task.node).bootMode ?? null;
  }

  async setBootMode(task: DriverTask, mode: NodeBootMode): Promise<void> {
    if (!NODE_BOOT_MODES.includes(mode)) throw new InvalidParameterValue('boot_mode', `must be one of ${NODE_BOOT_MODES.join(', ')}`);
    this.state.machine(task.node).bootMode = mode;
  }

  async getSecureBootState(task: DriverTask): Promise<boolean | null> {
    return this.state.machine(task.node).secureBoot ?? null;
  }

  async setSecureBootState(task: DriverTask, on: boolean): Promise<void> {
    this.state.machine(task.node).secureBoot = on;
  }

  async injectNmi(task: DriverTask): Promise<void> {
    const machine = this.state.machine(task.node);
    machine.nmis = (machine.nmis ?? 0) + 1;
  }

  async supportedIndicators(): Promise<IndicatorMap> {
    return {
      chassis: { 'led-0': { readonly: true, states: ['OFF', 'ON'] } },
      system: { led: { readonly: false, states: ['BLINKING', 'OFF', 'ON'] } },
    };
  }

  async getIndicatorState(task: DriverTask, component: string, name: string): Promise<IndicatorState> {
    await this.indicator(component, name);
    const states = this.state.machine(task.node).indicators;
    const key = `${name}@${component}`;
    return states !== undefined && Object.hasOwn(states, key) ? (states[key] as IndicatorState) : 'ON';
  }

  async setIndicatorState(task: DriverTask, component: string, name: string, state: IndicatorState): Promise<void> {
    const info = await this.indicator(component, name);
    if (info.readonly) throw new InvalidParameterValue('indicator', `${name}@${component} is read-only`);
    if (!info.states.includes(state)) throw new InvalidParameterValue('state', `must be one of ${info.states.join(', ')} for ${name}@${component}, not ${JSON.stringify(state)}`);
    const machine = this.state.machine(task.node);
    // A map without a prototype: the key comes from the request path.
    (machine.indicators ??= Object.create(null) as Record<string, string>)[`${name}@${component}`] = state;
  }

  private async indicator(component: string, name: string) {
    const all = await this.supportedIndicators();
    const names = Object.hasOwn(all, component) ? all[component] : undefined;
    if (names === undefined) throw new InvalidParameterValue('indicator', `invalid component ${JSON.stringify(component)}; this node has ${Object.keys(all).join(', ')}`);
    const info = Object.hasOwn(names, name) ? names[name] : undefined;
    if (info === undefined) throw new InvalidParameterValue('indicator', `invalid indicator ${JSON.stringify(name)} of component ${component}; it has ${Object.keys(names).join(', ')}`);
    return info;
  }
}
