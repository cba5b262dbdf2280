import { describe, expect, it } from 'vitest';
import { createDriverRegistry } from '../../src/drivers/builtin.js';
import type { Exec } from '../../src/drivers/ipmi/ipmitool.js';
import { DEPLOY_IMAGES, INSTANCE_IMAGES, makeNode, makeTask, PORTS, RecordingBootEnvironment } from './helpers.js';

const BMC_INFO = { ipmi_address: '127.0.0.1', ipmi_port: 6230, ipmi_username: 'admin', ipmi_password: 'password' };

/** An in-memory BMC behind the `Exec` seam: answers power and bootdev like ipmitool would. */
function memoryBmc(initial: 'on' | 'off' = 'off') {
  const log: string[] = [];
  let power = initial;
  const exec: Exec = async (_file, args) => {
    const command = args.slice(args.indexOf('chassis')).join(' ');
    log.push(command);
    if (command === 'chassis power status') return { stdout: `Chassis Power is ${power}\n`, stderr: '' };
    if (command === 'chassis power on') power = 'on';
    if (command === 'chassis power off') power = 'off';
    return { stdout: '', stderr: '' };
  };
  return { exec, log };
}

function setup(initial: 'on' | 'off' = 'off') {
  const environment = new RecordingBootEnvironment();
  const bmc = memoryBmc(initial);
  const registry = createDriverRegistry({ bootEnvironment: environment, ipmitool: { exec: bmc.exec } });
  return { environment, bmc, registry };
}

function ipmiNode(fields: Parameters<typeof makeNode>[0] = {}) {
  return makeNode({ driver: 'ipmi', driver_info: { ...BMC_INFO, ...DEPLOY_IMAGES }, instance_info: { ...INSTANCE_IMAGES }, ...fields });
}

describe('pxe/ipxe boot through the boot environment port', () => {
  it('prepares the deploy ramdisk with its images, interface and extra kernel parameters', async () => {
    const { environment, registry } = setup();
    const node = ipmiNode({ boot_interface: 'pxe', driver_info: { ...BMC_INFO, ...DEPLOY_IMAGES, kernel_append_params: 'console=ttyS0' } });
    const task = makeTask(registry, node);
    await task.driver.boot.prepareRamdisk(task, { 'ipa-api-url': 'http://10.0.0.1:6385' });
    expect(environment.calls).toEqual([
      {
        op: 'prepare',
        node: { uuid: node.uuid, bootInterface: 'pxe', label: 'deploy', deployKernelParams: 'console=ttyS0 ipa-api-url=http://10.0.0.1:6385' },
        ports: PORTS,
        images: {
          deployKernel: { url: DEPLOY_IMAGES.deploy_kernel, checksum: DEPLOY_IMAGES.deploy_kernel_checksum },
          deployRamdisk: { url: DEPLOY_IMAGES.deploy_ramdisk, checksum: DEPLOY_IMAGES.deploy_ramdisk_checksum },
        },
      },
    ]);
  });

  it('prepares the instance label with the instance images and the node boot mode', async () => {
    const { environment, registry } = setup();
    const node = ipmiNode({ properties: { capabilities: 'boot_mode:uefi,secure_boot:false' } });
    const task = makeTask(registry, node);
    await task.driver.boot.prepareInstance(task);
    const call = environment.calls[0];
    expect(call).toMatchObject({ op: 'prepare', node: { uuid: node.uuid, bootInterface: 'ipxe', bootMode: 'uefi', label: 'boot_ramdisk' } });
    expect(call?.op === 'prepare' && call.images.kernel).toEqual({ url: INSTANCE_IMAGES.kernel, checksum: INSTANCE_IMAGES.kernel_checksum });
    // Booting the instance needs no deploy images: they are neither asked for nor fetched.
    expect(call?.op === 'prepare' && Object.keys(call.images).sort()).toEqual(['kernel', 'ramdisk']);
  });

  it("gives the instance label the instance's kernel parameters, the deploy label the driver's", async () => {
    const { environment, registry } = setup();
    const node = ipmiNode({
      driver_info: { ...BMC_INFO, ...DEPLOY_IMAGES, kernel_append_params: 'ipa-debug=1' },
      instance_info: { ...INSTANCE_IMAGES, kernel_append_params: 'console=ttyS0' },
    });
    const task = makeTask(registry, node);
    await task.driver.boot.prepareRamdisk(task);
    await task.driver.boot.prepareInstance(task);
    expect(environment.calls.map((c) => c.op === 'prepare' && c.node)).toEqual([
      { uuid: node.uuid, bootInterface: 'ipxe', label: 'deploy', deployKernelParams: 'ipa-debug=1' },
      { uuid: node.uuid, bootInterface: 'ipxe', label: 'boot_ramdisk', instanceKernelParams: 'console=ttyS0' },
    ]);
  });

  it('refuses a node without a pxe-enabled port or without deploy images', async () => {
    const { registry } = setup();
    const task = makeTask(registry, ipmiNode(), [{ address: '52:54:00:00:00:01', pxeEnabled: false }]);
    await expect(task.driver.boot.validate(task)).rejects.toThrow('none is pxe-enabled');
    const bare = makeTask(registry, ipmiNode({ driver_info: { ...BMC_INFO } }));
    await expect(bare.driver.boot.validate(bare)).rejects.toMatchObject({ field: 'driver_info.deploy_kernel', httpStatus: 400 });
  });

  it('names a checksum that is missing or malformed', async () => {
    const { registry } = setup();
    const noChecksum = makeTask(registry, ipmiNode({ instance_info: { kernel: INSTANCE_IMAGES.kernel, ramdisk: INSTANCE_IMAGES.ramdisk, ramdisk_checksum: INSTANCE_IMAGES.ramdisk_checksum } }));
    await expect(noChecksum.driver.deploy.validate(noChecksum)).rejects.toThrow('instance_info.kernel_checksum is required');
    const bad = makeTask(registry, ipmiNode({ instance_info: { ...INSTANCE_IMAGES, ramdisk_checksum: 'crc32:1234' } }));
    await expect(bad.driver.deploy.validate(bad)).rejects.toThrow('instance_info.ramdisk_checksum must be sha256:<hex>');
    const ftp = makeTask(registry, ipmiNode({ instance_info: { ...INSTANCE_IMAGES, kernel: 'ftp://x/vmlinuz' } }));
    await expect(ftp.driver.deploy.validate(ftp)).rejects.toThrow('instance_info.kernel must be a file://, http:// or https:// URL');
  });

  it('refuses, when validating an ipxe node, kernel parameters iPXE would run as commands, naming the field', async () => {
    const { registry } = setup();
    const instance = makeTask(registry, ipmiNode({ instance_info: { ...INSTANCE_IMAGES, kernel_append_params: 'quiet || reboot' } }));
    await expect(instance.driver.boot.validate(instance)).rejects.toMatchObject({ field: 'instance_info.kernel_append_params', httpStatus: 400 });
    const deploy = makeTask(registry, ipmiNode({ driver_info: { ...BMC_INFO, ...DEPLOY_IMAGES, kernel_append_params: '#debug' } }));
    await expect(deploy.driver.boot.validate(deploy)).rejects.toMatchObject({ field: 'driver_info.kernel_append_params' });
    // PXELINUX and GRUB take them as they are (GRUB quotes them): a pxe node is fine.
    const pxe = makeTask(registry, ipmiNode({ boot_interface: 'pxe', instance_info: { ...INSTANCE_IMAGES, kernel_append_params: 'quiet || reboot' } }));
    await expect(pxe.driver.boot.validate(pxe)).resolves.toBeUndefined();
  });

  it('refuses kernel parameters that would break out of the kernel line', async () => {
    const { registry, environment } = setup();
    const task = makeTask(registry, ipmiNode({ instance_info: { ...INSTANCE_IMAGES, kernel_append_params: 'quiet\nshell' } }));
    await expect(task.driver.boot.prepareInstance(task)).rejects.toMatchObject({ field: 'instance_info.kernel_append_params' });
    expect(environment.calls).toEqual([]);
  });
});

describe('ramdisk deploy', () => {
  it('deploys: instance boot files, persistent pxe, power on', async () => {
    const { environment, bmc, registry } = setup('off');
    const task = makeTask(registry, ipmiNode());
    await task.driver.deploy.validate(task);
    await task.driver.deploy.prepare(task);
    expect(await task.driver.deploy.deploy(task)).toBe('done');
    expect(environment.calls.map((c) => c.op === 'prepare' && c.node.label)).toEqual(['boot_ramdisk']);
    expect(bmc.log).toEqual(['chassis bootdev pxe options=persistent', 'chassis power status', 'chassis power on', 'chassis power status']);
  });

  it('reboots a node that is already on so it boots the instance', async () => {
    const { bmc, registry } = setup('on');
    const task = makeTask(registry, ipmiNode());
    await task.driver.deploy.deploy(task);
    expect(bmc.log.filter((c) => c !== 'chassis power status')).toEqual(['chassis bootdev pxe options=persistent', 'chassis power off', 'chassis power on']);
  });

  it('tears down: power off, then boot files removed', async () => {
    const { environment, bmc, registry } = setup('on');
    const node = ipmiNode({ provision_state: 'deleting' });
    const task = makeTask(registry, node);
    await task.driver.deploy.tearDown(task);
    expect(bmc.log).toEqual(['chassis power off', 'chassis power status']);
    expect(environment.calls).toEqual([{ op: 'cleanUp', uuid: node.uuid, ports: PORTS }]);
  });

  it('takes over an active node by rebuilding its instance boot files, without touching the BMC', async () => {
    const { environment, bmc, registry } = setup('on');
    const task = makeTask(registry, ipmiNode({ provision_state: 'active' }));
    await task.driver.deploy.takeOver(task);
    expect(environment.calls.map((c) => c.op === 'prepare' && c.node.label)).toEqual(['boot_ramdisk']);
    expect(bmc.log).toEqual([]);
  });

  it('takes over a cleaning node with the deploy ramdisk', async () => {
    const { environment, registry } = setup();
    const task = makeTask(registry, ipmiNode({ provision_state: 'clean wait' }));
    await task.driver.deploy.takeOver(task);
    expect(environment.calls.map((c) => c.op === 'prepare' && c.node.label)).toEqual(['deploy']);
  });

  it('refuses to deploy without instance images, before any side effect', async () => {
    const { environment, bmc, registry } = setup();
    const task = makeTask(registry, ipmiNode({ instance_info: {} }));
    await expect(task.driver.deploy.validate(task)).rejects.toThrow('instance_info.kernel is required by the ramdisk deploy interface');
    await expect(task.driver.deploy.deploy(task)).rejects.toThrow('instance_info.kernel is required');
    expect(environment.calls).toEqual([]);
    expect(bmc.log).toEqual([]);
  });
});
