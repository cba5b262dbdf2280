/**
 * The storage and BIOS interfaces: the hardware types' choices and defaults as Ironic picks them
 * (storage `noop`, Ironic's `default_storage_interface`; BIOS the first supported, `fake` on
 * fake-hardware), `noop`/`fake` storage and `fake` BIOS validating, `no-bios` refusing in Ironic's
 * words, and a registry whose configuration no longer enables `noop` storage falling back.
 */
import { describe, expect, it } from 'vitest';
import { createDriverRegistry, UnsupportedDriverExtension } from '../../src/drivers/index.js';
import type { DriverTask } from '../../src/drivers/index.js';

const logger = { debug: () => undefined, info: () => undefined, warn: () => undefined };

function taskFor(driver: string, interfaces: Record<string, string> = {}): DriverTask {
  const node = { uuid: '1be26c0b-03f2-4d2d-ae87-c02d7f33c123', driver, driver_info: {}, driver_internal_info: {}, instance_info: {}, properties: {}, power_state: 'power off', provision_state: 'active', ...interfaces };
  return createDriverRegistry().bind({ node: node as never, ports: [], logger });
}

describe('storage and BIOS interfaces of the hardware types', () => {
  it('gives fake-hardware fake and no-bios BIOS (fake by default) and fake and noop storage (noop by default, as Ironic configures it)', () => {
    const registry = createDriverRegistry();
    expect(registry.get('fake-hardware').interfaces.bios).toEqual({ enabled: ['fake', 'no-bios'], default: 'fake' });
    expect(registry.get('fake-hardware').interfaces.storage).toEqual({ enabled: ['noop', 'fake'], default: 'noop' });
    expect(registry.get('ipmi').interfaces.bios).toEqual({ enabled: ['no-bios'], default: 'no-bios' });
    expect(registry.get('ipmi').interfaces.storage).toEqual({ enabled: ['noop'], default: 'noop' });
  });

  it('fills in the defaults of a node that names none, and refuses names the hardware type does not offer', () => {
    const registry = createDriverRegistry();
    expect(registry.validateInterfaces('fake-hardware')).toMatchObject({ bios_interface: 'fake', storage_interface: 'noop' });
    expect(registry.validateInterfaces('fake-hardware', { storage_interface: 'fake', bios_interface: 'no-bios' })).toMatchObject({ bios_interface: 'no-bios', storage_interface: 'fake' });
    expect(() => registry.validateInterfaces('ipmi', { bios_interface: 'fake' })).toThrow(/bios.*"fake".*no-bios/);
    expect(() => registry.validateInterfaces('ipmi', { storage_interface: 'cinder' })).toThrow(/storage.*"cinder".*noop/);
  });

  it('takes the first enabled storage interface when noop is not enabled, and an operator\'s default over noop', () => {
    expect(createDriverRegistry({ enabledInterfaces: { storage: ['fake'] }, enabledHardwareTypes: ['fake-hardware'] }).get('fake-hardware').interfaces.storage).toEqual({ enabled: ['fake'], default: 'fake' });
    expect(createDriverRegistry({ defaultInterfaces: { storage: 'fake' } }).get('fake-hardware').interfaces.storage.default).toBe('fake');
  });

  it('registers both interface types for every hardware type, as conductors announce them', () => {
    const rows = createDriverRegistry().registrations().filter((r) => r.interfaceType === 'bios' || r.interfaceType === 'storage');
    expect(rows.map((r) => `${r.hardwareType} ${r.interfaceType} ${r.interfaceName}${r.default ? ' (default)' : ''}`).sort()).toEqual([
      'fake-hardware bios fake (default)', 'fake-hardware bios no-bios', 'fake-hardware storage fake', 'fake-hardware storage noop (default)',
      'ipmi bios no-bios (default)', 'ipmi storage noop (default)',
    ]);
  });
});

describe('storage and BIOS implementations', () => {
  it('noop and fake storage validate, attaching nothing', async () => {
    for (const storage of ['noop', 'fake']) {
      const task = taskFor('fake-hardware', { storage_interface: storage });
      expect(task.driver.names.storage).toBe(storage);
      await expect(task.driver.storage.validate(task)).resolves.toBeUndefined();
    }
    const ipmi = taskFor('ipmi');
    await expect(ipmi.driver.storage.validate(ipmi)).resolves.toBeUndefined();
  });

  it('fake BIOS validates; no-bios refuses with Ironic\'s UnsupportedDriverExtension', async () => {
    const fake = taskFor('fake-hardware');
    expect(fake.driver.names.bios).toBe('fake');
    await expect(fake.driver.bios.validate(fake)).resolves.toBeUndefined();
    for (const task of [taskFor('ipmi'), taskFor('fake-hardware', { bios_interface: 'no-bios' })]) {
      const refused = task.driver.bios.validate(task);
      await expect(refused).rejects.toBeInstanceOf(UnsupportedDriverExtension);
      await expect(refused).rejects.toThrow(`Driver ${task.node.driver} does not support bios (disabled or not implemented)`);
    }
  });
});
