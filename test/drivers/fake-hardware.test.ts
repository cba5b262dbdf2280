import { describe, expect, it } from 'vitest';
import { createDriverRegistry } from '../../src/drivers/builtin.js';
import { FakeHardwareState } from '../../src/drivers/fake/fake-state.js';
import { makeNode, makeTask } from './helpers.js';

function setup() {
  const state = new FakeHardwareState();
  const registry = createDriverRegistry({ fakeState: state });
  return { state, registry };
}

describe('fake-hardware', () => {
  it('composes the fake implementation of every interface by default', () => {
    const { registry } = setup();
    const driver = registry.interfacesFor({ driver: 'fake-hardware' });
    expect(driver.names).toMatchObject({ power: 'fake', management: 'fake', boot: 'fake', deploy: 'fake', console: 'fake', raid: 'fake', bios: 'fake', storage: 'noop', network: 'noop' });
  });

  it('remembers power state per node, starting from the recorded one', async () => {
    const { registry } = setup();
    const a = makeTask(registry, makeNode());
    const b = makeTask(registry, makeNode({ power_state: 'power on' }));
    expect(await a.driver.power.getPowerState(a)).toBe('power off');
    expect(await b.driver.power.getPowerState(b)).toBe('power on');
    await a.driver.power.setPowerState(a, 'power on');
    await b.driver.power.setPowerState(b, 'power off');
    expect(await a.driver.power.getPowerState(a)).toBe('power on');
    expect(await b.driver.power.getPowerState(b)).toBe('power off');
  });

  it('leaves a node on after a reboot, even one that was off', async () => {
    const { registry, state } = setup();
    const task = makeTask(registry, makeNode());
    await task.driver.power.reboot(task);
    expect(await task.driver.power.getPowerState(task)).toBe('power on');
    expect(state.peek(task.node.uuid)?.powerOns).toBe(1);
  });

  it('keeps the boot device and its persistence', async () => {
    const { registry } = setup();
    const task = makeTask(registry, makeNode());
    expect(await task.driver.management.getBootDevice(task)).toEqual({ boot_device: 'pxe', persistent: false });
    expect(await task.driver.management.getSupportedBootDevices(task)).toContain('pxe');
    await task.driver.management.setBootDevice(task, 'pxe', true);
    expect(await task.driver.management.getBootDevice(task)).toEqual({ boot_device: 'pxe', persistent: true });
    await task.driver.management.setBootDevice(task, 'disk', false);
    expect(await task.driver.management.getBootDevice(task)).toEqual({ boot_device: 'disk', persistent: false });
  });

  it('refuses a boot device it does not know, naming the valid ones', async () => {
    const { registry } = setup();
    const task = makeTask(registry, makeNode());
    // A raw string from a caller that skipped the API's validation.
    await expect(task.driver.management.setBootDevice(task, 'floppy' as 'pxe', false)).rejects.toMatchObject({
      name: 'InvalidParameterValue',
      httpStatus: 400,
      message: expect.stringContaining('pxe, disk, cdrom, bios, safe'),
    });
  });

  it('deploys to an active, powered-on node with its instance prepared, and tears down to off', async () => {
    const { registry, state } = setup();
    const task = makeTask(registry, makeNode());
    await task.driver.deploy.validate(task);
    await task.driver.deploy.prepare(task);
    expect(await task.driver.deploy.deploy(task)).toBe('done');
    expect(state.peek(task.node.uuid)).toMatchObject({ power: 'power on', prepared: 'instance' });
    await task.driver.deploy.tearDown(task);
    expect(state.peek(task.node.uuid)).toMatchObject({ power: 'power off', prepared: null });
  });

  it('rebuilds the instance boot state on take-over and drops it on clean-up', async () => {
    const { registry, state } = setup();
    const task = makeTask(registry, makeNode({ provision_state: 'active' }));
    await task.driver.deploy.takeOver(task);
    expect(state.peek(task.node.uuid)?.prepared).toBe('instance');
    await task.driver.deploy.cleanUp(task);
    expect(state.peek(task.node.uuid)?.prepared).toBeNull();
  });

  it('prepares and cleans up the deploy ramdisk', async () => {
    const { registry, state } = setup();
    const task = makeTask(registry, makeNode());
    await task.driver.boot.validate(task);
    await task.driver.boot.prepareRamdisk(task);
    expect(state.peek(task.node.uuid)?.prepared).toBe('ramdisk');
    await task.driver.boot.cleanUpRamdisk(task);
    expect(state.peek(task.node.uuid)?.prepared).toBeNull();
  });

  it('validates every interface of a node with empty driver_info', async () => {
    const { registry } = setup();
    const task = makeTask(registry, makeNode());
    for (const iface of [task.driver.power, task.driver.management, task.driver.boot, task.driver.deploy]) {
      await expect(iface.validate(task)).resolves.toBeUndefined();
    }
  });

  it('keeps the machines of separate registries apart', async () => {
    const one = setup();
    const two = setup();
    const node = makeNode();
    const a = makeTask(one.registry, node);
    await a.driver.power.setPowerState(a, 'power on');
    const b = makeTask(two.registry, node);
    expect(await b.driver.power.getPowerState(b)).toBe('power off');
  });
});
