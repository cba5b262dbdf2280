/**
 * No verb pretends (issue #14, items 9–12), through a real `ironring up` process: the REST API, its
 * conductor, the real `ipmitool` and a BMC simulator (pyghmi) on 127.0.0.1.
 *
 * - an action the node's interfaces cannot do (`no-inspect`, `no-rescue`, clean steps no interface
 *   offers) is refused with 400 and Ironic's message before the node changes;
 * - `manage` reads the power state through the BMC: wrong credentials end in `enroll` with why;
 * - the recorded power state follows every power action and provision step, and the periodic sync
 *   sets a BMC changed behind the conductor's back back to the recorded state;
 * - `provide` keeps the instance_info set at enrolment; tear-down clears it.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bmcSimulatorAvailable, startBmcSimulator } from '../drivers/bmc-simulator.js';
import type { BmcSimulator } from '../drivers/bmc-simulator.js';
import { startCli } from '../helpers/cli.js';
import type { CliProcess } from '../helpers/cli.js';
import { waitUntil } from '../helpers/conductors.js';

const available = await bmcSimulatorAvailable();
const H = { 'content-type': 'application/json', 'x-openstack-ironic-api-version': 'latest' };

interface NodeJson {
  uuid: string;
  provision_state: string;
  target_provision_state: string | null;
  power_state: string | null;
  target_power_state: string | null;
  last_error: string | null;
  maintenance: boolean;
  reservation: string | null;
  instance_info: Record<string, unknown>;
  driver_internal_info: Record<string, unknown>;
  clean_step: Record<string, unknown>;
}

function fault(body: string): string {
  return (JSON.parse((JSON.parse(body) as { error_message: string }).error_message) as { faultstring: string }).faultstring;
}

describe.skipIf(!available)('verbs through `ironring up`, ipmitool and a BMC simulator', () => {
  let dir: string;
  let up: CliProcess;
  let base: string;
  let bmc: BmcSimulator;
  let images: Server;
  let imageBase: string;
  const files: Record<string, Buffer> = { 'deploy.kernel': Buffer.from('deploy kernel\n'), 'deploy.initrd': Buffer.from('deploy ramdisk\n'), 'vmlinuz': Buffer.from('instance kernel\n'), 'initrd': Buffer.from('instance ramdisk\n') };
  const sha = (name: string) => `sha256:${createHash('sha256').update(files[name]!).digest('hex')}`;

  beforeAll(async () => {
    bmc = await startBmcSimulator();
    images = createServer((req, res) => {
      const body = files[(req.url ?? '').slice(1)];
      if (body === undefined) return void res.writeHead(404).end();
      res.writeHead(200, { 'content-length': body.length }).end(body);
    });
    await new Promise<void>((resolve) => images.listen(0, '127.0.0.1', resolve));
    imageBase = `http://127.0.0.1:${(images.address() as AddressInfo).port}`;
    dir = mkdtempSync(path.join(tmpdir(), 'ironring-verbs-'));
    up = startCli(
      ['up', '--data-dir', dir, '--api-address', '127.0.0.1:0', '--rpc-address', '127.0.0.1:0', '--tftp-address', '127.0.0.1:0', '--http-address', '127.0.0.1:0', '--host', 'verbs'],
      // A short power-sync interval so that the periodic sync is seen within the test.
      { cwd: dir, env: { IRONRING_CONDUCTOR_SYNC_POWER_STATE_INTERVAL: '1' } },
    );
    base = (await up.waitForOutput(/API: +(http:\/\/127\.0\.0\.1:\d+)\/v1/, 30_000))[1]!;
  }, 60_000);
  afterAll(async () => {
    if (up && up.child.exitCode === null) {
      up.child.kill('SIGTERM');
      await up.exited;
    }
    await bmc?.stop();
    await new Promise((resolve) => images?.close(resolve));
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const req = async (method: string, url: string, body?: unknown) => {
    const res = await fetch(`${base}${url}`, { method, headers: H, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    return { status: res.status, text: await res.text() };
  };
  const node = async (ident: string) => JSON.parse((await req('GET', `/v1/nodes/${ident}`)).text) as NodeJson;
  const act = (ident: string, body: Record<string, unknown>) => req('PUT', `/v1/nodes/${ident}/states/provision`, body);
  const settle = async (ident: string, state: string, timeoutMs = 60_000) => {
    await waitUntil(async () => {
      const n = await node(ident);
      return n.provision_state === state && n.target_provision_state === null;
    }, timeoutMs, `${ident} to reach ${state}`).catch(async (err: unknown) => {
      throw new Error(`${(err as Error).message}; node: ${JSON.stringify(await node(ident))}; stderr: ${up.stderr().slice(-2000)}`);
    });
    return node(ident);
  };
  const powerIdle = (ident: string) => waitUntil(async () => (await node(ident)).target_power_state === null, 60_000, `${ident}'s power action to end`);
  /** What the BMC itself says, asked with the real ipmitool, not through ironring. */
  const bmcPower = (command = 'status'): string =>
    execFileSync('ipmitool', ['-I', 'lanplus', '-H', '127.0.0.1', '-p', String(bmc.port), '-U', bmc.user, '-E', '-R', '3', '-N', '1', 'chassis', 'power', command], {
      env: { ...process.env, IPMI_PASSWORD: bmc.password },
      encoding: 'utf8',
    }).trim();
  const driverInfo = (password: string) => ({
    ipmi_address: '127.0.0.1',
    ipmi_port: bmc.port,
    ipmi_username: bmc.user,
    ipmi_password: password,
    deploy_kernel: `${imageBase}/deploy.kernel`,
    deploy_kernel_checksum: sha('deploy.kernel'),
    deploy_ramdisk: `${imageBase}/deploy.initrd`,
    deploy_ramdisk_checksum: sha('deploy.initrd'),
  });

  it('manage with credentials the BMC refuses ends in enroll, last_error saying the power-state read failed and why', async () => {
    const created = await req('POST', '/v1/nodes', { name: 'wrong-pass', driver: 'ipmi', driver_info: driverInfo('not-the-password') });
    expect(created.status, created.text).toBe(201);
    expect((await act('wrong-pass', { target: 'manage' })).status).toBe(202);
    const n = await settle('wrong-pass', 'enroll');
    expect(n.last_error).toMatch(new RegExp(`^Failed to get power state for node ${n.uuid}\\. Error: `));
    expect(n.last_error).toContain(`ipmitool chassis power status on 127.0.0.1:${bmc.port} failed after 3 attempt(s): Error: Unable to establish IPMI v2 / RMCP+ session`);
    expect(n.power_state).toBeNull();
  }, 90_000);

  it('refuses what ipmi cannot do, keeps instance_info through provide, and records the power state the BMC reports', async () => {
    const created = await req('POST', '/v1/nodes', {
      name: 'bmc',
      driver: 'ipmi',
      driver_info: driverInfo(bmc.password),
      instance_info: { kernel: `${imageBase}/vmlinuz`, kernel_checksum: sha('vmlinuz'), ramdisk: `${imageBase}/initrd`, ramdisk_checksum: sha('initrd') },
    });
    expect(created.status, created.text).toBe(201);
    const uuid = (JSON.parse(created.text) as NodeJson).uuid;
    expect((await req('POST', '/v1/ports', { node_uuid: uuid, address: '52:54:00:14:09:01', pxe_enabled: true })).status).toBe(201);

    // manage verifies the BMC: the power state it reads is recorded.
    expect((await act('bmc', { target: 'manage' })).status).toBe(202);
    expect(await settle('bmc', 'manageable')).toMatchObject({ power_state: 'power off', last_error: null });

    // inspect: ipmi has only no-inspect. 400 with Ironic's message, and the node has not moved.
    const inspect = await act('bmc', { target: 'inspect' });
    expect(inspect.status).toBe(400);
    expect(fault(inspect.text)).toBe('Driver ipmi does not support inspect (disabled or not implemented): the node\'s inspect_interface is "no-inspect"');
    // Manual cleaning needs steps, and the steps must be offered by one of the node's interfaces.
    const noSteps = await act('bmc', { target: 'clean' });
    expect(noSteps.status).toBe(400);
    expect(fault(noSteps.text)).toBe('"clean_steps" is required when setting target provision state to clean');
    const unknownStep = await act('bmc', { target: 'clean', clean_steps: [{ interface: 'deploy', step: 'erase_devices' }] });
    expect(unknownStep.status).toBe(400);
    expect(fault(unknownStep.text)).toContain('node does not support this clean step: {"interface":"deploy","step":"erase_devices"} (deploy_interface "ramdisk" offers no clean steps)');
    let n = await node('bmc');
    expect(n).toMatchObject({ provision_state: 'manageable', target_provision_state: null, last_error: null, clean_step: {} });

    // provide cleans (the ramdisk deploy has no automated steps: none claimed) and keeps instance_info.
    expect((await act('bmc', { target: 'provide' })).status).toBe(202);
    n = await settle('bmc', 'available');
    expect(n.instance_info).toMatchObject({ kernel: `${imageBase}/vmlinuz`, ramdisk: `${imageBase}/initrd` });
    expect(n.driver_internal_info.clean_steps).toEqual([]);
    expect(n.clean_step).toEqual({});

    // deploy powers the node on: recorded, and the BMC agrees.
    expect((await act('bmc', { target: 'active' })).status).toBe(202);
    n = await settle('bmc', 'active');
    expect(n.power_state).toBe('power on');
    expect(bmcPower()).toBe('Chassis Power is on');

    // rescue: ipmi has only no-rescue.
    const rescue = await act('bmc', { target: 'rescue', rescue_password: 'x' });
    expect(rescue.status).toBe(400);
    expect(fault(rescue.text)).toContain('Driver ipmi does not support rescue (disabled or not implemented)');
    expect(await node('bmc')).toMatchObject({ provision_state: 'active', target_provision_state: null });

    // reboot: the record agrees with what ipmitool reads from the BMC.
    const eventsBefore = bmc.events.length;
    expect((await req('PUT', '/v1/nodes/bmc/states/power', { target: 'rebooting' })).status).toBe(202);
    await powerIdle('bmc');
    expect(bmc.events.slice(eventsBefore)).toEqual(['POWER off', 'POWER on']);
    expect((await node('bmc')).power_state).toBe('power on');
    expect(bmcPower()).toBe('Chassis Power is on');

    // The periodic sync (every second here): a BMC switched off behind the conductor's back is set
    // back to the recorded "power on" (force_power_state_during_sync = true).
    const beforeOff = bmc.events.length;
    bmcPower('off');
    await waitUntil(() => bmc.events.slice(beforeOff).join() === 'POWER off,POWER on', 30_000, 'the power-state sync to power the BMC back on');
    expect(bmcPower()).toBe('Chassis Power is on');
    await waitUntil(async () => (await node('bmc')).reservation === null, 30_000, 'the sync to release the node');
    expect(await node('bmc')).toMatchObject({ power_state: 'power on', maintenance: false, last_error: null });

    // undeploy powers off: recorded as the BMC says; tear-down clears the instance's fields.
    expect((await act('bmc', { target: 'deleted' })).status).toBe(202);
    n = await settle('bmc', 'available');
    expect(n.power_state).toBe('power off');
    expect(bmcPower()).toBe('Chassis Power is off');
    expect(n.instance_info).toEqual({});

    // adopt works for ipmi through the ramdisk deploy's take-over: the instance's boot files are
    // written and the power state is read from the BMC.
    expect((await req('PATCH', '/v1/nodes/bmc', [
      { op: 'add', path: '/instance_info', value: { kernel: `${imageBase}/vmlinuz`, kernel_checksum: sha('vmlinuz'), ramdisk: `${imageBase}/initrd`, ramdisk_checksum: sha('initrd') } },
    ])).status).toBe(200);
    expect((await act('bmc', { target: 'manage' })).status).toBe(202);
    await settle('bmc', 'manageable');
    expect((await act('bmc', { target: 'adopt' })).status).toBe(202);
    expect(await settle('bmc', 'active')).toMatchObject({ power_state: 'power off', last_error: null });
  }, 180_000);

  it('keeps the instance_info set at enrolment through provide, and clears it at tear-down', async () => {
    const instanceInfo = { image_source: 'http://images.example/disk.qcow2', root_gb: 10, capabilities: { boot_mode: 'uefi' } };
    expect((await req('POST', '/v1/nodes', { name: 'keep-info', driver: 'fake-hardware', instance_info: instanceInfo })).status).toBe(201);
    expect((await act('keep-info', { target: 'manage' })).status).toBe(202);
    await settle('keep-info', 'manageable');
    expect((await act('keep-info', { target: 'provide' })).status).toBe(202);
    expect((await settle('keep-info', 'available')).instance_info).toEqual(instanceInfo);
    expect((await act('keep-info', { target: 'active' })).status).toBe(202);
    expect((await settle('keep-info', 'active')).instance_info).toEqual(instanceInfo);
    expect((await act('keep-info', { target: 'deleted' })).status).toBe(202);
    expect((await settle('keep-info', 'available')).instance_info).toEqual({});
  }, 60_000);

  it('records the power state of a fake node after manage, deploy and undeploy', async () => {
    expect((await req('POST', '/v1/nodes', { name: 'fake-power', driver: 'fake-hardware' })).status).toBe(201);
    expect((await node('fake-power')).power_state).toBeNull();
    expect((await act('fake-power', { target: 'manage' })).status).toBe(202);
    expect((await settle('fake-power', 'manageable')).power_state).toBe('power off');
    expect((await act('fake-power', { target: 'provide' })).status).toBe(202);
    await settle('fake-power', 'available');
    expect((await act('fake-power', { target: 'active' })).status).toBe(202);
    expect((await settle('fake-power', 'active')).power_state).toBe('power on');
    expect((await act('fake-power', { target: 'deleted' })).status).toBe(202);
    expect((await settle('fake-power', 'available')).power_state).toBe('power off');
  }, 60_000);

  it('lets the fake interfaces succeed, and refuses no-inspect and no-rescue on fake-hardware too', async () => {
    expect((await req('POST', '/v1/nodes', { name: 'plain-fake', driver: 'fake-hardware', inspect_interface: 'no-inspect', rescue_interface: 'no-rescue' })).status).toBe(201);
    expect((await act('plain-fake', { target: 'manage' })).status).toBe(202);
    await settle('plain-fake', 'manageable');
    const refused = await act('plain-fake', { target: 'inspect' });
    expect(refused.status).toBe(400);
    expect(fault(refused.text)).toContain('Driver fake-hardware does not support inspect');
    expect((await node('plain-fake')).provision_state).toBe('manageable');

    // The defaults of fake-hardware are the fake interfaces, as Ironic's.
    expect((await req('POST', '/v1/nodes', { name: 'all-fake', driver: 'fake-hardware' })).status).toBe(201);
    expect((await act('all-fake', { target: 'manage' })).status).toBe(202);
    await settle('all-fake', 'manageable');
    expect((await act('all-fake', { target: 'inspect' })).status).toBe(202);
    await settle('all-fake', 'manageable');
    // clean_steps must be a list of {interface, step}, and only with clean.
    const malformed = await act('all-fake', { target: 'clean', clean_steps: [{ interface: 'deploy' }] });
    expect(malformed.status).toBe(400);
    expect(fault(malformed.text)).toBe('clean_steps[0].step: required, a string');
    const misplaced = await act('all-fake', { target: 'provide', clean_steps: [{ interface: 'deploy', step: 'erase_devices' }] });
    expect(misplaced.status).toBe(400);
    expect(fault(misplaced.text)).toBe('"clean_steps" is only valid when setting target provision state to clean');
    expect((await node('all-fake')).provision_state).toBe('manageable');
    // A manual clean runs exactly the steps asked for, and says which ran.
    const steps = [{ interface: 'deploy', step: 'erase_devices_metadata' }];
    expect((await act('all-fake', { target: 'clean', clean_steps: steps })).status).toBe(202);
    const cleaned = await settle('all-fake', 'manageable');
    expect(cleaned.driver_internal_info.clean_steps).toEqual(steps);
    expect(cleaned.last_error).toBeNull();
    // adopt takes the node over as if deployed; the fake power reports it.
    expect((await act('all-fake', { target: 'adopt' })).status).toBe(202);
    expect(await settle('all-fake', 'active')).toMatchObject({ last_error: null, power_state: 'power off' });
    // rescue needs a rescue password, as Ironic's (the fake interface only records the rescue).
    const bare = await act('all-fake', { target: 'rescue' });
    expect(bare.status).toBe(400);
    expect(fault(bare.text)).toContain("a non-empty 'rescue_password' is required");
    expect((await act('all-fake', { target: 'rescue', rescue_password: 'pw' })).status).toBe(202);
    await settle('all-fake', 'rescue');
    expect((await act('all-fake', { target: 'unrescue' })).status).toBe(202);
    await settle('all-fake', 'active');
  }, 120_000);
});
