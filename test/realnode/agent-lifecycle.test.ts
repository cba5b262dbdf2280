/**
 * Inspection and rescue through ironring's agent on a real machine. In-band inspection: a qemu VM (2 vCPUs, 1 GiB, two virtio disks, two NICs —
 * the second on qemu's user-mode network, never booted from) behind its virtual BMC, inspected
 * with the stock client's `baremetal node inspect`. The conductor boots ironring's deploy ramdisk
 * with `ipa-inspection-callback-url`; the agent reads the machine from /proc and /sys and posts
 * its inventory; the node comes back `manageable` with the properties and the ports (`[inspector]
 * add_ports = all`: both NICs, only the booted one PXE-enabled) of what qemu was given.
 *
 * Then the whole way from `manageable` to an image booted from the disk — inspect, provide (an
 * automated clean) and deploy — with fast track, where the agent inspection booted serves the clean
 * and the deploy; with IRONRING_REALNODE_BASELINE=1 also booting the agent for each verb, the
 * baseline (40–55 s more, so not in CI). The times are printed.
 *
 * Rescue, asked for with the stock `baremetal node rescue --rescue-password`: the VM boots the
 * agent, which sets the rescue user with the password's hash and hands the console to a login
 * prompt; `baremetal node unrescue` boots the deployed image from the disk again.
 *
 * Take-over: an inspection whose owner stops gracefully while the machine boots the ramdisk is
 * finished by the conductor that takes the node over (it rebuilt the ramdisk entry with the
 * inventory callback; the agent's inventory reaches it through the ring).
 *
 * Auto-discovery (last: it replaces the conductor with one in the ProxyDHCP layout, beside a site
 * DHCP server for any MAC): a VM no node knows network-boots; the conductor the ring assigns its MAC
 * to answers it with the discovery ramdisk, whose agent posts the inventory, and the API enrolls it;
 * given its BMC, it is managed, then adopted with the stock `baremetal node adopt` (the BMC read,
 * nothing switched or written).
 *
 * Run alone with `npx vitest run test/realnode/agent-lifecycle.test.ts`; needs what the other real-node
 * tests need (requirements.ts).
 */
import { createHash, randomBytes } from 'node:crypto';
import { spawn } from 'node:child_process';
import { closeSync, openSync, ftruncateSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { api, enrollMachine, nodeStates, provision, waitForProvisionState } from './api.js';
import { deployRamdiskAsset, DISK_MARKER, markerDiskImage } from './assets.js';
import type { DeployRamdisk } from './assets.js';
import { baremetalCli } from './baremetal-cli.js';
import { openLab } from './lab.js';
import type { Lab, LabMachine } from './lab.js';
import { realNodeAvailable } from './requirements.js';
import { waitForMarker } from './vm.js';
import { waitUntil } from '../helpers/conductors.js';

const available = realNodeAvailable();

const STATE_TIMEOUT_MS = 90_000;
const AGENT_TIMEOUT_MS = 300_000;
const BOOT_TIMEOUT_MS = 120_000;
const SCENARIO_TIMEOUT_MS = 900_000;
const GIB = 2 ** 30;
const readFileText = (file: string): string => readFileSync(file, 'latin1');

describe.skipIf(!available)('a real machine inspected and rescued by ironring agent', () => {
  let lab: Lab;
  let ramdisk: DeployRamdisk;

  beforeAll(async () => {
    ramdisk = deployRamdiskAsset();
    lab = await openLab({ apiEnv: { IRONRING_AUTO_DISCOVERY_ENABLED: 'true' } });
    // The agent listens for LLDP (4 s at most: the second NIC never hears any).
    await lab.addConductor('c1', 11, { env: { IRONRING_INSPECTOR_ADD_PORTS: 'all', IRONRING_INSPECTOR_EXTRA_KERNEL_PARAMS: 'ipa-collect-lldp=1 ipa-lldp-timeout=4' } });
  }, 600_000);
  afterEach((ctx) => {
    if (ctx.task.result?.state === 'fail') console.log(`real-node diagnostics after "${ctx.task.name}":\n${lab.diagnostics()}`);
  });
  afterAll(async () => {
    await lab?.close();
  }, 60_000);

  /** A sparse virtual disk of `bytes` (nothing is written to most of it). */
  function sparseDisk(name: string, bytes: number): string {
    const file = path.join(lab.network.slot.dir, `${name}.disk.raw`);
    const fd = openSync(file, 'w');
    try {
      ftruncateSync(fd, bytes);
    } finally {
      closeSync(fd);
    }
    return file;
  }

  /** A machine with the agent inspection and the direct deploy, enrolled and `manageable`. */
  async function manageable(machine: LabMachine): Promise<string> {
    const uuid = await enrollMachine(lab.app, machine, lab.network.hostAddress, lab.assets, {
      bootInterface: 'ipxe',
      bootMode: 'bios',
      deployInterface: 'direct',
      deployImages: { kernel: ramdisk.kernel, ramdisk: ramdisk.initramfs },
      deployKernelParams: 'console=ttyS0 panic=-1',
    });
    const set = await api(lab.app, 'PATCH', `/v1/nodes/${uuid}`, [
      { op: 'replace', path: '/inspect_interface', value: 'agent' },
      { op: 'replace', path: '/rescue_interface', value: 'agent' },
    ]);
    expect(set.status, set.body).toBe(200);
    await provision(lab.app, uuid, 'manage');
    await waitForProvisionState(lab.app, uuid, 'manageable', STATE_TIMEOUT_MS);
    return uuid;
  }

  const baremetal = (args: string[]) => baremetalCli(lab)(args);

  /**
   * A switch on the VM's tap: an LLDP frame (chassis MAC 02:00:5e:10:00:01, port "Ethernet1/7",
   * system name "leaf-7") into the tap every 300 ms — what a top-of-rack switch sends every 30 s —
   * until stopped. Sent on the tap itself (the bridge forwards no LLDP), so only the VM gets it.
   */
  function lldpSwitch(): { stop: () => void } {
    const tlv = (type: number, value: Buffer) => Buffer.concat([Buffer.from([(type << 1) | (value.length >> 8), value.length & 0xff]), value]);
    const frame = Buffer.concat([
      Buffer.from('0180c200000e02005e100001', 'hex'),
      Buffer.from('88cc', 'hex'),
      tlv(1, Buffer.from('0402005e100001', 'hex')),
      tlv(2, Buffer.concat([Buffer.from([5]), Buffer.from('Ethernet1/7')])),
      tlv(3, Buffer.from('0078', 'hex')),
      tlv(5, Buffer.from('leaf-7')),
      tlv(0, Buffer.alloc(0)),
    ]).toString('hex');
    const script = [
      'import socket, time',
      `frame = bytes.fromhex('${frame}')`,
      'while True:',
      '    try:',
      '        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)',
      `        s.bind(('${lab.network.tap}', 0))`,
      '        s.send(frame)',
      '        s.close()',
      '    except OSError:',
      '        pass',
      '    time.sleep(0.3)',
    ].join('\n');
    const child = spawn('python3', ['-c', script], { stdio: 'ignore' });
    return { stop: () => void child.kill('SIGKILL') };
  }

  const sha256 = (b: Buffer) => createHash('sha256').update(b).digest('hex');
  const vmStarts = (machine: LabMachine, from: number) => machine.bmc.events.slice(from).filter((e) => e.startsWith('VM started ')).length;

  /**
   * From `manageable`: inspect, provide (automated clean), deploy a marker image to /dev/vda, and
   * wait for the marker the image prints once booted from the disk. Returns the milliseconds from
   * `inspect` to the marker and the VM starts the BMC saw.
   */
  async function inspectToActive(machine: LabMachine, uuid: string): Promise<{ ms: number; starts: number; stepsMs: number[] }> {
    const token = randomBytes(6).toString('hex');
    const image = markerDiskImage(token);
    const imageFile = path.join(lab.network.slot.dir, `image-${token}.raw`);
    writeFileSync(imageFile, image);
    const from = machine.bmc.events.length;
    machine.vm.clearLog();
    const started = Date.now();
    const steps: number[] = [];
    await provision(lab.app, uuid, 'inspect');
    await waitForProvisionState(lab.app, uuid, 'manageable', AGENT_TIMEOUT_MS);
    steps.push(Date.now() - started);
    await provision(lab.app, uuid, 'provide');
    await waitForProvisionState(lab.app, uuid, 'available', AGENT_TIMEOUT_MS);
    steps.push(Date.now() - started);
    const res = await api(lab.app, 'PATCH', `/v1/nodes/${uuid}`, [
      { op: 'add', path: '/instance_info/image_source', value: lab.serveFile(imageFile) },
      { op: 'add', path: '/instance_info/image_os_hash_algo', value: 'sha256' },
      { op: 'add', path: '/instance_info/image_os_hash_value', value: sha256(image) },
      { op: 'add', path: '/instance_info/image_disk_format', value: 'raw' },
      { op: 'add', path: '/instance_info/root_device', value: { name: '/dev/vda' } },
    ]);
    expect(res.status, res.body).toBe(200);
    await provision(lab.app, uuid, 'active');
    await waitForProvisionState(lab.app, uuid, 'active', AGENT_TIMEOUT_MS);
    await waitForMarker(machine.vm.serialLog, new RegExp(`${DISK_MARKER} ${token}`), BOOT_TIMEOUT_MS);
    const ms = Date.now() - started;
    steps.push(ms);
    return { ms, starts: vmStarts(machine, from), stepsMs: steps };
  }

  it('baremetal node inspect: properties, both ports and the stored inventory are those of the VM qemu was given (then, with IRONRING_REALNODE_BASELINE=1, inspect → clean → deploy booting the agent for each)', async () => {
    const root = sparseDisk('insp-root', 6 * GIB);
    const data = sparseDisk('insp-data', 5 * GIB);
    const second = `52:54:00:78:${lab.network.slot.slot.toString(16).padStart(2, '0')}:02`;
    const machine = await lab.addMachine('insp', 'bios', { disks: [{ file: root, serial: 'root-a' }, { file: data, serial: 'data-b' }], memoryMiB: 1024, cpus: 2, extraNics: [second] });
    const uuid = await manageable(machine);
    const from = machine.bmc.events.length;
    const started = Date.now();
    const lldp = lldpSwitch();
    // As an operator asks for it: the stock client.
    expect(await baremetal(['node', 'inspect', uuid])).toBe('');
    await waitForProvisionState(lab.app, uuid, 'manageable', AGENT_TIMEOUT_MS).finally(() => lldp.stop());
    console.log(`real node ${machine.name}: inspect → manageable (agent booted, inventory posted) in ${Date.now() - started} ms`);
    // One network boot of the ramdisk, then powered off.
    expect(machine.bmc.events.slice(from)).toContain('BOOTDEV network once');
    expect(vmStarts(machine, from)).toBe(1);
    const states = await nodeStates(lab.app, uuid);
    expect(states).toMatchObject({ provision_state: 'manageable', power_state: 'power off', last_error: null });

    const node = (await api(lab.app, 'GET', `/v1/nodes/${uuid}`)).json<{ properties: Record<string, unknown> }>();
    // 2 vCPUs, x86_64, 1 GiB in memory blocks; the smallest disk of 4 GiB or more is the 5 GiB one (less 1 GiB of spacing).
    expect(node.properties).toMatchObject({ cpus: 2, cpu_arch: 'x86_64', memory_mb: 1024, local_gb: 4, capabilities: 'boot_mode:bios' });
    const ports = (await api(lab.app, 'GET', `/v1/ports/detail?node=${uuid}`)).json<{ ports: Array<{ address: string; pxe_enabled: boolean; local_link_connection: Record<string, string> }> }>().ports;
    expect(ports.map((p) => [p.address, p.pxe_enabled]).sort()).toEqual([[machine.mac, true], [second, false]].sort());
    // The switch port behind the booted NIC, from the LLDP the agent heard; nothing for the other.
    expect(Object.fromEntries(ports.map((p) => [p.address, p.local_link_connection]))).toEqual({
      [machine.mac]: { switch_id: '02:00:5e:10:00:01', port_id: 'Ethernet1/7', switch_info: 'leaf-7' },
      [second]: {},
    });

    const stored = await api(lab.app, 'GET', `/v1/nodes/${uuid}/inventory`);
    expect(stored.status, stored.body).toBe(200);
    interface Stored {
      inventory: { cpu: unknown; memory: { physical_mb: number }; disks: Array<{ name: string; size: number; serial: string }>; interfaces: Array<{ name: string; mac_address: string; lldp: Array<[number, string]> | null }>; boot: unknown; system_vendor: { manufacturer: string } };
      plugin_data: Record<string, unknown>;
    }
    const { inventory, plugin_data: plugin } = stored.json<Stored>();
    expect(inventory.cpu).toMatchObject({ count: 2, architecture: 'x86_64' });
    expect(inventory.memory.physical_mb).toBe(1024);
    expect(inventory.disks.map((d) => [d.name, d.size, d.serial])).toEqual([['/dev/vda', 6 * GIB, 'root-a'], ['/dev/vdb', 5 * GIB, 'data-b']]);
    expect(inventory.interfaces.map((i) => i.mac_address).sort()).toEqual([machine.mac, second].sort());
    expect(inventory.boot).toEqual({ current_boot_mode: 'bios', pxe_interface: machine.mac });
    expect(inventory.system_vendor.manufacturer).toBe('QEMU');
    expect(plugin).toMatchObject({ root_disk: { name: '/dev/vdb' }, local_gb: 4 });
    // IPA's format: the TLVs heard, [] where nothing came within ipa-lldp-timeout.
    const booted = inventory.interfaces.find((i) => i.mac_address === machine.mac)!;
    expect(booted.lldp).toContainEqual([2, `05${Buffer.from('Ethernet1/7').toString('hex')}`]);
    expect(inventory.interfaces.find((i) => i.mac_address === second)!.lldp).toEqual([]);
    expect((plugin.parsed_lldp as Record<string, unknown>)[booted.name]).toEqual({ switch_chassis_id: '02:00:5e:10:00:01', switch_port_id: 'Ethernet1/7', switch_system_name: 'leaf-7' });

    // The way to an instance without fast track, every verb booting the agent again (the baseline
    // of the fast-track scenario's figure): 40–55 s of CI, so only with IRONRING_REALNODE_BASELINE=1.
    if (process.env.IRONRING_REALNODE_BASELINE === '1') {
      const slow = await inspectToActive(machine, uuid);
      console.log(`real node ${machine.name}: inspect → clean → deploy → disk-booted marker without fast track in ${slow.ms} ms (after inspect ${slow.stepsMs[0]}, provide ${slow.stepsMs[1]}); ${slow.starts} VM starts`);
      // The ramdisk for each of inspect, clean and deploy, then the disk.
      expect(slow.starts).toBe(4);
    }
    await machine.bmc.stop();
  }, SCENARIO_TIMEOUT_MS);

  it('with fast track one agent boot serves inspect, clean and deploy: manageable to an image booted from the disk; then baremetal node rescue and unrescue', async () => {
    const c1 = lab.conductors[0]!;
    const env = c1.env;
    await lab.stopConductor(c1);
    c1.env = { ...env, IRONRING_DEPLOY_FAST_TRACK: 'true' };
    await lab.startConductor(c1);
    try {
      const root = sparseDisk('fast-root', 5 * GIB);
      const machine = await lab.addMachine('insp-fast', 'bios', { disks: [{ file: root, serial: 'root-f' }], memoryMiB: 1024 });
      const uuid = await manageable(machine);
      const fast = await inspectToActive(machine, uuid);
      console.log(`real node ${machine.name}: inspect → clean → deploy → disk-booted marker with fast track in ${fast.ms} ms (after inspect ${fast.stepsMs[0]}, provide ${fast.stepsMs[1]}); ${fast.starts} VM starts`);
      // One ramdisk boot (inspection's), then the disk.
      expect(fast.starts).toBe(2);
      expect(await nodeStates(lab.app, uuid)).toMatchObject({ provision_state: 'active', power_state: 'power on', last_error: null });
      const node = (await api(lab.app, 'GET', `/v1/nodes/${uuid}`)).json<{ properties: Record<string, unknown> }>();
      expect(node.properties).toMatchObject({ cpus: 1, memory_mb: 1024, local_gb: 4 });

      // Rescue, as an operator asks for it: the agent boots, sets the rescue user, and the console
      // offers a login; the password's hash is gone from the node.
      machine.vm.clearLog();
      let started = Date.now();
      expect(await baremetal(['node', 'rescue', uuid, '--rescue-password', 'S3cret-rescue'])).toBe('');
      await waitForProvisionState(lab.app, uuid, 'rescue', AGENT_TIMEOUT_MS);
      await waitForMarker(machine.vm.serialLog, /IRONRING-RESCUE-READY/, BOOT_TIMEOUT_MS);
      const prompt = await waitForMarker(machine.vm.serialLog, /rescue mode, log in as rescue on ttyS0[\s\S]*login: /, BOOT_TIMEOUT_MS);
      console.log(`real node ${machine.name}: rescue → login prompt on the console in ${Date.now() - started} ms (prompt ${prompt.ms} ms)`);
      const rescued = (await api(lab.app, 'GET', `/v1/nodes/${uuid}`)).json<{ instance_info: Record<string, unknown>; provision_state: string; power_state: string }>();
      expect(rescued).toMatchObject({ provision_state: 'rescue', power_state: 'power on' });
      expect(rescued.instance_info).not.toHaveProperty('hashed_rescue_password');
      expect(readFileText(machine.vm.serialLog)).not.toContain('S3cret-rescue');

      // Unrescue: the image on the disk boots again.
      machine.vm.clearLog();
      started = Date.now();
      expect(await baremetal(['node', 'unrescue', uuid])).toBe('');
      await waitForProvisionState(lab.app, uuid, 'active', AGENT_TIMEOUT_MS);
      await waitForMarker(machine.vm.serialLog, new RegExp(DISK_MARKER), BOOT_TIMEOUT_MS);
      console.log(`real node ${machine.name}: unrescue → disk-booted marker in ${Date.now() - started} ms`);
      await machine.bmc.stop();
    } finally {
      await lab.stopConductor(c1);
      c1.env = env;
      await lab.startConductor(c1);
    }
  }, SCENARIO_TIMEOUT_MS);

  it('an inspection whose owner stops while the machine boots the ramdisk completes under the new owner', async () => {
    const second = await lab.addConductor('c3', 13, { env: { IRONRING_INSPECTOR_ADD_PORTS: 'all' } });
    await waitUntil(async () => (await second.proc!.status()).rings['']?.length === 2, STATE_TIMEOUT_MS, 'the second conductor to join the ring');
    const machine = await lab.addMachine('inspect-move', 'bios', { disks: [{ file: sparseDisk('inspect-move', 5 * GIB), serial: 'move-a' }], memoryMiB: 1024, cpus: 2 });
    const uuid = await manageable(machine);
    const started = Date.now();
    await provision(lab.app, uuid, 'inspect');
    await waitUntil(async () => (await nodeStates(lab.app, uuid)).provision_state === 'inspect wait', STATE_TIMEOUT_MS, 'the node to wait for its agent');
    const before = (await api(lab.app, 'GET', `/v1/nodes/${uuid}`)).json<{ conductor: string }>().conductor;
    const owner = lab.conductors.find((c) => c.host === before)!;
    // Stopped at once: the machine is still in its firmware or iPXE, the agent not yet up.
    await lab.stopConductor(owner, 'SIGTERM');
    await waitForProvisionState(lab.app, uuid, 'manageable', AGENT_TIMEOUT_MS);
    const done = (await api(lab.app, 'GET', `/v1/nodes/${uuid}`)).json<{ conductor: string; last_error: string | null; properties: Record<string, unknown> }>();
    console.log(`real node ${machine.name}: inspection owner ${before} stopped in inspect wait; ${done.conductor} finished it ${Date.now() - started} ms after inspect`);
    expect(done.conductor).not.toBe(before);
    expect(done.last_error).toBeNull();
    expect(done.properties).toMatchObject({ cpus: 2, memory_mb: 1024, local_gb: 4 });
    expect(await nodeStates(lab.app, uuid)).toMatchObject({ power_state: 'power off' });
    await machine.bmc.stop();
    // Back as before: c1 alone (the discovery scenario below wants the default group's ring to itself).
    const first = lab.conductors[0]!;
    await lab.stopConductor(second);
    if (first.proc === null) await lab.startConductor(first);
  }, SCENARIO_TIMEOUT_MS);

  it('auto-discovery: a VM no node knows network-boots the discovery ramdisk from the ProxyDHCP of the conductor the ring assigns it to, and is enrolled with its properties, port and inventory; given its BMC it is managed, and baremetal node adopt takes it to active', async () => {
    // The ProxyDHCP layout: a site DHCP server hands out addresses to any MAC, the conductor's
    // responder the boot information. c1 (dnsmasq files mode, which ignores unknown MACs) goes, so
    // the ring of the default group is c2 alone.
    await lab.stopConductor(lab.conductors[0]!);
    await lab.addSiteDhcp('site', 20);
    await lab.addConductor('c2', 12, {
      dnsmasq: false,
      env: {
        IRONRING_DHCP_PROXY_ENABLED: 'true',
        IRONRING_INSPECTOR_ADD_PORTS: 'all',
        IRONRING_AUTO_DISCOVERY_ENABLED: 'true',
        IRONRING_AUTO_DISCOVERY_DEPLOY_KERNEL: `file://${ramdisk.kernel.path}`,
        IRONRING_AUTO_DISCOVERY_DEPLOY_KERNEL_CHECKSUM: ramdisk.kernel.checksum,
        IRONRING_AUTO_DISCOVERY_DEPLOY_RAMDISK: `file://${ramdisk.initramfs.path}`,
        IRONRING_AUTO_DISCOVERY_DEPLOY_RAMDISK_CHECKSUM: ramdisk.initramfs.checksum,
      },
    });
    const disk = sparseDisk('disc-root', 5 * GIB);
    const machine = await lab.addMachine('disc', 'bios', { disks: [{ file: disk, serial: 'disc-a' }], memoryMiB: 1024, cpus: 2 });
    // Powered on by hand, not through its BMC: ironring knows nothing of it yet.
    const qemu = spawn(machine.vm.command[0]!, machine.vm.command.slice(1), { stdio: 'ignore' });
    const started = Date.now();
    try {
      let uuid: string | undefined;
      while (uuid === undefined && Date.now() - started < AGENT_TIMEOUT_MS) {
        const found = (await api(lab.app, 'GET', `/v1/ports/detail?address=${machine.mac}`)).json<{ ports: Array<{ node_uuid: string }> }>().ports;
        uuid = found[0]?.node_uuid;
        if (uuid === undefined) await new Promise((r) => setTimeout(r, 500));
      }
      expect(uuid, readFileText(machine.vm.serialLog).slice(-3000)).toBeDefined();
      console.log(`real node ${machine.name}: unknown machine booted → enrolled in ${Date.now() - started} ms`);
      const node = (await api(lab.app, 'GET', `/v1/nodes/${uuid}`)).json<{ driver: string; provision_state: string; extra: Record<string, unknown>; properties: Record<string, unknown>; inspect_interface: string }>();
      expect(node).toMatchObject({ driver: 'ipmi', provision_state: 'enroll', inspect_interface: 'agent', extra: { auto_discovered: true } });
      // It network-booted the discovery entry (iPXE's script from c2), not a node's.
      expect(readFileText(machine.vm.serialLog)).toContain('d15c0003/config');
      expect(node.properties).toMatchObject({ cpus: 2, cpu_arch: 'x86_64', memory_mb: 1024, local_gb: 4, capabilities: 'boot_mode:bios' });
      const stored = (await api(lab.app, 'GET', `/v1/nodes/${uuid}/inventory`)).json<{ inventory: { disks: Array<{ serial: string }>; boot: { pxe_interface: string } } }>();
      expect(stored.inventory.disks.map((d) => d.serial)).toEqual(['disc-a']);
      expect(stored.inventory.boot.pxe_interface).toBe(machine.mac);
    } finally {
      const exited = new Promise((r) => qemu.once('exit', r));
      qemu.kill('SIGKILL');
      await exited;
    }
    // The operator gives it its BMC: manage verifies it, as for any node.
    const nodeUuid = (await api(lab.app, 'GET', `/v1/ports/detail?address=${machine.mac}`)).json<{ ports: Array<{ node_uuid: string }> }>().ports[0]!.node_uuid;
    const set = await api(lab.app, 'PATCH', `/v1/nodes/${nodeUuid}`, [
      { op: 'add', path: '/driver_info/ipmi_address', value: lab.network.hostAddress },
      { op: 'add', path: '/driver_info/ipmi_port', value: machine.bmc.port },
      { op: 'add', path: '/driver_info/ipmi_username', value: machine.bmc.user },
      { op: 'add', path: '/driver_info/ipmi_password', value: machine.bmc.password },
    ]);
    expect(set.status, set.body).toBe(200);
    await provision(lab.app, nodeUuid, 'manage');
    await waitForProvisionState(lab.app, nodeUuid, 'manageable', STATE_TIMEOUT_MS);

    // Adoption with the stock client: the machine is said to run an image already; nothing is
    // written or booted, and the BMC is asked what the machine does.
    const image = markerDiskImage('adopted');
    const imageFile = path.join(lab.network.slot.dir, 'image-adopted.raw');
    writeFileSync(imageFile, image);
    const ready = await api(lab.app, 'PATCH', `/v1/nodes/${nodeUuid}`, [
      { op: 'replace', path: '/boot_interface', value: 'ipxe' },
      { op: 'replace', path: '/deploy_interface', value: 'direct' },
      { op: 'add', path: '/driver_info/deploy_kernel', value: `file://${ramdisk.kernel.path}` },
      { op: 'add', path: '/driver_info/deploy_kernel_checksum', value: ramdisk.kernel.checksum },
      { op: 'add', path: '/driver_info/deploy_ramdisk', value: `file://${ramdisk.initramfs.path}` },
      { op: 'add', path: '/driver_info/deploy_ramdisk_checksum', value: ramdisk.initramfs.checksum },
      { op: 'add', path: '/instance_info/image_source', value: lab.serveFile(imageFile) },
      { op: 'add', path: '/instance_info/image_os_hash_algo', value: 'sha256' },
      { op: 'add', path: '/instance_info/image_os_hash_value', value: sha256(image) },
    ]);
    expect(ready.status, ready.body).toBe(200);
    const bmcEvents = machine.bmc.events.length;
    expect(await baremetal(['node', 'adopt', nodeUuid])).toBe('');
    await waitForProvisionState(lab.app, nodeUuid, 'active', STATE_TIMEOUT_MS);
    expect(await nodeStates(lab.app, nodeUuid)).toMatchObject({ provision_state: 'active', power_state: 'power off', last_error: null });
    // Read, never switched: no power on and no boot device set through the BMC.
    expect(machine.bmc.events.slice(bmcEvents).filter((e) => e.startsWith('VM started ') || e.startsWith('BOOTDEV'))).toEqual([]);
    await machine.bmc.stop();
  }, SCENARIO_TIMEOUT_MS);
});
