/**
 * The `direct` deploy on a real machine: a qemu VM with a virtual disk, behind its virtual BMC,
 * network-boots ironring's deploy ramdisk (`ironring ramdisk build`: the cloud kernel, busybox and
 * node running `ironring agent`) from a real conductor; the agent looks the node up through the
 * API, heartbeats, and streams a whole-disk image onto /dev/vda; the conductor then powers the VM
 * off, sets the boot device to disk for good through the BMC and powers it on, and the VM boots the
 * image from its disk. The first scenario, started with the stock `baremetal node deploy
 * --config-drive`, deploys an operating system (`os-image.ts`: syslinux, the cloud kernel, a busybox
 * /init) given as qcow2, which the conductor converts and serves; the OS prints a marker and the
 * user data it reads from the config drive the agent wrote. The third is started with `ironring
 * node deploy --image --config-drive` (the JSON form, built into the ISO by the conductor). A UEFI
 * machine (OVMF) gets a GPT image whose EFI system partition holds a unified kernel image at the
 * fallback path, and its OS reads the config drive the agent added as a GPT entry. The others
 * stream raw images (a boot sector printing a marker) from an HTTP server of the test. A wrong
 * digest ends as `deploy failed` with the agent's message, and nothing boots from the disk.
 *
 * Run alone with `npx vitest run test/realnode/direct-deploy.test.ts`; needs what the other
 * real-node tests need (requirements.ts).
 */
import { createHash, randomBytes } from 'node:crypto';
import { execFile, spawnSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, writeFileSync, writeSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { getPartitionUuids } from '../../src/agent/disk/partition-table.js';
import { waitUntil } from '../helpers/conductors.js';
import { api, enrollMachine, makeAvailable, nodeStates, provision, waitForProvisionState } from './api.js';
import { deployRamdiskAsset, DISK_MARKER, markerDiskImage } from './assets.js';
import { OS_MARKER, osDiskImage, osUefiDiskImage, USER_DATA_PREFIX } from './os-image.js';
import type { DeployRamdisk } from './assets.js';
import { baremetalCli } from './baremetal-cli.js';
import { openLab } from './lab.js';
import type { Lab, LabMachine } from './lab.js';
import { realNodeAvailable } from './requirements.js';
import { waitForMarker } from './vm.js';

const available = realNodeAvailable();
const execFileAsync = promisify(execFile);
const IRONRING_BIN = fileURLToPath(new URL('../../bin/ironring', import.meta.url));

const STATE_TIMEOUT_MS = 90_000;
/** From `active` requested to the image written: the ramdisk's boot (32 MB over HTTP, TCG) and the write. */
const DEPLOY_TIMEOUT_MS = 300_000;
const BOOT_TIMEOUT_MS = 120_000;
const SCENARIO_TIMEOUT_MS = 600_000;
/** Room for the image and the 64 MiB config drive partition at the end. */
const DISK_BYTES = 128 * 1024 * 1024;

describe.skipIf(!available)('a real machine deployed to its disk by ironring agent (direct deploy)', () => {
  let lab: Lab;
  let ramdisk: DeployRamdisk;

  beforeAll(async () => {
    ramdisk = deployRamdiskAsset();
    lab = await openLab();
    // Automated cleaning would boot the agent at every provide; the deploy scenarios leave it off,
    // and the fast-track scenario turns it on (the default, as Ironic's).
    await lab.addConductor('c1', 11, { env: { IRONRING_CONDUCTOR_AUTOMATED_CLEAN: 'false' } });
  }, 600_000);
  afterEach((ctx) => {
    if (ctx.task.result?.state === 'fail') console.log(`real-node diagnostics after "${ctx.task.name}":\n${lab.diagnostics()}`);
  });
  afterAll(async () => {
    await lab?.close();
  }, 60_000);

  /** A blank virtual disk for a machine, filled with a byte that no image starts with. */
  function blankDisk(name: string): string {
    const file = path.join(lab.network.slot.dir, `${name}.disk.raw`);
    writeFileSync(file, Buffer.alloc(DISK_BYTES, 0xee));
    return file;
  }

  function readAt(file: string, position: number, bytes: number): Buffer {
    const fd = openSync(file, 'r');
    try {
      const buf = Buffer.alloc(bytes);
      readSync(fd, buf, 0, bytes, position);
      return buf;
    } finally {
      closeSync(fd);
    }
  }
  const readStart = (file: string, bytes: number): Buffer => readAt(file, 0, bytes);

  /**
   * Enrolls `machine` as an ipmi node with the direct deploy and ironring's deploy ramdisk; to
   * available (`provide` false: to manageable).
   */
  async function enrollDirect(machine: LabMachine, bootMode: 'bios' | 'uefi' = 'bios', provide = true): Promise<string> {
    const uuid = await enrollMachine(lab.app, machine, lab.network.hostAddress, lab.assets, {
      bootInterface: 'ipxe',
      bootMode,
      deployInterface: 'direct',
      deployImages: { kernel: ramdisk.kernel, ramdisk: ramdisk.initramfs },
      deployKernelParams: 'console=ttyS0 panic=-1',
    });
    if (provide) await makeAvailable(lab.app, uuid, STATE_TIMEOUT_MS);
    else {
      await provision(lab.app, uuid, 'manage');
      await waitForProvisionState(lab.app, uuid, 'manageable', STATE_TIMEOUT_MS);
    }
    return uuid;
  }

  async function setImage(uuid: string, imageFile: string, digest: string, bytesPerSecond?: number, rootDevice: Record<string, unknown> = { name: '/dev/vda' }, diskFormat = 'raw'): Promise<void> {
    const res = await api(lab.app, 'PATCH', `/v1/nodes/${uuid}`, [
      { op: 'add', path: '/instance_info/image_source', value: lab.serveFile(imageFile, bytesPerSecond === undefined ? {} : { bytesPerSecond }) },
      { op: 'add', path: '/instance_info/image_os_hash_algo', value: 'sha256' },
      { op: 'add', path: '/instance_info/image_os_hash_value', value: digest },
      { op: 'add', path: '/instance_info/image_disk_format', value: diskFormat },
      { op: 'add', path: '/instance_info/root_device', value: rootDevice },
    ]);
    expect(res.status, res.body).toBe(200);
  }

  const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');

  const baremetal = (args: string[]) => baremetalCli(lab)(args);

  it('baremetal node deploy --config-drive: the agent writes an OS image given as qcow2 and the config drive; the VM boots the OS from its disk, which reads its user data from config-2', async () => {
    const disk = blankDisk('direct-bios');
    const machine = await lab.addMachine('direct-bios', 'bios', { disks: [disk], memoryMiB: 1024 });
    const uuid = await enrollDirect(machine);
    const token = randomBytes(6).toString('hex');
    const imageFile = path.join(lab.network.slot.dir, `image-${token}.raw`);
    const image = osDiskImage(imageFile, token);
    // The image as a cloud publishes it: qcow2. The conductor converts it back to raw and serves it.
    const qcowFile = path.join(lab.network.slot.dir, `image-${token}.qcow2`);
    const made = spawnSync('qemu-img', ['convert', '-q', '-f', 'raw', '-O', 'qcow2', imageFile, qcowFile], { encoding: 'utf8' });
    expect(made.status, made.stderr).toBe(0);
    const qcow2 = readFileSync(qcowFile);
    expect(qcow2.length).toBeLessThan(image.length);
    await setImage(uuid, qcowFile, sha256(qcow2), undefined, { name: '/dev/vda' }, 'qcow2');

    // The deploy as an operator starts it: the stock client, `baremetal node deploy --config-drive
    // <dir>`, which packs the directory as an ISO 9660 image labelled config-2, gzipped and base64.
    const configDir = path.join(lab.network.slot.dir, `config-${token}`);
    mkdirSync(path.join(configDir, 'openstack', 'latest'), { recursive: true });
    writeFileSync(path.join(configDir, 'openstack', 'latest', 'user_data'), `#!/bin/sh\necho user-data-${token}\n`);
    writeFileSync(path.join(configDir, 'openstack', 'latest', 'meta_data.json'), JSON.stringify({ uuid }));

    machine.vm.clearLog();
    const started = Date.now();
    expect(await baremetal(['node', 'deploy', uuid, '--config-drive', configDir])).toBe('');
    // How long the deploy ramdisk takes to boot and the agent to find its node (for docs/deploy.md).
    const agentUp = waitForMarker(machine.vm.serialLog, /IRONRING-AGENT-STARTING/, DEPLOY_TIMEOUT_MS);
    const agentFound = waitForMarker(machine.vm.serialLog, /ironring-agent: \S+ found node/, DEPLOY_TIMEOUT_MS);
    await waitForProvisionState(lab.app, uuid, 'active', DEPLOY_TIMEOUT_MS);
    const activeMs = Date.now() - started;
    console.log(`real node ${machine.name}: ramdisk's /init ran the agent ${(await agentUp).ms} ms after deploy, the agent found its node at ${(await agentFound).ms} ms`);
    // The ramdisk ran the agent (its console says so) and the node is active with nothing left of the session.
    const states = await nodeStates(lab.app, uuid);
    expect(states).toMatchObject({ power_state: 'power on', last_error: null });
    const node = (await api(lab.app, 'GET', `/v1/nodes/${uuid}`)).json<{ driver_internal_info: Record<string, unknown>; deploy_step: unknown }>();
    expect(node.driver_internal_info).not.toHaveProperty('agent_url');
    expect(node.deploy_step).toEqual({});

    // The OS on the disk booted (syslinux, its kernel, its /init) and found the config drive by its
    // label, as cloud-init does, and printed the user data from it.
    const boot = await waitForMarker(machine.vm.serialLog, new RegExp(`${OS_MARKER} ${token}`), BOOT_TIMEOUT_MS);
    const userData = await waitForMarker(machine.vm.serialLog, new RegExp(`${USER_DATA_PREFIX} echo user-data-${token}`), BOOT_TIMEOUT_MS);
    console.log(`real node ${machine.name} (direct, qcow2, ipxe, bios): active after ${activeMs} ms, OS booted from disk ${boot.ms} ms later, user data read from config-2 at ${userData.ms} ms`);
    // The conductor let go of the converted image once it was on the disk.
    const published = path.join(lab.conductors[0]!.dataDir, 'httpboot', 'images');
    expect(readdirSync(published).filter((n) => n.endsWith('.raw'))).toEqual([]);
    // The image is on the disk, byte for byte but for the MBR's second entry (the config drive's),
    // and the conductor told the BMC: disk, for good.
    const written = readStart(disk, image.length);
    expect(written.subarray(462, 478).equals(image.subarray(462, 478))).toBe(false);
    written.fill(0, 462, 478);
    expect(sha256(written)).toBe(sha256(Buffer.concat([image.subarray(0, 462), Buffer.alloc(16), image.subarray(478)])));
    // The config drive is a partition at the disk's end that libblkid finds as cloud-init does:
    // an ISO 9660 file system labelled config-2, holding the user data.
    const table = await getPartitionUuids(disk);
    const drive = table.partitions.at(-1)!;
    expect(table.partitions).toHaveLength(2);
    expect(drive.start + drive.size).toBe(DISK_BYTES);
    const probe = spawnSync('blkid', ['--probe', '--offset', String(drive.start), '--output', 'export', disk], { encoding: 'utf8' });
    expect(probe.stdout).toMatch(/^LABEL=config-2$/m);
    expect(probe.stdout).toMatch(/^TYPE=iso9660$/m);
    expect(machine.bmc.events).toEqual(expect.arrayContaining(['BOOTDEV network once', 'BOOTDEV hd persistent']));

    // Firmware that boots the network first whatever it was told: the owner's local-boot entry
    // (iPXE sanboot of the first disk) still ends on the disk.
    lab.power(machine, 'off');
    lab.ipmitool(machine, ['chassis', 'bootdev', 'pxe']);
    machine.vm.clearLog();
    lab.power(machine, 'on');
    const again = await waitForMarker(machine.vm.serialLog, new RegExp(`Booting from the local disk[\\s\\S]*${OS_MARKER} ${token}`), BOOT_TIMEOUT_MS);
    console.log(`real node ${machine.name}: network boot handed over to the disk, marker after ${again.ms} ms`);
    await machine.bmc.stop();
  }, SCENARIO_TIMEOUT_MS);

  it('ends as deploy failed with the agent\'s message when the image does not match its digest (on the disk a root device hint names)', async () => {
    // Two disks; the hint names the second by its serial number, so that is where the agent writes.
    const first = blankDisk('direct-bad-a');
    const disk = blankDisk('direct-bad-b');
    const machine = await lab.addMachine('direct-bad', 'bios', { disks: [first, { file: disk, serial: 'ironring-second' }], memoryMiB: 1024 });
    const uuid = await enrollDirect(machine);
    const image = markerDiskImage(randomBytes(6).toString('hex'));
    const imageFile = path.join(lab.network.slot.dir, 'image-bad.raw');
    writeFileSync(imageFile, image);
    const wrong = sha256(Buffer.from('not the image'));
    await setImage(uuid, imageFile, wrong, undefined, { serial: 'ironring-second' });
    await provision(lab.app, uuid, 'active');
    const failed = await waitForProvisionStateOrFail(uuid);
    expect(failed.provision_state).toBe('deploy failed');
    expect(failed.last_error).toContain('write_image failed on the node');
    expect(failed.last_error).toContain(wrong);
    expect(failed.last_error).toContain(sha256(image));
    // A failed node is powered off, as Ironic does, and its state says so.
    expect(failed.power_state).toBe('power off');
    // Nothing bootable is left: the chosen disk's first MiB is zeroed; the other one is untouched.
    expect(readStart(disk, 1024 * 1024).every((b) => b === 0)).toBe(true);
    expect(readStart(first, 1024 * 1024).every((b) => b === 0xee)).toBe(true);
    await machine.bmc.stop();
  }, SCENARIO_TIMEOUT_MS);

  it('a UEFI machine: the agent writes a GPT image whose loader is not at the fallback path, registers it in the firmware\'s variables, and the config drive built from its JSON form; OVMF boots the loader and the OS reads its user data', async () => {
    const disk = blankDisk('direct-uefi');
    const machine = await lab.addMachine('direct-uefi', 'uefi', { disks: [disk], memoryMiB: 1024 });
    const uuid = await enrollDirect(machine, 'uefi');
    const token = randomBytes(6).toString('hex');
    const imageFile = path.join(lab.network.slot.dir, `uefi-image-${token}.raw`);
    // The loader where a distribution puts it (no \EFI\BOOT\BOOTX64.EFI): the firmware boots it
    // only through the Boot#### entry the agent writes (image.install_bootloader).
    const image = osUefiDiskImage(imageFile, token, { dir: 'ironring', name: 'grubx64.efi' });
    await setImage(uuid, imageFile, sha256(image));
    const drive = await api(lab.app, 'PATCH', `/v1/nodes/${uuid}`, [{ op: 'add', path: '/instance_info/configdrive', value: { user_data: `#!/bin/sh\necho uefi-user-data-${token}\n` } }]);
    expect(drive.status, drive.body).toBe(200);
    machine.vm.clearLog();
    const started = Date.now();
    await provision(lab.app, uuid, 'active');
    await waitForProvisionState(lab.app, uuid, 'active', DEPLOY_TIMEOUT_MS);
    const activeMs = Date.now() - started;
    // The agent's entry is first in BootOrder: OVMF boots \EFI\ironring\grubx64.efi, the unified
    // kernel image (firmware that tries the network first still gets there: the owner's local-boot
    // entry for UEFI hands back to it, iPXE exits).
    const boot = await waitForMarker(machine.vm.serialLog, new RegExp(`${OS_MARKER} ${token}`), BOOT_TIMEOUT_MS);
    await waitForMarker(machine.vm.serialLog, new RegExp(`${USER_DATA_PREFIX} echo uefi-user-data-${token}`), BOOT_TIMEOUT_MS);
    console.log(`real node ${machine.name} (direct, GPT, ipxe, uefi): active after ${activeMs} ms, OS booted from the ESP ${boot.ms} ms later`);
    // The entry is in the VM's variable store (OVMF's flash), naming the loader's path.
    const vars = readFileSync(path.join(lab.network.slot.dir, `${machine.name}.ovmf-vars.fd`));
    expect(vars.includes(Buffer.from('\\EFI\\ironring\\grubx64.efi', 'utf16le'))).toBe(true);
    // GPT on the disk: the image's ESP, then the config drive at the disk's end (the backup table moved there).
    const table = await getPartitionUuids(disk);
    expect(table.table).toBe('gpt');
    expect(table.partitions.map((p) => p.name)).toEqual(['EFI system', 'config-2']);
    expect(table['efi system partition uuid']).toBe(table.partitions[0]!.uuid);
    expect(table.partitions[1]!.start + table.partitions[1]!.size).toBeLessThanOrEqual(DISK_BYTES);
    await machine.bmc.stop();
  }, SCENARIO_TIMEOUT_MS);

  it('cleaning and fast track: provide erases the last user\'s disk metadata through the agent, which stays up; the deploy writes through it without a reboot; undeploy boots the agent again to clean; a manual erase_devices zeroes the whole disk', async () => {
    // The conductor with Ironic's automated cleaning and fast track on.
    const c1 = lab.conductors[0]!;
    const env = c1.env;
    await lab.stopConductor(c1);
    c1.env = { ...env, IRONRING_CONDUCTOR_AUTOMATED_CLEAN: 'true', IRONRING_DEPLOY_FAST_TRACK: 'true' };
    await lab.startConductor(c1);
    try {
      // The last user's disk: a boot sector at its start, data in the middle, and a signature in
      // the last MiB (where a backup GPT or an md 1.0 superblock would be).
      const disk = blankDisk('direct-fast');
      const MIB = 1024 * 1024;
      const fd = openSync(disk, 'r+');
      writeSync(fd, markerDiskImage('last-user'), 0, undefined, 0);
      writeSync(fd, Buffer.alloc(MIB, 0x5a), 0, MIB, 32 * MIB);
      writeSync(fd, Buffer.alloc(4096, 0xa5), 0, 4096, DISK_BYTES - 8192);
      closeSync(fd);
      const machine = await lab.addMachine('direct-fast', 'bios', { disks: [disk], memoryMiB: 1024 });
      const uuid = await enrollDirect(machine, 'bios', false);
      machine.vm.clearLog();
      let started = Date.now();
      await provision(lab.app, uuid, 'provide');
      await waitForProvisionState(lab.app, uuid, 'available', DEPLOY_TIMEOUT_MS);
      console.log(`real node ${machine.name}: provide → available (agent booted, metadata erased) in ${Date.now() - started} ms`);
      // Both ends zeroed, the middle kept (metadata erase, not a full one); the VM still up.
      expect(readStart(disk, MIB).every((b) => b === 0)).toBe(true);
      expect(readAt(disk, DISK_BYTES - MIB, MIB).every((b) => b === 0)).toBe(true);
      expect(readAt(disk, 32 * MIB, MIB).every((b) => b === 0x5a)).toBe(true);
      expect(await nodeStates(lab.app, uuid)).toMatchObject({ provision_state: 'available', power_state: 'power on', last_error: null });

      // Deploy with fast track: the agent still running gets the image; no ramdisk boot.
      const token = randomBytes(6).toString('hex');
      const image = markerDiskImage(token);
      const imageFile = path.join(lab.network.slot.dir, `image-${token}.raw`);
      writeFileSync(imageFile, image);
      await setImage(uuid, imageFile, sha256(image));
      const bmcBefore = machine.bmc.events.length;
      machine.vm.clearLog();
      started = Date.now();
      await provision(lab.app, uuid, 'active');
      await waitForProvisionState(lab.app, uuid, 'active', DEPLOY_TIMEOUT_MS);
      const fast = await waitForMarker(machine.vm.serialLog, new RegExp(`${DISK_MARKER} ${token}`), BOOT_TIMEOUT_MS);
      const fastMs = Date.now() - started;
      // The BMC saw one start of the VM (the boot from its disk) and no network boot asked for.
      const vmStarts = (from: number) => machine.bmc.events.slice(from).filter((e) => e.startsWith('VM started ')).length;
      expect(machine.bmc.events.slice(bmcBefore)).not.toContain('BOOTDEV network once');
      expect(vmStarts(bmcBefore)).toBe(1);
      expect(readStart(disk, image.length).subarray(0, 446).equals(image.subarray(0, 446))).toBe(true);

      // Undeploy: the OS runs, not the agent, so cleaning boots it again; the image's MBR goes.
      started = Date.now();
      await provision(lab.app, uuid, 'deleted');
      await waitForProvisionState(lab.app, uuid, 'available', DEPLOY_TIMEOUT_MS);
      console.log(`real node ${machine.name}: undeploy → available (agent booted, metadata erased) in ${Date.now() - started} ms`);
      expect(readStart(disk, MIB).every((b) => b === 0)).toBe(true);

      // The same deploy without fast track, the baseline of the figure above (~25 s of VM time, so
      // only with IRONRING_REALNODE_BASELINE=1): powered off, the agent is gone, so the deploy
      // boots the ramdisk first. (Undeploy cleared instance_info, as Ironic does.)
      if (process.env.IRONRING_REALNODE_BASELINE === '1') {
        await setImage(uuid, imageFile, sha256(image));
        const off = await api(lab.app, 'PUT', `/v1/nodes/${uuid}/states/power`, { target: 'power off' });
        expect(off.status, off.body).toBe(202);
        await waitUntil(async () => (await nodeStates(lab.app, uuid)).power_state === 'power off', STATE_TIMEOUT_MS, 'the node to power off');
        const bmcSlow = machine.bmc.events.length;
        machine.vm.clearLog();
        started = Date.now();
        await provision(lab.app, uuid, 'active');
        await waitForProvisionState(lab.app, uuid, 'active', DEPLOY_TIMEOUT_MS);
        await waitForMarker(machine.vm.serialLog, new RegExp(`${DISK_MARKER} ${token}`), BOOT_TIMEOUT_MS);
        const slowMs = Date.now() - started;
        // Two starts this time: the deploy ramdisk from the network, then the disk.
        expect(machine.bmc.events.slice(bmcSlow)).toContain('BOOTDEV network once');
        expect(vmStarts(bmcSlow)).toBe(2);
        console.log(`real node ${machine.name}: deploy → disk-booted marker ${fastMs} ms with fast track (marker ${fast.ms} ms), ${slowMs} ms booting the agent first`);
        await provision(lab.app, uuid, 'deleted');
        await waitForProvisionState(lab.app, uuid, 'available', DEPLOY_TIMEOUT_MS);
      } else {
        console.log(`real node ${machine.name}: deploy → disk-booted marker ${fastMs} ms with fast track (marker ${fast.ms} ms)`);
      }

      // A manual clean with the full overwrite (erase_devices): every byte of the disk, the
      // middle the metadata erase left included, ends zero.
      expect(readAt(disk, 32 * MIB, MIB).every((b) => b === 0x5a)).toBe(true);
      await provision(lab.app, uuid, 'manage');
      await waitForProvisionState(lab.app, uuid, 'manageable', STATE_TIMEOUT_MS);
      started = Date.now();
      // As an operator asks for it: the stock client, `baremetal node clean --clean-steps`.
      expect(await baremetal(['node', 'clean', uuid, '--clean-steps', JSON.stringify([{ interface: 'deploy', step: 'erase_devices' }])])).toBe('');
      await waitForProvisionState(lab.app, uuid, 'manageable', DEPLOY_TIMEOUT_MS);
      console.log(`real node ${machine.name}: manual clean with erase_devices (128 MiB, a random pass and zeros) in ${Date.now() - started} ms`);
      expect(await nodeStates(lab.app, uuid)).toMatchObject({ provision_state: 'manageable', last_error: null });
      const erased = readFileSync(disk);
      expect(erased.length).toBe(DISK_BYTES);
      expect(erased.every((b) => b === 0)).toBe(true);
      await machine.bmc.stop();
    } finally {
      await lab.stopConductor(c1);
      c1.env = env;
      await lab.startConductor(c1);
    }
  }, SCENARIO_TIMEOUT_MS);

  it('a clean step that fails on the node ends in clean failed with the agent\'s reason, the node powered off', async () => {
    // The only disk is read-only: the agent erases nothing it may not write, and says so.
    const disk = blankDisk('direct-ro');
    const machine = await lab.addMachine('direct-ro', 'bios', { disks: [{ file: disk, readOnly: true }], memoryMiB: 1024 });
    const uuid = await enrollDirect(machine, 'bios', false);
    const clean = await api(lab.app, 'PUT', `/v1/nodes/${uuid}/states/provision`, { target: 'clean', clean_steps: [{ interface: 'deploy', step: 'erase_devices_metadata' }] });
    expect(clean.status, clean.body).toBe(202);
    const end = Date.now() + DEPLOY_TIMEOUT_MS;
    let states = await nodeStates(lab.app, uuid);
    while (!['clean failed', 'manageable'].includes(states.provision_state) && Date.now() < end) {
      await new Promise((r) => setTimeout(r, 500));
      states = await nodeStates(lab.app, uuid);
    }
    expect(states.provision_state).toBe('clean failed');
    expect(states.last_error).toContain('clean step deploy.erase_devices_metadata failed on the node: BlockDeviceEraseError: no disk to erase (skipped: /dev/vda read-only)');
    expect(states.power_state).toBe('power off');
    expect(readStart(disk, 1024 * 1024).every((b) => b === 0xee)).toBe(true);
    await machine.bmc.stop();
  }, SCENARIO_TIMEOUT_MS);

  it('a deploy whose owner stops gracefully during the image write completes under the new owner; so does a clean whose owner stops during its step', async () => {
    const second = await lab.addConductor('c2', 12);
    await waitUntil(async () => (await second.proc!.status()).rings['']?.length === 2, STATE_TIMEOUT_MS, 'the second conductor to join the ring');
    const disk = blankDisk('direct-move');
    const machine = await lab.addMachine('direct-move', 'bios', { disks: [disk], memoryMiB: 1024 });
    const uuid = await enrollDirect(machine);
    const token = randomBytes(6).toString('hex');
    // 24 MiB at 2 MiB/s: the write lasts about 12 s, time enough to stop the owner in the middle.
    const image = markerDiskImage(token, 24 * 1024 * 1024);
    const imageFile = path.join(lab.network.slot.dir, `image-${token}.raw`);
    writeFileSync(imageFile, image);
    await setImage(uuid, imageFile, sha256(image), 2 * 1024 * 1024);
    machine.vm.clearLog();
    // ironring's own CLI starts it, naming the image as an operator would, and the config drive in
    // its JSON form, which the conductor builds into the config-2 ISO.
    const driveFile = path.join(lab.network.slot.dir, `config-drive-${token}.json`);
    writeFileSync(driveFile, JSON.stringify({ meta_data: { hostname: `host-${token}` }, user_data: `#!/bin/sh\necho json-user-data-${token}\n`, network_data: { links: [], networks: [], services: [] } }));
    const cli = await execFileAsync(process.execPath, [IRONRING_BIN, 'node', 'deploy', uuid, '--url', lab.apiUrl, '--image', lab.serveFile(imageFile, { bytesPerSecond: 2 * 1024 * 1024 }), '--image-checksum', `sha256:${sha256(image)}`, '--config-drive', `@${driveFile}`], { timeout: 60_000 }).catch((err: { stderr?: string; message: string }) => ({ stdout: '', stderr: err.stderr ?? err.message, failed: true }));
    expect('failed' in cli ? cli.stderr : '').toBe('');
    await waitUntil(async () => {
      const n = (await api(lab.app, 'GET', `/v1/nodes/${uuid}`)).json<{ deploy_step: { step?: string }; provision_state: string }>();
      if (n.provision_state === 'deploy failed') throw new Error('the deploy failed before the write');
      return n.deploy_step.step === 'write_image';
    }, DEPLOY_TIMEOUT_MS, 'the agent to start writing');
    const before = (await api(lab.app, 'GET', `/v1/nodes/${uuid}`)).json<{ conductor: string }>().conductor;
    const owner = lab.conductors.find((c) => c.host === before)!;
    const started = Date.now();
    await lab.stopConductor(owner, 'SIGTERM');
    console.log(`real node ${machine.name}: owner ${before} stopped during the write in ${Date.now() - started} ms`);
    await waitForProvisionState(lab.app, uuid, 'active', DEPLOY_TIMEOUT_MS);
    const after = (await api(lab.app, 'GET', `/v1/nodes/${uuid}`)).json<{ conductor: string }>().conductor;
    expect(after).not.toBe(before);
    const boot = await waitForMarker(machine.vm.serialLog, new RegExp(`${DISK_MARKER} ${token}`), BOOT_TIMEOUT_MS);
    console.log(`real node ${machine.name}: finished by ${after}, disk marker ${boot.ms} ms after active`);
    // The image is on the disk but for the MBR's second entry, the config drive's partition at the
    // disk's end; in it, the ISO the conductor built from the JSON form, with the node's uuid.
    const written = readStart(disk, image.length);
    written.fill(0, 462, 478);
    expect(sha256(written)).toBe(sha256(image));
    const drive = (await getPartitionUuids(disk)).partitions.at(-1)!;
    expect(drive.start + drive.size).toBe(DISK_BYTES);
    const iso = path.join(lab.network.slot.dir, `config-drive-${token}.iso`);
    writeFileSync(iso, readAt(disk, drive.start, drive.size));
    const isoFile = (name: string) => spawnSync('isoinfo', ['-R', '-i', iso, '-x', `/openstack/latest/${name}`], { encoding: 'utf8' }).stdout;
    expect(spawnSync('isoinfo', ['-d', '-i', iso], { encoding: 'utf8' }).stdout).toMatch(/^Volume id: config-2$/m);
    expect(isoFile('user_data')).toBe(`#!/bin/sh\necho json-user-data-${token}\n`);
    expect(JSON.parse(isoFile('meta_data.json'))).toMatchObject({ hostname: `host-${token}`, uuid });
    expect(JSON.parse(isoFile('network_data.json'))).toEqual({ links: [], networks: [], services: [] });

    // A clean whose owner stops in the middle of a step goes on under the new owner: a manual
    // erase_devices (the whole disk), the owner stopped while the agent overwrites it.
    await lab.startConductor(owner);
    await waitUntil(async () => (await second.proc!.status()).rings['']?.length === 2, STATE_TIMEOUT_MS, 'both conductors on the ring again');
    await provision(lab.app, uuid, 'deleted');
    await waitForProvisionState(lab.app, uuid, 'available', DEPLOY_TIMEOUT_MS);
    await provision(lab.app, uuid, 'manage');
    await waitForProvisionState(lab.app, uuid, 'manageable', STATE_TIMEOUT_MS);
    const clean = await api(lab.app, 'PUT', `/v1/nodes/${uuid}/states/provision`, { target: 'clean', clean_steps: [{ interface: 'deploy', step: 'erase_devices' }] });
    expect(clean.status, clean.body).toBe(202);
    await waitUntil(async () => {
      const n = (await api(lab.app, 'GET', `/v1/nodes/${uuid}`)).json<{ clean_step: { step?: string }; provision_state: string }>();
      if (n.provision_state === 'clean failed' || n.provision_state === 'manageable') throw new Error(`the clean ended (${n.provision_state}) before the test could stop its owner`);
      return n.provision_state === 'clean wait' && n.clean_step.step === 'erase_devices';
    }, DEPLOY_TIMEOUT_MS, 'the agent to start erasing');
    const cleanOwner = (await api(lab.app, 'GET', `/v1/nodes/${uuid}`)).json<{ conductor: string }>().conductor;
    const cleaning = lab.conductors.find((c) => c.host === cleanOwner)!;
    await lab.stopConductor(cleaning, 'SIGTERM');
    await waitForProvisionState(lab.app, uuid, 'manageable', DEPLOY_TIMEOUT_MS);
    const finisher = (await api(lab.app, 'GET', `/v1/nodes/${uuid}`)).json<{ conductor: string; last_error: string | null }>();
    expect(finisher.conductor).not.toBe(cleanOwner);
    expect(finisher.last_error).toBeNull();
    console.log(`real node ${machine.name}: clean owner ${cleanOwner} stopped during erase_devices; ${finisher.conductor} finished it`);
    expect(readFileSync(disk).every((b) => b === 0)).toBe(true);
    await machine.bmc.stop();
    await lab.startConductor(cleaning);
  }, SCENARIO_TIMEOUT_MS);

  async function waitForProvisionStateOrFail(uuid: string) {
    const end = Date.now() + DEPLOY_TIMEOUT_MS;
    for (;;) {
      const states = await nodeStates(lab.app, uuid);
      if (states.provision_state === 'deploy failed' || states.provision_state === 'active') return states;
      if (Date.now() > end) throw new Error(`node ${uuid} still ${states.provision_state}`);
      await new Promise((r) => setTimeout(r, 500));
    }
  }
});
