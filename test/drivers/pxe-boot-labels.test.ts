import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { BootInterface } from '../../src/boot/types.js';
import { createDriverRegistry } from '../../src/drivers/builtin.js';
import type { Exec } from '../../src/drivers/ipmi/ipmitool.js';
import { sandbox } from '../boot/helpers.js';
import type { BootSandbox } from '../boot/helpers.js';
import { makeNode, makeTask, PORTS } from './helpers.js';

/**
 * The pxe/ipxe boot interfaces against a real boot environment: which labels, parameters and image
 * files each preparation really writes, for every config format.
 */
const BMC_INFO = { ipmi_address: '127.0.0.1', ipmi_port: 6230, ipmi_username: 'admin', ipmi_password: 'password' };
const noBmc: Exec = async () => {
  throw new Error('the boot interface must not talk to the BMC');
};

let s: BootSandbox;
beforeEach(async () => {
  s = await sandbox();
});
afterEach(async () => {
  await s.dispose();
});

const formats: Array<{ name: string; iface: BootInterface; mode: 'bios' | 'uefi'; root: () => string }> = [
  { name: 'PXELINUX', iface: 'pxe', mode: 'bios', root: () => s.tftpRoot },
  { name: 'GRUB', iface: 'pxe', mode: 'uefi', root: () => s.tftpRoot },
  { name: 'iPXE', iface: 'ipxe', mode: 'bios', root: () => s.httpRoot },
];

/** The kernel command line of each label in a rendered config, whatever its format. */
function kernelLines(config: string): Record<string, string> {
  const out: Record<string, string> = {};
  let label: string | null = null;
  for (const line of config.split('\n').map((l) => l.trim())) {
    const start = /^(?:label (\S+)|:(\S+)|menuentry "([^"]+)" \{)$/.exec(line);
    if (start) label = start[1] ?? start[2] ?? start[3] ?? null;
    else if (label !== null && /^(append |kernel (--timeout \d+ )?http|linux )/.test(line)) out[label] = line;
  }
  return out;
}

async function setup(iface: BootInterface, mode: 'bios' | 'uefi', driverInfo: Record<string, unknown>) {
  const images = await s.images();
  const env = s.env({ defaultBootInterface: iface });
  const registry = createDriverRegistry({ bootEnvironment: env, ipmitool: { exec: noBmc } });
  const info = {
    kernel: images.kernel.url,
    kernel_checksum: images.kernel.checksum,
    ramdisk: images.ramdisk.url,
    ramdisk_checksum: images.ramdisk.checksum,
    kernel_append_params: 'console=ttyS0 instance-only',
  };
  const node = makeNode({
    driver: 'ipmi',
    boot_interface: iface,
    deploy_interface: 'ramdisk',
    properties: { capabilities: `boot_mode:${mode}` },
    driver_info: { ...BMC_INFO, ...driverInfo },
    instance_info: info,
  });
  return { images, node, task: makeTask(registry, node, PORTS) };
}

describe.each(formats)('$name: each label gets its own parameters and images', ({ iface, mode, root }) => {
  for (const deployImages of [false, true]) {
    it(`the instance config holds the instance label only, with the instance parameters, and no deploy images (driver_info ${deployImages ? 'has' : 'lacks'} them)`, async () => {
      const { images, node, task } = await setup(iface, mode, { kernel_append_params: 'ipa-debug=1 deploy-only' });
      if (deployImages) {
        Object.assign(task.node.driver_info, {
          deploy_kernel: images.deployKernel.url,
          deploy_kernel_checksum: images.deployKernel.checksum,
          deploy_ramdisk: images.deployRamdisk.url,
          deploy_ramdisk_checksum: images.deployRamdisk.checksum,
        });
      }
      await task.driver.boot.prepareInstance(task);
      const dir = join(root(), node.uuid);
      const lines = kernelLines(await readFile(join(dir, 'config'), 'utf8'));
      // The instance's parameters reach no deploy entry, because there is none to reach.
      expect(Object.values(lines).filter((l) => l.includes('instance-only'))).toHaveLength(1);
      expect(Object.keys(lines)).toEqual(['boot_ramdisk']);
      expect(lines.boot_ramdisk).toContain('console=ttyS0 instance-only');
      expect(lines.boot_ramdisk).not.toContain('deploy-only');
      await expect(stat(join(dir, 'deploy_kernel'))).rejects.toMatchObject({ code: 'ENOENT' });
      await expect(stat(join(dir, 'deploy_ramdisk'))).rejects.toMatchObject({ code: 'ENOENT' });
      expect((await stat(join(dir, 'kernel'))).isFile()).toBe(true);
    });
  }

  it('the deploy config carries the deploy parameters and the agent parameters, never the instance ones', async () => {
    const { images, node, task } = await setup(iface, mode, {});
    const withDeploy = {
      ...node.driver_info,
      kernel_append_params: 'ipa-debug=1 deploy-only',
      deploy_kernel: images.deployKernel.url,
      deploy_kernel_checksum: images.deployKernel.checksum,
      deploy_ramdisk: images.deployRamdisk.url,
      deploy_ramdisk_checksum: images.deployRamdisk.checksum,
    };
    const deployTask = { ...task, node: { ...task.node, driver_info: withDeploy } };
    await task.driver.boot.prepareRamdisk(deployTask, { 'ipa-api-url': 'http://10.0.0.1:6385' });
    const lines = kernelLines(await readFile(join(root(), node.uuid, 'config'), 'utf8'));
    expect(lines.deploy).toContain('ipa-debug=1 deploy-only ipa-api-url=http://10.0.0.1:6385');
    expect(lines.deploy).not.toContain('instance-only');
    expect(Object.values(lines).join('\n')).not.toContain('instance-only');
  });
});

describe('instance parameters', () => {
  it("fall back to driver_info's when instance_info has none, as Ironic does", async () => {
    const { node, task } = await setup('pxe', 'bios', { kernel_append_params: 'console=ttyS1' });
    const bare = { ...task, node: { ...task.node, instance_info: { ...node.instance_info, kernel_append_params: undefined } } };
    await task.driver.boot.prepareInstance(bare);
    expect(kernelLines(await readFile(join(s.tftpRoot, node.uuid, 'config'), 'utf8')).boot_ramdisk).toContain('console=ttyS1');
  });
});
