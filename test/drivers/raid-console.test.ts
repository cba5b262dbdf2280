/**
 * The RAID and console interfaces: Ironic's RAID configuration rules (`checkRaidConfig`), the fake
 * implementations (which succeed, recording the console on the fake machine) and the `no-*` ones
 * (which refuse with UnsupportedDriverExtension), and the hardware types' choices and defaults.
 */
import { describe, expect, it } from 'vitest';
import { checkRaidConfig, createDriverRegistry, FakeHardwareState, LOGICAL_DISK_PROPERTIES, UnsupportedDriverExtension } from '../../src/drivers/index.js';
import type { DriverTask } from '../../src/drivers/index.js';

const logger = { debug: () => undefined, info: () => undefined, warn: () => undefined };

function taskFor(driver: string, interfaces: Record<string, string> = {}, state = new FakeHardwareState()): DriverTask {
  const node = { uuid: '1be26c0b-03f2-4d2d-ae87-c02d7f33c123', driver, driver_info: {}, driver_internal_info: {}, instance_info: {}, properties: {}, power_state: 'power off', provision_state: 'active', ...interfaces };
  return createDriverRegistry({ fakeState: state }).bind({ node: node as never, ports: [], logger });
}

describe('RAID configuration rules', () => {
  it('accepts Ironic\'s shapes: levels, MAX, physical disks with a controller, one root volume', () => {
    const config = {
      logical_disks: [
        { size_gb: 'MAX', raid_level: 'JBOD', is_root_volume: true, disk_type: 'ssd', interface_type: 'sas', volume_name: 'root' },
        { size_gb: 0, raid_level: '1+0', controller: 'RAID.1', physical_disks: [{ a: 1 }, { b: 2 }], number_of_physical_disks: 4, share_physical_disks: false },
      ],
    };
    expect(checkRaidConfig(config)).toBe(config);
  });

  it('names the offending key of each refusal', () => {
    expect(() => checkRaidConfig('x')).toThrow(/^target_raid_config expected a JSON object$/);
    expect(() => checkRaidConfig({})).toThrow(/^target_raid_config\.logical_disks is required$/);
    expect(() => checkRaidConfig({ logical_disks: [{ size_gb: 1.5, raid_level: '1' }] })).toThrow(/logical_disks\[0\]\.size_gb expected a whole number/);
    expect(() => checkRaidConfig({ logical_disks: [{ size_gb: 1, raid_level: '1', number_of_physical_disks: 0 }] })).toThrow(/number_of_physical_disks expected a whole number greater than 0/);
    expect(() => checkRaidConfig({ logical_disks: [{ size_gb: 1, raid_level: '1', controller: 'c', physical_disks: [{ a: 1 }] }] })).toThrow(/physical_disks expected a list of disk names, or of at least 2 objects/);
    expect(() => checkRaidConfig({ logical_disks: [{ size_gb: 1, raid_level: '1', disk_type: 'tape' }] })).toThrow(/disk_type expected one of hdd, ssd/);
  });

  it('describes every logical disk property it checks', () => {
    expect(Object.keys(LOGICAL_DISK_PROPERTIES).sort()).toEqual(['controller', 'disk_type', 'interface_type', 'is_root_volume', 'number_of_physical_disks', 'physical_disks', 'raid_level', 'share_physical_disks', 'size_gb', 'volume_name']);
  });
});

describe('RAID and console implementations', () => {
  it('gives fake-hardware fake RAID and console by default (Ironic\'s order), ipmi no-raid and no-console', () => {
    const registry = createDriverRegistry();
    expect(registry.get('fake-hardware').interfaces.raid).toEqual({ enabled: ['fake', 'no-raid'], default: 'fake' });
    expect(registry.get('fake-hardware').interfaces.console).toEqual({ enabled: ['fake', 'no-console'], default: 'fake' });
    expect(registry.get('ipmi').interfaces.raid).toEqual({ enabled: ['no-raid'], default: 'no-raid' });
    expect(registry.get('ipmi').interfaces.console.default).toBe('no-console');
  });

  it('fake RAID checks the configuration; no-raid refuses it but still describes the properties', async () => {
    const fake = taskFor('fake-hardware');
    await expect(fake.driver.raid.validateRaidConfig(fake, { logical_disks: [{ size_gb: 1, raid_level: '5' }] })).resolves.toBeUndefined();
    await expect(fake.driver.raid.validateRaidConfig(fake, { logical_disks: [{ size_gb: 1 }] })).rejects.toThrow(/raid_level is required/);
    const none = taskFor('ipmi');
    await expect(none.driver.raid.validateRaidConfig(none, { logical_disks: [{ size_gb: 1, raid_level: '5' }] })).rejects.toBeInstanceOf(UnsupportedDriverExtension);
    await expect(none.driver.raid.validate(none)).rejects.toThrow(/does not support raid/);
    expect(none.driver.raid.logicalDiskProperties()).toEqual(LOGICAL_DISK_PROPERTIES);
  });

  it('fake console records start and stop on the machine and has {} to connect to; no-console refuses all', async () => {
    const state = new FakeHardwareState();
    const fake = taskFor('fake-hardware', {}, state);
    await fake.driver.console.start(fake);
    expect(state.machine(fake.node).consoleStarted).toBe(true);
    expect(await fake.driver.console.info(fake)).toEqual({});
    await fake.driver.console.stop(fake);
    expect(state.machine(fake.node).consoleStarted).toBe(false);
    const none = taskFor('fake-hardware', { console_interface: 'no-console' });
    for (const verb of ['validate', 'start', 'stop', 'info'] as const) await expect(none.driver.console[verb](none)).rejects.toBeInstanceOf(UnsupportedDriverExtension);
  });
});
