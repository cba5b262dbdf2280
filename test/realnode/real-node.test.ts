/**
 * A real machine, end to end: a qemu VM (TCG) behind a pyghmi virtual BMC, on a bridge with a real
 * `ironring conductor` in its own network namespace and that conductor's dnsmasq (files mode). The
 * API enrolls it as an `ipmi` node and deploys it with the ramdisk deploy interface; the BMC powers
 * the VM on, which network-boots from the conductor and prints a marker line with its kernel
 * command line on its serial console. One VM at a time: the scenarios run in order.
 *
 * Run alone with `npx vitest run test/realnode`. Needs root and Debian packages (requirements.ts);
 * skips with one line outside CI when they are missing, fails under CI=true.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { waitUntil } from '../helpers/conductors.js';
import { HOLD_PARAM } from './assets.js';
import { api, enrollMachine, makeAvailable, nodeStates, provision, setRamdiskInstance, waitForProvisionState } from './api.js';
import { openLab } from './lab.js';
import type { Lab, LabMachine } from './lab.js';
import type { Dnsmasq } from './dnsmasq.js';
import { realNodeAvailable } from './requirements.js';
import { waitForBoot } from './vm.js';
import type { Firmware } from './vm.js';

const available = realNodeAvailable();

/** Generous: the ROM's DHCP takes seconds, and a TCG boot on a loaded two-core machine tens of them. */
const BOOT_TIMEOUT_MS = 180_000;
const STATE_TIMEOUT_MS = 90_000;
/** One scenario: enroll to active, the boot, and undeploy, each bounded above. */
const SCENARIO_TIMEOUT_MS = 600_000;

describe.skipIf(!available)('a real machine network-booted by a conductor', () => {
  let lab: Lab;

  beforeAll(async () => {
    lab = await openLab();
    await lab.addConductor('c1', 11);
  }, 120_000);
  afterEach((ctx) => {
    if (ctx.task.result?.state === 'fail') console.log(`real-node diagnostics after "${ctx.task.name}":\n${lab.diagnostics()}`);
  });
  afterAll(async () => {
    await lab?.close();
  }, 60_000);

  /**
   * Enrolls, manages, provides and deploys `machine` with a fresh kernel parameter, and waits for the
   * VM to print the marker. Returns the node and the command line the ramdisk saw.
   */
  async function deployAndBoot(machine: LabMachine, bootInterface: 'pxe' | 'ipxe', bootMode: Firmware, extraParams = '') {
    const { app } = lab;
    const started = Date.now();
    const uuid = await enrollMachine(app, machine, lab.network.hostAddress, lab.assets, { bootInterface, bootMode });
    await provision(app, uuid, 'manage');
    await waitForProvisionState(app, uuid, 'manageable', STATE_TIMEOUT_MS);
    // Verifying read the power state through the BMC: the VM is not running.
    expect(await nodeStates(app, uuid)).toMatchObject({ power_state: 'power off', last_error: null });
    await provision(app, uuid, 'provide');
    await waitForProvisionState(app, uuid, 'available', STATE_TIMEOUT_MS);
    const token = `ironring.test=${randomBytes(6).toString('hex')}`;
    await setRamdiskInstance(app, uuid, lab.assets, `console=ttyS0 panic=-1 ${token}${extraParams}`);
    machine.vm.clearLog();
    await provision(app, uuid, 'active');
    await waitForProvisionState(app, uuid, 'active', STATE_TIMEOUT_MS);
    const activeMs = Date.now() - started;
    // The deploy set network boot for good and powered the VM on through the BMC.
    expect(machine.bmc.events).toEqual(expect.arrayContaining(['BOOTDEV network persistent', 'POWER on']));
    expect(machine.bmc.events.some((e) => /^VM started \d+$/.test(e))).toBe(true);
    const boot = await waitForBoot(machine.vm.serialLog, BOOT_TIMEOUT_MS);
    console.log(`real node ${machine.name} (${bootInterface}, ${bootMode}): active after ${activeMs} ms, marker ${boot.ms} ms later`);
    return { uuid, token, params: boot.params };
  }

  /** The command line of the instance entry: the instance's parameters, a RAM root, and its initrd. */
  function expectInstanceCommandLine(params: string[], token: string, machine: LabMachine): void {
    expect(params).toEqual(expect.arrayContaining(['console=ttyS0', 'panic=-1', token, 'root=/dev/ram0']));
    expect(params.some((p) => p.startsWith('initrd='))).toBe(true);
    // BOOTIF, where an entry adds it, must name the NIC that booted.
    const mac = machine.mac.replaceAll(':', '-');
    for (const p of params.filter((q) => q.startsWith('BOOTIF='))) expect(p.toLowerCase()).toMatch(new RegExp(`^bootif=(01-)?(${mac}|${machine.mac})$`));
  }

  it('deploys an ipmi node over iPXE (BIOS): the VM boots the instance with its parameters; undeploy powers it off', async () => {
    const machine = await lab.addMachine('ipxe-bios', 'bios');
    // The ramdisk stays up this time, so that undeploy has a running machine to power off.
    const { uuid, token, params } = await deployAndBoot(machine, 'ipxe', 'bios', ` ${HOLD_PARAM}`);
    expectInstanceCommandLine(params, token, machine);
    const pid = qemuPid(machine);
    expect(existsSync(`/proc/${pid}`)).toBe(true);
    expect(await nodeStates(lab.app, uuid)).toMatchObject({ power_state: 'power on' });
    // The conductor's dnsmasq answered this MAC, and iPXE was pointed at the HTTP boot script.
    const dhcpLog = lab.conductors[0]!.dnsmasq!.log();
    expect(dhcpLog).toMatch(new RegExp(`DHCPACK\\(\\S+\\) \\S+ ${machine.mac}`));
    expect(dhcpLog).toMatch(/option: 67 bootfile-name\s+http:\/\/\S+\/boot\.ipxe/);

    // Undeploy: tear down (power off through the BMC: the VM is gone), then clean, as Ironic, to available.
    const started = Date.now();
    await provision(lab.app, uuid, 'deleted');
    await waitForProvisionState(lab.app, uuid, 'available', STATE_TIMEOUT_MS);
    console.log(`real node ${machine.name}: undeployed to available in ${Date.now() - started} ms`);
    expect(await nodeStates(lab.app, uuid)).toMatchObject({ power_state: 'power off', last_error: null });
    expect(machine.bmc.events.at(-1)).toBe('POWER off');
    expect(existsSync(`/proc/${pid}`)).toBe(false);
  }, SCENARIO_TIMEOUT_MS);

  it('deploys an ipmi node over PXELINUX and TFTP (BIOS)', async () => {
    const machine = await lab.addMachine('pxe-bios', 'bios');
    const { token, params } = await deployAndBoot(machine, 'pxe', 'bios');
    expectInstanceCommandLine(params, token, machine);
    const dhcpLog = lab.conductors[0]!.dnsmasq!.log();
    expect(dhcpLog).toMatch(/option: 67 bootfile-name\s+pxelinux\.0/);
    // The ramdisk powered the VM off; powered on again by hand (as a reboot loop does), it boots the
    // instance again: its boot files stay while it is active.
    await waitUntil(() => lab.power(machine, 'status') === 'Chassis Power is off', STATE_TIMEOUT_MS, 'the VM to power itself off');
    machine.vm.clearLog();
    lab.power(machine, 'on');
    const again = await waitForBoot(machine.vm.serialLog, BOOT_TIMEOUT_MS);
    console.log(`real node ${machine.name}: booted again in ${again.ms} ms`);
    expectInstanceCommandLine(again.params, token, machine);
    await machine.bmc.stop();
  }, SCENARIO_TIMEOUT_MS);

  it('deploys an ipmi node in UEFI mode: OVMF loads iPXE snponly.efi over TFTP, which boots the instance over HTTP', async () => {
    const machine = await lab.addMachine('ipxe-uefi', 'uefi');
    const { token, params } = await deployAndBoot(machine, 'ipxe', 'uefi');
    expectInstanceCommandLine(params, token, machine);
    const dhcpLog = lab.conductors[0]!.dnsmasq!.log();
    expect(dhcpLog).toMatch(/option: 67 bootfile-name\s+snponly\.efi/);
    await machine.bmc.stop();
  }, SCENARIO_TIMEOUT_MS);

  it('with two conductors on the wire, only the owner\'s dnsmasq answers the machine, and it boots from the owner', async () => {
    const second = await lab.addConductor('c2', 12);
    await waitUntil(async () => (await second.proc!.status()).rings['']?.length === 2, STATE_TIMEOUT_MS, 'the second conductor to join the ring');
    const machine = await lab.addMachine('two-cond', 'bios');
    const { uuid, token, params } = await deployAndBoot(machine, 'ipxe', 'bios');
    expectInstanceCommandLine(params, token, machine);
    const node = (await api(lab.app, 'GET', `/v1/nodes/${uuid}`)).json<{ conductor: string }>();
    const owner = lab.conductors.find((c) => c.host === node.conductor);
    expect(owner, `owner ${node.conductor}`).toBeDefined();
    const acked = new RegExp(`DHCPACK\\(\\S+\\) \\S+ ${machine.mac}`);
    for (const c of lab.conductors) expect(acked.test(c.dnsmasq!.log()), `${c.host} answered`).toBe(c === owner);
    // The iPXE script came from the owner's HTTP boot server.
    expect(owner!.dnsmasq!.log()).toMatch(new RegExp(`option: 67 bootfile-name\\s+http://${owner!.ns.address.replaceAll('.', '\\.')}:\\d+/boot\\.ipxe`));
    await machine.bmc.stop();
  }, SCENARIO_TIMEOUT_MS);

  /** The pid of the VM the BMC started last (from its event line). */
  function qemuPid(machine: LabMachine): number {
    const started = machine.bmc.events.filter((e) => e.startsWith('VM started ')).pop();
    if (started === undefined) throw new Error(`${machine.name}: the BMC never started its VM`);
    return Number(started.slice('VM started '.length));
  }
});

describe.skipIf(!available)('a real machine booted through the conductor\'s ProxyDHCP responder', () => {
  let lab: Lab;
  let site: Dnsmasq;

  beforeAll(async () => {
    lab = await openLab();
    // The site's DHCP server gives addresses only; the conductor's ProxyDHCP the boot information.
    site = await lab.addSiteDhcp('site', 2);
    await lab.addConductor('c1', 11, { dnsmasq: false, env: { IRONRING_DHCP_PROXY_ENABLED: 'true', IRONRING_DNSMASQ_DHCP_HOSTSDIR: '', IRONRING_DNSMASQ_DHCP_OPTSDIR: '' } });
  }, 120_000);
  afterEach((ctx) => {
    if (ctx.task.result?.state === 'fail') console.log(`real-node diagnostics after "${ctx.task.name}":\n${lab.diagnostics()}\n--- site dnsmasq\n${site.log()}`);
  });
  afterAll(async () => {
    await lab?.close();
  }, 60_000);

  it('deploys an ipmi node over iPXE (BIOS): the address from the site server, boot.ipxe from the conductor', async () => {
    const { app } = lab;
    const machine = await lab.addMachine('proxy-bios', 'bios');
    const uuid = await enrollMachine(app, machine, lab.network.hostAddress, lab.assets, { bootInterface: 'ipxe', bootMode: 'bios' });
    await makeAvailable(app, uuid, STATE_TIMEOUT_MS);
    const token = `ironring.test=${randomBytes(6).toString('hex')}`;
    await setRamdiskInstance(app, uuid, lab.assets, `console=ttyS0 panic=-1 ${token}`);
    machine.vm.clearLog();
    await provision(app, uuid, 'active');
    await waitForProvisionState(app, uuid, 'active', STATE_TIMEOUT_MS);
    const boot = await waitForBoot(machine.vm.serialLog, BOOT_TIMEOUT_MS);
    console.log(`real node ${machine.name} (ipxe, bios, ProxyDHCP): marker ${boot.ms} ms after active`);
    expect(boot.params).toEqual(expect.arrayContaining(['console=ttyS0', 'panic=-1', token, 'root=/dev/ram0']));
    // The site server leased the address and gave no boot file: that came from the ProxyDHCP responder.
    expect(site.log()).toMatch(new RegExp(`DHCPACK\\(\\S+\\) \\S+ ${machine.mac}`));
    expect(site.log()).not.toMatch(/option: 67 bootfile-name/);
    await machine.bmc.stop();
  }, SCENARIO_TIMEOUT_MS);
});
