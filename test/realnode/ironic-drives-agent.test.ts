/**
 * A real peer drives `ironring agent` in a real machine: Debian's OpenStack Ironic 21.4
 * (test/helpers/ironic.ts: `manual-management`, the `direct` deploy) deploys a whole-disk image
 * into a qemu VM that runs ironring's deploy ramdisk (`ironring ramdisk build`: the cloud kernel,
 * busybox, node and the agent). The VM is started by the test with the ramdisk as its kernel and
 * initramfs (Ironic's power interface here is `fake`, and its PXE files have no DHCP behind them),
 * `ipa-api-url=` naming Ironic's API on the lab network; a DHCP server of the lab gives it an
 * address. The agent looks up through Ironic's API, Ironic drives it with its own sequence of IPA
 * commands, and ends `active`; then the VM boots the image from its disk and prints its marker.
 *
 * Run alone with `npx vitest run test/realnode/ironic-drives-agent.test.ts`; needs what the other
 * real-node tests need (requirements.ts) and ironic-common.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { enrollIronicNode, startIronic } from '../helpers/ironic.js';
import type { RunningIronic } from '../helpers/ironic.js';
import { requirePeer } from '../helpers/peers.js';
import { deployRamdiskAsset, DISK_MARKER, markerDiskImage } from './assets.js';
import type { DeployRamdisk } from './assets.js';
import { openLab } from './lab.js';
import type { Lab } from './lab.js';
import { realNodeAvailable } from './requirements.js';
import { defineVm, waitForMarker } from './vm.js';

const available = realNodeAvailable() && requirePeer('ironic-conductor', 'ironic-common');
const DISK_BYTES = 64 * 1024 * 1024;

describe.skipIf(!available)('Ironic 21.4 deploys an image into a VM through ironring agent', () => {
  let lab: Lab;
  let ramdisk: DeployRamdisk;
  let ironic: RunningIronic;
  const qemus: ChildProcess[] = [];

  beforeAll(async () => {
    ramdisk = deployRamdiskAsset();
    lab = await openLab();
    // A DHCP server for any MAC: the VM is not ironring's, so no conductor's dnsmasq knows it.
    await lab.addSiteDhcp('site', 20);
    ironic = await startIronic(lab.network.hostAddress);
  }, 600_000);

  afterAll(async () => {
    for (const q of qemus) if (q.exitCode === null && q.signalCode === null) q.kill('SIGKILL');
    await ironic?.stop();
    await lab?.close();
  }, 60_000);

  /** Starts qemu with `args`; resolves to the process once spawned. */
  function startQemu(args: string[]): ChildProcess {
    const child = spawn(args[0]!, args.slice(1), { stdio: 'ignore' });
    qemus.push(child);
    return child;
  }
  async function stopQemu(child: ChildProcess): Promise<void> {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
  }

  it("looks the agent up, drives it with Ironic's own IPA commands to active, and the VM boots the image from its disk", async () => {
    const token = randomBytes(6).toString('hex');
    const image = markerDiskImage(token);
    const imageFile = path.join(lab.network.slot.dir, `ironic-image-${token}.raw`);
    writeFileSync(imageFile, image);
    const disk = path.join(lab.network.slot.dir, 'ironic-vm.disk.raw');
    writeFileSync(disk, Buffer.alloc(DISK_BYTES, 0xee));
    const mac = `52:54:00:78:${lab.network.slot.slot.toString(16).padStart(2, '0')}:01`;
    const vm = defineVm({ name: 'ironic-vm', dir: lab.network.slot.dir, tap: lab.network.tap, mac, firmware: 'bios', memoryMiB: 1024, disks: [disk] });

    const uuid = await enrollIronicNode(
      ironic,
      'ironic-vm',
      mac,
      { kernel: lab.serveFile(ramdisk.kernel.path), ramdisk: lab.serveFile(ramdisk.initramfs.path) },
      { image_source: lab.serveFile(imageFile), image_os_hash_algo: 'sha256', image_os_hash_value: createHash('sha256').update(image).digest('hex'), image_disk_format: 'raw', root_device: { name: '/dev/vda' } },
    );
    const started = Date.now();
    expect((await ironic.call('PUT', `/v1/nodes/${uuid}/states/provision`, { target: 'active' })).status).toBe(202);
    const waiting = await ironic.until(uuid, ['wait call-back', 'deploy failed'], 120_000);
    expect(waiting.provision_state, waiting.last_error ?? '').toBe('wait call-back');

    // Ironic "powered the machine on" (fake power): the machine boots the deploy ramdisk.
    vm.clearLog();
    const ramdiskVm = startQemu([...vm.command, '-kernel', ramdisk.kernel.path, '-initrd', ramdisk.initramfs.path, '-append', `console=ttyS0 panic=-1 ipa-api-url=${ironic.url}`]);
    let serial = '';
    try {
      const done = await ironic.until(uuid, ['active', 'deploy failed'], 300_000);
      serial = readFileSync(vm.serialLog, 'latin1');
      expect(done.provision_state, `${done.last_error}\n${serial.slice(-3000)}`).toBe('active');
    } finally {
      await stopQemu(ramdiskVm);
    }
    const activeMs = Date.now() - started;
    // Ironic's own command sequence, as the agent's console shows it.
    const ran = [...serial.matchAll(/ command (\S+) \(\S+\) succeeded/g)].map((m) => m[1]);
    expect(ran).toEqual(['deploy.get_deploy_steps', 'deploy.execute_deploy_step', 'standby.get_partition_uuids', 'standby.sync']);
    expect(serial).toContain(`found node ${uuid}`);
    // The image is on the disk, byte for byte, and boots.
    const written = readFileSync(disk).subarray(0, image.length);
    expect(written.equals(image)).toBe(true);
    vm.clearLog();
    const boot = vm.command.map((arg, i, all) => (all[i - 1] === '-boot' ? 'c' : arg));
    const diskVm = startQemu(boot);
    try {
      const marker = await waitForMarker(vm.serialLog, new RegExp(`${DISK_MARKER} ${token}`), 120_000);
      console.log(`Ironic 21.4 deployed the VM through ironring agent (${ran.join(', ')}): active after ${activeMs} ms; the disk booted its marker ${marker.ms} ms after the VM started again`);
    } finally {
      await stopQemu(diskVm);
    }
  }, 600_000);
});
