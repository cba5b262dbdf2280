import { describe, expect, it } from 'vitest';
import type { BootEnvironment } from '../../src/boot/boot-environment.js';
import { ConfigError } from '../../src/common/errors.js';
import { createDriverRegistry } from '../../src/drivers/builtin.js';
import { UnknownDriver, UnknownInterface } from '../../src/drivers/errors.js';
import { INTERFACE_TYPES } from '../../src/drivers/hardware-type.js';
import type { BootEnvironmentPort } from '../../src/drivers/pxe/boot-environment-port.js';
import type { BindInput } from '../../src/drivers/registry.js';
import type { NodeRow } from '../../src/cluster/reservations.js';
import { makeNode, makeTask, PORTS } from './helpers.js';

describe('driver registry', () => {
  it('lists both built-in hardware types with usable interfaces and defaults', () => {
    const list = createDriverRegistry().list();
    expect(list.map((t) => t.name)).toEqual(['fake-hardware', 'ipmi']);
    const ipmi = list[1]!;
    expect(ipmi.interfaces.power).toEqual({ enabled: ['ipmitool'], default: 'ipmitool' });
    expect(ipmi.interfaces.boot).toEqual({ enabled: ['ipxe', 'pxe'], default: 'ipxe' });
    expect(ipmi.interfaces.deploy.default).toBe('ramdisk');
    for (const type of INTERFACE_TYPES) expect(ipmi.interfaces[type].enabled).toContain(ipmi.interfaces[type].default);
  });

  it('resolves every interface field, keeping the requested ones', () => {
    const registry = createDriverRegistry();
    expect(registry.validateInterfaces('ipmi', { boot_interface: 'pxe', console_interface: null })).toEqual({
      bios_interface: 'no-bios',
      boot_interface: 'pxe',
      console_interface: 'no-console',
      deploy_interface: 'ramdisk',
      inspect_interface: 'no-inspect',
      management_interface: 'ipmitool',
      network_interface: 'noop',
      power_interface: 'ipmitool',
      raid_interface: 'no-raid',
      rescue_interface: 'no-rescue',
      storage_interface: 'noop',
      vendor_interface: 'no-vendor',
    });
  });

  it('refuses an unknown driver with 400, listing the enabled ones', () => {
    const registry = createDriverRegistry();
    let error: unknown;
    try {
      registry.validateInterfaces('redfish');
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(UnknownDriver);
    expect(error).toMatchObject({ httpStatus: 400, valid: ['fake-hardware', 'ipmi'] });
    expect((error as Error).message).toBe('driver "redfish" is not enabled; valid drivers: fake-hardware, ipmi');
  });

  it('refuses an interface the hardware type does not support, listing the valid ones', () => {
    const registry = createDriverRegistry();
    expect(() => registry.validateInterfaces('ipmi', { power_interface: 'fake' })).toThrow(
      'power_interface "fake" is not enabled for driver ipmi; valid power interfaces: ipmitool',
    );
    expect(() => registry.validateInterfaces('fake-hardware', { boot_interface: 'http' })).toThrow(UnknownInterface);
    expect(() => registry.validateInterfaces('fake-hardware', { boot_interface: 'http' })).toThrow('valid boot interfaces: fake, pxe, ipxe');
    expect(() => registry.validateInterfaces('fake-hardware', { deploy_interface: 'agent' })).toThrow('valid deploy interfaces: fake, ramdisk');
    // The generic network-boot interfaces work on fake hardware, as in Ironic; fake stays the default.
    expect(registry.validateInterfaces('fake-hardware', { boot_interface: 'pxe', deploy_interface: 'ramdisk' })).toMatchObject({ boot_interface: 'pxe', deploy_interface: 'ramdisk', power_interface: 'fake' });
    expect(registry.validateInterfaces('fake-hardware')).toMatchObject({ boot_interface: 'fake', deploy_interface: 'fake' });
  });

  it('honours enabled interfaces and the configured default', () => {
    const registry = createDriverRegistry({ enabledInterfaces: { boot: ['fake', 'pxe'] }, defaultInterfaces: { boot: 'pxe' } });
    expect(registry.get('ipmi').interfaces.boot).toEqual({ enabled: ['pxe'], default: 'pxe' });
    expect(() => registry.validateInterfaces('ipmi', { boot_interface: 'ipxe' })).toThrow('valid boot interfaces: pxe');
  });

  it('enables only the hardware types asked for', () => {
    const registry = createDriverRegistry({ enabledHardwareTypes: ['fake-hardware'] });
    expect(registry.driverNames()).toEqual(['fake-hardware']);
    expect(() => registry.interfacesFor({ driver: 'ipmi' })).toThrow('valid drivers: fake-hardware');
  });

  it('fails at construction on configuration that leaves a hardware type unusable', () => {
    expect(() => createDriverRegistry({ enabledHardwareTypes: ['ilo'] })).toThrow(ConfigError);
    expect(() => createDriverRegistry({ enabledInterfaces: { power: ['fake'] } })).toThrow('enabled_power_interfaces enables none of ipmitool');
  });

  it('composes a node by its interface fields, refusing one that is no longer enabled', () => {
    const registry = createDriverRegistry();
    const driver = registry.interfacesFor({ driver: 'ipmi', boot_interface: 'pxe' });
    expect(driver.names.boot).toBe('pxe');
    expect(driver.hardwareType).toBe('ipmi');
    expect(() => registry.interfacesFor({ driver: 'ipmi', deploy_interface: 'fake' })).toThrow('valid deploy interfaces: ramdisk, direct');
  });

  it('binds a task carrying the node, ports and composed driver', () => {
    const registry = createDriverRegistry();
    const node = makeNode({ driver: 'ipmi' });
    const task = makeTask(registry, node);
    expect(task.node).toBe(node);
    expect(task.ports).toBe(PORTS);
    expect(task.driver.names.power).toBe('ipmitool');
  });

  it('registers one row per usable implementation with exactly one default per interface type', () => {
    const rows = createDriverRegistry().registrations();
    const ipmiBoot = rows.filter((r) => r.hardwareType === 'ipmi' && r.interfaceType === 'boot');
    expect(ipmiBoot).toEqual([
      { hardwareType: 'ipmi', interfaceType: 'boot', interfaceName: 'ipxe', default: true },
      { hardwareType: 'ipmi', interfaceType: 'boot', interfaceName: 'pxe', default: false },
    ]);
    for (const hw of ['fake-hardware', 'ipmi']) {
      for (const type of INTERFACE_TYPES) {
        expect(rows.filter((r) => r.hardwareType === hw && r.interfaceType === type && r.default)).toHaveLength(1);
      }
    }
  });

  it('without a boot environment, network boot fails with 503 rather than writing anywhere', async () => {
    const registry = createDriverRegistry();
    const task = makeTask(registry, makeNode({ driver: 'ipmi', driver_info: {} }));
    await expect(task.driver.boot.cleanUpInstance(task)).rejects.toMatchObject({ name: 'BootEnvironmentUnavailable', httpStatus: 503 });
  });

  it('accepts the boot environment of src/boot as the port, unchanged', () => {
    // Compile-time check: if src/boot's signatures drift from the port, this file stops compiling.
    const accept = (port: BootEnvironmentPort): BootEnvironmentPort => port;
    const fromBoot = (env: BootEnvironment): BootEnvironmentPort => accept(env);
    expect(typeof fromBoot).toBe('function');
  });

  it('binds a node row of the database as it is', () => {
    // Compile-time check: the conductor's adapter passes `task.node` (a NodeRow) straight through.
    const fromRow = (row: NodeRow): BindInput['node'] => row;
    expect(typeof fromRow).toBe('function');
  });
});
