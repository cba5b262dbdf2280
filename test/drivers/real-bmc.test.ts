/**
 * The ipmi hardware type against a real IPMI endpoint: the pyghmi BMC simulator on 127.0.0.1, driven
 * through the real ipmitool binary (lanplus, password through IPMI_PASSWORD).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDriverRegistry } from '../../src/drivers/builtin.js';
import { PowerActionFailed } from '../../src/drivers/errors.js';
import type { DriverRegistry } from '../../src/drivers/registry.js';
import { bmcSimulatorAvailable, startBmcSimulator } from './bmc-simulator.js';
import type { BmcSimulator } from './bmc-simulator.js';
import { DEPLOY_IMAGES, INSTANCE_IMAGES, makeNode, makeTask, RecordingBootEnvironment } from './helpers.js';

const available = await bmcSimulatorAvailable();

describe.skipIf(!available)('ipmi hardware type against a real BMC (ipmitool + pyghmi)', () => {
  let bmc: BmcSimulator;
  let registry: DriverRegistry;
  const environment = new RecordingBootEnvironment();

  beforeAll(async () => {
    bmc = await startBmcSimulator();
    registry = createDriverRegistry({
      bootEnvironment: environment,
      ipmitool: { retryDelayMs: 200, commandTimeoutMs: 10_000 },
      powerPoll: { initialIntervalMs: 100, maxIntervalMs: 500 },
    });
  });

  afterAll(async () => {
    await bmc?.stop();
  });

  function ipmiTask(driverInfo: Record<string, unknown> = {}, fields: Parameters<typeof makeNode>[0] = {}) {
    const node = makeNode({
      driver: 'ipmi',
      driver_info: { ipmi_address: '127.0.0.1', ipmi_port: bmc.port, ipmi_username: bmc.user, ipmi_password: bmc.password, ...DEPLOY_IMAGES, ...driverInfo },
      instance_info: { ...INSTANCE_IMAGES },
      ...fields,
    });
    return makeTask(registry, node);
  }

  it('powers the node on and off and reads the state back', async () => {
    const task = ipmiTask();
    const { power } = task.driver;
    await power.validate(task);
    await power.setPowerState(task, 'power off');
    expect(await power.getPowerState(task)).toBe('power off');
    await power.setPowerState(task, 'power on');
    expect(await power.getPowerState(task)).toBe('power on');
    await power.setPowerState(task, 'power off');
    expect(await power.getPowerState(task)).toBe('power off');
    expect(bmc.events.filter((e) => e.startsWith('POWER')).slice(-2)).toEqual(['POWER on', 'POWER off']);
  });

  it('reboots a node through off and on', async () => {
    const task = ipmiTask();
    await task.driver.power.setPowerState(task, 'power on');
    const before = bmc.events.length;
    await task.driver.power.reboot(task);
    expect(bmc.events.slice(before)).toEqual(['POWER off', 'POWER on']);
    expect(await task.driver.power.getPowerState(task)).toBe('power on');
  });

  it('sets the boot device to pxe for good, and disk for the next boot, reading each back', async () => {
    const task = ipmiTask();
    const { management } = task.driver;
    await management.setBootDevice(task, 'pxe', true);
    expect(await management.getBootDevice(task)).toEqual({ boot_device: 'pxe', persistent: true });
    await management.setBootDevice(task, 'disk', false);
    expect(await management.getBootDevice(task)).toEqual({ boot_device: 'disk', persistent: false });
    expect(bmc.events.filter((e) => e.startsWith('BOOTDEV')).slice(-2)).toEqual(['BOOTDEV network persistent', 'BOOTDEV hd once']);
  });

  it('deploys and tears down a ramdisk instance: boot files, persistent pxe, power on, then off', async () => {
    const task = ipmiTask({}, { provision_state: 'deploying' });
    await task.driver.power.setPowerState(task, 'power off');
    await task.driver.deploy.validate(task);
    expect(await task.driver.deploy.deploy(task)).toBe('done');
    expect(await task.driver.management.getBootDevice(task)).toEqual({ boot_device: 'pxe', persistent: true });
    expect(await task.driver.power.getPowerState(task)).toBe('power on');
    await task.driver.deploy.tearDown(task);
    expect(await task.driver.power.getPowerState(task)).toBe('power off');
    expect(environment.calls.filter((c) => c.op === 'prepare' ? c.node.uuid === task.node.uuid : c.uuid === task.node.uuid).map((c) => c.op)).toEqual(['prepare', 'cleanUp']);
  });

  it('reports a refused login as PowerActionFailed with the BMC message', async () => {
    const strict = createDriverRegistry({ ipmitool: { attempts: 1, sessionRetries: 1 } });
    const task = makeTask(strict, makeNode({ driver: 'ipmi', driver_info: { ipmi_address: '127.0.0.1', ipmi_port: bmc.port, ipmi_username: bmc.user, ipmi_password: 'wrong' } }));
    const error = await task.driver.power.getPowerState(task).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PowerActionFailed);
    expect((error as PowerActionFailed).bmcMessage).toMatch(/Unable to establish IPMI v2 \/ RMCP\+ session/);
  });
});
