/**
 * The `direct` deploy interface against a scripted agent (IPA's command API on a loopback port):
 * what it refuses before touching anything, what each heartbeat moves, and that a conductor that
 * never saw the deploy before (a take-over) goes on from what `driver_internal_info` records.
 */
import http from 'node:http';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createDriverRegistry, FakeHardwareState } from '../../src/drivers/index.js';
import type { DriverTask } from '../../src/drivers/index.js';
import { DIRECT_DEPLOY_KEY, WRITE_IMAGE_STEP } from '../../src/drivers/direct/direct-deploy.js';
import type { ImageStageStatus, InstanceImagePort } from '../../src/drivers/direct/direct-deploy.js';
import { decodeConfigDrive } from '../../src/agent/disk/config-drive.js';
import { makeNode, PORTS, silentLogger } from './helpers.js';

const DIGEST = 'ab'.repeat(32);
const TOKEN = 'cd'.repeat(32);
const IMAGE = { image_source: 'http://images.example/disk.raw', image_os_hash_algo: 'sha256', image_os_hash_value: DIGEST };

interface Seen {
  method: string;
  url: string;
  body: unknown;
}

/** A scripted agent: answers each request with what `answer` returns, records what it got. */
async function scriptedAgent(answer: (req: Seen) => { status: number; body: unknown }): Promise<{ url: string; seen: Seen[]; close(): Promise<void> }> {
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString();
      const got = { method: req.method ?? '', url: req.url ?? '', body: text === '' ? null : (JSON.parse(text) as unknown) };
      seen.push(got);
      const { status, body } = answer(got);
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, seen, close: () => new Promise((r) => server.close(() => r())) };
}

const result = (status: string, extra: Record<string, unknown> = {}) => ({ id: 'cmd-1', command_name: 'standby.prepare_image', command_params: {}, command_status: status, command_error: null, command_result: null, ...extra });

interface TaskFields {
  instance_info?: Record<string, unknown>;
  driver_internal_info?: Record<string, unknown>;
  properties?: Record<string, unknown>;
  provision_state?: string;
  /** `[deploy] fast_track` on, with its timeout. */
  fastTrack?: boolean;
  /** Counts the calls of the task's `forgetAgent`. */
  forgot?: { count: number };
}

function task(fields: TaskFields = {}, apiUrl: string | null = 'http://api.example:6385', fake = new FakeHardwareState(), images?: InstanceImagePort): DriverTask {
  const registry = createDriverRegistry({
    fakeState: fake,
    agentApiUrl: apiUrl,
    agentClient: { timeoutSeconds: 5, attempts: 1 },
    ...(images ? { instanceImages: images } : {}),
    ...(fields.fastTrack ? { fastTrack: { enabled: true, timeoutSeconds: 300 } } : {}),
  });
  const node = makeNode({ deploy_interface: 'direct', provision_state: fields.provision_state ?? 'wait call-back', instance_info: { ...IMAGE, ...fields.instance_info }, properties: fields.properties ?? {}, driver_internal_info: fields.driver_internal_info ?? {} });
  const forgot = fields.forgot;
  return registry.bind({ node, ports: PORTS, logger: silentLogger, agentToken: TOKEN, ...(forgot ? { forgetAgent: async () => void forgot.count++ } : {}) });
}

describe('direct deploy: validate', () => {
  it.each([
    [{ image_source: 'glance-image-id' }, 'instance_info.image_source must be an http:// or https:// URL'],
    [{ image_source: 'http://user:pw@images.example/x.raw' }, 'must not carry a user name or password'],
    [{ image_os_hash_algo: 'md5', image_os_hash_value: 'a'.repeat(32) }, 'instance_info.image_os_hash_algo must be one of sha256, sha384, sha512'],
    [{ image_os_hash_value: 'xyz' }, 'instance_info.image_os_hash_value must be a sha256 digest'],
    [{ image_os_hash_algo: undefined, image_os_hash_value: undefined, image_checksum: 'a'.repeat(32) }, 'is an md5 digest, which is not accepted'],
    [{ image_disk_format: 'vmdk' }, 'instance_info.image_disk_format must be raw or qcow2, not "vmdk"'],
    [{ image_disk_format: 'qcow2' }, 'instance_info.image_disk_format qcow2 needs a conductor that converts and serves images'],
    [{ image_disk_format: 'qcow2', image_os_hash_algo: 'sha384', image_os_hash_value: 'a'.repeat(96) }, 'instance_info.image_os_hash_algo must be sha256 or sha512 for a qcow2 image'],
    [{ root_device: { colour: 'blue' } }, 'instance_info.root_device'],
    [{ image_type: 'partition' }, 'instance_info.image_type is "partition": the direct deploy writes whole-disk images only (partition images are not supported yet)'],
    [{ kernel: 'http://images.example/vmlinuz', ramdisk: 'http://images.example/initrd' }, 'instance_info.kernel and instance_info.ramdisk are set, which marks a partition image'],
    [{ configdrive: { user_data: 'x', files: [] } }, 'instance_info.configdrive: unexpected key(s) "files"; valid: meta_data, network_data, user_data, vendor_data'],
    [{ configdrive: { meta_data: 'uuid=1' } }, 'instance_info.configdrive.meta_data: must be an object'],
    [{ configdrive: ['user_data'] }, 'instance_info.configdrive: the JSON form is an object'],
  ])('refuses %j, naming the field', async (change, message) => {
    const t = task({ instance_info: change });
    await expect(t.driver.deploy.validate(t)).rejects.toThrow(message);
  });

  it('accepts image_type whole-disk, and a kernel without a ramdisk (as Ironic: only both mark a partition image)', async () => {
    for (const change of [{ image_type: 'whole-disk' }, { kernel: 'http://images.example/vmlinuz' }]) {
      const t = task({ instance_info: change });
      await expect(t.driver.deploy.validate(t)).resolves.toBeUndefined();
    }
  });

  it('accepts the legacy image_checksum as sha256 hex, and refuses without an API URL for the agent', async () => {
    const legacy = task({ instance_info: { image_os_hash_algo: undefined, image_os_hash_value: undefined, image_checksum: `sha256:${DIGEST}` } });
    await expect(legacy.driver.deploy.validate(legacy)).resolves.toBeUndefined();
    const noUrl = task({}, null);
    await expect(noUrl.driver.deploy.validate(noUrl)).rejects.toThrow('[deploy] agent_api_url is not set');
  });

  it('boots the deploy ramdisk from the network once and waits for the agent', async () => {
    const fake = new FakeHardwareState();
    const t = task({}, 'http://api.example:6385', fake);
    expect(await t.driver.deploy.deploy(t)).toBe('wait');
    expect(fake.peek(t.node.uuid)).toMatchObject({ prepared: 'ramdisk', bootDevice: 'pxe', persistent: false, power: 'power on' });
  });
});

describe('direct deploy: heartbeats', () => {
  let agent: Awaited<ReturnType<typeof scriptedAgent>>;
  let script: (req: Seen) => { status: number; body: unknown };
  beforeEach(async () => {
    agent = await scriptedAgent((req) => script(req));
  });
  afterEach(async () => {
    await agent.close();
  });

  it('first heartbeat: sends standby.prepare_image without waiting, with the image and the credential', async () => {
    script = () => ({ status: 200, body: result('RUNNING') });
    const t = task({ instance_info: { root_device: { serial: 'S1' } } });
    const progress = await t.driver.deploy.heartbeat(t, { url: agent.url, version: '10.0.0' });
    expect(progress).toEqual({ kind: 'wait', internal: { [DIRECT_DEPLOY_KEY]: { phase: 'writing', command: 'cmd-1' }, deploy_step: WRITE_IMAGE_STEP } });
    expect(agent.seen).toHaveLength(1);
    expect(agent.seen[0]!.method).toBe('POST');
    expect(agent.seen[0]!.url).toBe(`/v1/commands/?wait=false&agent_token=${TOKEN}`);
    expect(agent.seen[0]!.body).toMatchObject({
      name: 'standby.prepare_image',
      params: { image_info: { urls: [IMAGE.image_source], os_hash_algo: 'sha256', os_hash_value: DIGEST, disk_format: 'raw', root_device: { serial: 'S1' } } },
    });
  });

  it('first heartbeat with the JSON form of the config drive: the conductor builds the config-2 ISO and sends it as gzipped base64', async () => {
    script = () => ({ status: 200, body: result('RUNNING') });
    const t = task({ instance_info: { configdrive: { user_data: '#!/bin/sh\necho hi\n', meta_data: { hostname: 'n1' } } } });
    await t.driver.deploy.heartbeat(t, { url: agent.url, version: '10.0.0' });
    const sent = (agent.seen[0]!.body as { params: { configdrive: string } }).params.configdrive;
    // What the agent checks before writing it: gzip of an ISO 9660 image labelled config-2.
    const iso = await decodeConfigDrive(sent);
    expect(iso.subarray(32769, 32774).toString('latin1')).toBe('CD001');
    expect(iso.subarray(32808, 32816).toString('latin1')).toBe('config-2');
  });

  it('a conductor taking the node over polls the recorded command: running → wait, succeeded → resume', async () => {
    const internal = { [DIRECT_DEPLOY_KEY]: { phase: 'writing', command: 'cmd-1' } };
    script = () => ({ status: 200, body: result('RUNNING') });
    const t = task({ driver_internal_info: internal });
    expect(await t.driver.deploy.heartbeat(t, { url: agent.url, version: '10' })).toEqual({ kind: 'wait' });
    expect(agent.seen.at(-1)).toMatchObject({ method: 'GET', url: `/v1/commands/cmd-1?agent_token=${TOKEN}` });
    script = () => ({ status: 200, body: result('SUCCEEDED', { command_result: { result: 'prepare_image: image (disk.raw) written to device /dev/vda' } }) });
    expect(await t.driver.deploy.heartbeat(t, { url: agent.url, version: '10' })).toEqual({
      kind: 'resume',
      internal: { [DIRECT_DEPLOY_KEY]: { phase: 'written', command: 'cmd-1', result: 'prepare_image: image (disk.raw) written to device /dev/vda' }, deploy_step: {} },
    });
  });

  it.each([
    ['the command failed', () => ({ status: 200, body: result('FAILED', { command_error: { type: 'ImageChecksumMismatch', code: 409, message: 'digest mismatch', details: '' } }) }), 'write_image failed on the node: ImageChecksumMismatch: digest mismatch'],
    ['the agent restarted and forgot it', () => ({ status: 404, body: { message: 'Command not found' } }), 'no longer knows its standby.prepare_image command cmd-1'],
    ['the agent refuses the credential', () => ({ status: 401, body: { message: 'Token invalid.' } }), '401 Token invalid.'],
    ['the agent answers garbage', () => ({ status: 200, body: { command_status: 'MAYBE' } }), 'not IPA\'s command API'],
  ])('fails the deploy when %s', async (_, answer, message) => {
    script = answer;
    const t = task({ driver_internal_info: { [DIRECT_DEPLOY_KEY]: { phase: 'writing', command: 'cmd-1' } } });
    const progress = await t.driver.deploy.heartbeat(t, { url: agent.url, version: '10' });
    expect(progress.kind).toBe('fail');
    expect((progress as { error: string }).error).toContain(message);
  });

  it('fails, naming the agent, when it cannot be reached at all', async () => {
    await agent.close();
    const t = task();
    const progress = await t.driver.deploy.heartbeat(t, { url: agent.url, version: '10' });
    expect(progress).toMatchObject({ kind: 'fail' });
    expect((progress as { error: string }).error).toMatch(/did not take standby\.prepare_image: the agent at http:\/\/127\.0\.0\.1:\d+ could not be reached/);
    agent = await scriptedAgent(() => ({ status: 500, body: {} }));
  });

  it('after the write: syncs through the agent, powers off, boots from disk for good (BMC and network entry), powers on', async () => {
    script = (req) => ({ status: 200, body: { ...result('SUCCEEDED'), id: 'sync-1', command_name: (req.body as { name: string }).name } });
    const fake = new FakeHardwareState();
    const t = task({ driver_internal_info: { [DIRECT_DEPLOY_KEY]: { phase: 'written', command: 'cmd-1' }, agent_url: agent.url } }, 'http://api.example:6385', fake);
    fake.machine(t.node).prepared = 'ramdisk';
    const before = fake.machine(t.node).powerOns;
    expect(await t.driver.deploy.deploy(t)).toBe('done');
    expect(agent.seen.map((s) => (s.body as { name: string }).name)).toEqual(['standby.sync']);
    expect(agent.seen[0]!.url).toContain('wait=true');
    expect(fake.peek(t.node.uuid)).toMatchObject({ power: 'power on', bootDevice: 'disk', persistent: true, prepared: 'localboot', powerOns: before + 1 });
  });

  it('after the write in UEFI mode: the ESP from the agent, then install_bootloader naming it, before the sync; an image without an ESP fails', async () => {
    const ESP = '6a2b3c4d-0000-4000-8000-00000000e5f1';
    let esp: string | null = ESP;
    script = (req) => {
      const name = (req.body as { name: string }).name;
      const body = name === 'standby.get_partition_uuids' ? { 'root uuid': '0x0', 'efi system partition uuid': esp } : name === 'image.install_bootloader' ? { result: 'added UEFI boot entry Boot0003' } : null;
      return { status: 200, body: { ...result('SUCCEEDED'), id: `${name}-1`, command_name: name, command_result: body } };
    };
    const uefi = { properties: { capabilities: 'boot_mode:uefi' }, driver_internal_info: { [DIRECT_DEPLOY_KEY]: { phase: 'written', command: 'cmd-1' }, agent_url: agent.url } };
    const fake = new FakeHardwareState();
    const t = task(uefi, 'http://api.example:6385', fake);
    expect(await t.driver.deploy.deploy(t)).toBe('done');
    expect(agent.seen.map((r) => (r.body as { name: string }).name)).toEqual(['standby.get_partition_uuids', 'image.install_bootloader', 'standby.sync']);
    expect(agent.seen[1]!.body).toMatchObject({ params: { efi_system_part_uuid: ESP, target_boot_mode: 'uefi' } });
    expect(fake.peek(t.node.uuid)).toMatchObject({ bootDevice: 'disk', persistent: true, power: 'power on' });

    esp = null;
    const none = task(uefi, 'http://api.example:6385', new FakeHardwareState());
    await expect(none.driver.deploy.deploy(none)).rejects.toThrow('the image has no EFI system partition');
  });

  describe('a qcow2 image: converted and served by the owning conductor', () => {
    const QCOW = { image_source: 'http://images.example/disk.qcow2', image_disk_format: 'qcow2' };
    const RAW_DIGEST = 'ef'.repeat(32);
    /** A converter whose answer the test sets; records who asked for what. */
    const converter = () => {
      const calls: Array<{ node: string; source: { url: string; checksum: string }; retry: boolean } | { released: string }> = [];
      let status: ImageStageStatus = { state: 'staging' };
      const port: InstanceImagePort = {
        stage: (node, source, retry) => (calls.push({ node, source, retry: retry ?? false }), status),
        release: async (node) => void calls.push({ released: node }),
      };
      return { port, calls, set: (s: ImageStageStatus) => void (status = s) };
    };

    it('starts the conversion when the deploy boots the ramdisk; heartbeats wait for it, then the agent gets the raw image and its digest', async () => {
      script = () => ({ status: 200, body: result('RUNNING') });
      const images = converter();
      const t = task({ instance_info: QCOW }, 'http://api.example:6385', new FakeHardwareState(), images.port);
      await expect(t.driver.deploy.validate(t)).resolves.toBeUndefined();
      expect(await t.driver.deploy.deploy(t)).toBe('wait');
      // A new deploy starts the conversion again even after a failure (retry); heartbeats only ask.
      expect(images.calls).toEqual([{ node: t.node.uuid, source: { url: QCOW.image_source, checksum: `sha256:${DIGEST}` }, retry: true }]);
      expect(await t.driver.deploy.heartbeat(t, { url: agent.url, version: '10.0.0' })).toEqual({ kind: 'wait' });
      expect(agent.seen).toHaveLength(0);

      images.set({ state: 'ready', image: { url: 'http://conductor:8080/images/sha256-x.raw', sha256: RAW_DIGEST } });
      const progress = await t.driver.deploy.heartbeat(t, { url: agent.url, version: '10.0.0' });
      expect(progress).toMatchObject({ kind: 'wait', internal: { [DIRECT_DEPLOY_KEY]: { phase: 'writing' } } });
      expect(agent.seen[0]!.body).toMatchObject({
        name: 'standby.prepare_image',
        params: { image_info: { urls: ['http://conductor:8080/images/sha256-x.raw'], os_hash_algo: 'sha256', os_hash_value: RAW_DIGEST, disk_format: 'raw' } },
      });
    });

    it('fails the deploy with the converter\'s reason, and releases the image once the disk is written', async () => {
      const images = converter();
      images.set({ state: 'failed', error: 'the qcow2 image names a backing file, which is refused' });
      const t = task({ instance_info: QCOW }, 'http://api.example:6385', new FakeHardwareState(), images.port);
      expect(await t.driver.deploy.heartbeat(t, { url: agent.url, version: '10.0.0' })).toEqual({
        kind: 'fail',
        error: 'write_image: the conductor could not convert the qcow2 image: the qcow2 image names a backing file, which is refused',
      });
      expect(agent.seen).toHaveLength(0);

      script = (req) => ({ status: 200, body: { ...result('SUCCEEDED'), id: 'sync-1', command_name: (req.body as { name: string }).name } });
      const written = task({ instance_info: QCOW, driver_internal_info: { [DIRECT_DEPLOY_KEY]: { phase: 'written', command: 'cmd-1' }, agent_url: agent.url } }, 'http://api.example:6385', new FakeHardwareState(), images.port);
      expect(await written.driver.deploy.deploy(written)).toBe('done');
      expect(images.calls).toContainEqual({ released: written.node.uuid });
    });
  });

  describe('cleaning through the agent', () => {
    const STEP = { interface: 'deploy', step: 'erase_devices_metadata' };
    const cleanResult = (status: string, extra: Record<string, unknown> = {}) => ({ ...result(status), id: 'clean-1', command_name: 'clean.execute_clean_step', ...extra });

    it('offers the agent\'s metadata erase at priority 99, or the configured one', () => {
      const t = task();
      // The full overwrite is offered for manual cleaning (priority 0) unless configured.
      expect(t.driver.deploy.getCleanSteps!(t)).toEqual([expect.objectContaining({ ...STEP, priority: 99 }), expect.objectContaining({ interface: 'deploy', step: 'erase_devices', priority: 0 })]);
      const registry = createDriverRegistry({ agentApiUrl: 'http://api.example:6385', eraseMetadataPriority: 0, eraseDevices: { priority: 10, iterations: 2, zeroize: false } });
      const zero = registry.bind({ node: makeNode({ deploy_interface: 'direct' }), ports: PORTS, logger: silentLogger });
      expect(zero.driver.deploy.getCleanSteps!(zero).map((s) => s.priority)).toEqual([0, 10]);
    });

    it('boots the deploy ramdisk for cleaning, ending any earlier agent session first', async () => {
      const fake = new FakeHardwareState();
      const forgot = { count: 0 };
      const t = task({ provision_state: 'cleaning', forgot }, 'http://api.example:6385', fake);
      expect(await t.driver.deploy.prepareCleaning!(t)).toBe('wait');
      expect(forgot.count).toBe(1);
      expect(fake.peek(t.node.uuid)).toMatchObject({ prepared: 'ramdisk', bootDevice: 'pxe', persistent: false, power: 'power on' });
    });

    it('sends the step to the agent without waiting; refuses to run it with no agent', async () => {
      script = () => ({ status: 200, body: cleanResult('RUNNING') });
      const t = task({ provision_state: 'cleaning', driver_internal_info: { agent_url: agent.url } });
      expect(await t.driver.deploy.executeCleanStep!(t, STEP)).toEqual({ kind: 'wait', state: { command: 'clean-1' } });
      expect(agent.seen[0]!.url).toBe(`/v1/commands/?wait=false&agent_token=${TOKEN}`);
      expect(agent.seen[0]!.body).toMatchObject({
        name: 'clean.execute_clean_step',
        // The erase's passes, where Ironic's conductor puts them for IPA.
        params: { step: { ...STEP, priority: 99 }, node: { uuid: t.node.uuid, driver_internal_info: { agent_erase_devices_iterations: 1, agent_erase_devices_zeroize: true } } },
      });
      const none = task({ provision_state: 'cleaning' });
      await expect(none.driver.deploy.executeCleanStep!(none, STEP)).rejects.toThrow("the node's agent has not called back");
      script = () => ({ status: 200, body: cleanResult('FAILED', { command_error: { type: 'BlockDeviceEraseError', message: 'no disk to erase', details: '' } }) });
      await expect(t.driver.deploy.executeCleanStep!(t, STEP)).rejects.toThrow('on the node: BlockDeviceEraseError: no disk to erase');
    });

    it('heartbeats in clean wait: the agent up resumes the clean; its step running waits, ended resumes past it, failed fails it', async () => {
      const contact = { url: '', version: '10.0.0' };
      const at = (internal: Record<string, unknown>) => task({ provision_state: 'clean wait', driver_internal_info: internal });
      // Not a clean this conductor started (no index): nothing to do.
      expect(await at({}).driver.deploy.heartbeat(at({}), { ...contact, url: agent.url })).toEqual({ kind: 'wait' });
      const up = at({ clean_step_index: 0, clean_steps: [STEP] });
      expect(await up.driver.deploy.heartbeat(up, { ...contact, url: agent.url })).toEqual({ kind: 'resume' });
      expect(agent.seen).toHaveLength(0);

      const running = at({ clean_step_index: 0, clean_steps: [STEP], clean_step: STEP, clean_step_state: { command: 'clean-1' } });
      script = () => ({ status: 200, body: cleanResult('RUNNING') });
      expect(await running.driver.deploy.heartbeat(running, { ...contact, url: agent.url })).toEqual({ kind: 'wait' });
      expect(agent.seen[0]!.url).toBe(`/v1/commands/clean-1?agent_token=${TOKEN}`);
      script = () => ({ status: 200, body: cleanResult('SUCCEEDED') });
      expect(await running.driver.deploy.heartbeat(running, { ...contact, url: agent.url })).toEqual({ kind: 'resume', internal: { clean_step_done: true } });
      script = () => ({ status: 200, body: cleanResult('FAILED', { command_error: { type: 'BlockDeviceEraseError', message: 'erasing the metadata failed on /dev/vda: EIO', details: '' } }) });
      expect(await running.driver.deploy.heartbeat(running, { ...contact, url: agent.url })).toEqual({
        kind: 'fail',
        error: 'clean step deploy.erase_devices_metadata failed on the node: BlockDeviceEraseError: erasing the metadata failed on /dev/vda: EIO',
      });
      script = () => ({ status: 404, body: { faultstring: 'no such command' } });
      expect(await running.driver.deploy.heartbeat(running, { ...contact, url: agent.url })).toMatchObject({ kind: 'fail', error: expect.stringContaining('no longer knows its command clean-1') });
    });

    it('after the steps: powers the node off and removes its ramdisk files; with fast track the agent stays up, unless the clean failed', async () => {
      const fake = new FakeHardwareState();
      const t = task({ provision_state: 'cleaning', driver_internal_info: { agent_url: agent.url } }, 'http://api.example:6385', fake);
      fake.machine(t.node).power = 'power on';
      fake.machine(t.node).prepared = 'ramdisk';
      expect(await t.driver.deploy.tearDownCleaning!(t)).toEqual({ keepAgent: false });
      expect(fake.peek(t.node.uuid)).toMatchObject({ power: 'power off', prepared: null });
      const fast = task({ provision_state: 'cleaning', driver_internal_info: { agent_url: agent.url }, fastTrack: true }, 'http://api.example:6385', fake);
      fake.machine(fast.node).power = 'power on';
      expect(await fast.driver.deploy.tearDownCleaning!(fast)).toEqual({ keepAgent: true });
      expect(fake.peek(fast.node.uuid)).toMatchObject({ power: 'power on' });
      // A failed or aborted clean powers off even with fast track.
      expect(await fast.driver.deploy.tearDownCleaning!(fast, true)).toEqual({ keepAgent: false });
      expect(fake.peek(fast.node.uuid)).toMatchObject({ power: 'power off' });
    });
  });
});

describe('direct deploy: fast track', () => {
  let agent: Awaited<ReturnType<typeof scriptedAgent>>;
  beforeEach(async () => {
    agent = await scriptedAgent((req) => (req.method === 'GET' ? { status: 200, body: { commands: [] } } : { status: 200, body: result('RUNNING') }));
  });
  afterEach(async () => {
    await agent.close();
  });
  const session = (ageSeconds: number) => ({ agent_url: agent.url, agent_last_heartbeat: new Date(Date.now() - ageSeconds * 1000).toISOString() });

  it('an agent that heartbeated lately and answers gets the image at once: no power action, no new boot files', async () => {
    const fake = new FakeHardwareState();
    const forgot = { count: 0 };
    const t = task({ provision_state: 'deploying', driver_internal_info: session(30), fastTrack: true, forgot }, 'http://api.example:6385', fake);
    fake.machine(t.node).power = 'power on';
    const before = fake.peek(t.node.uuid);
    expect(await t.driver.deploy.deploy(t)).toEqual({ outcome: 'wait', internal: { [DIRECT_DEPLOY_KEY]: { phase: 'writing', command: 'cmd-1' }, deploy_step: WRITE_IMAGE_STEP } });
    expect(agent.seen.map((r) => `${r.method} ${r.url.split('?')[0]}`)).toEqual(['GET /v1/commands/', 'POST /v1/commands/']);
    expect(fake.peek(t.node.uuid)).toEqual(before);
    expect(forgot.count).toBe(0);
  });

  it.each([
    ['fast track off', { fastTrack: false, age: 30, power: 'power on', up: true }],
    ['a heartbeat older than fast_track_timeout', { fastTrack: true, age: 301, power: 'power on', up: true }],
    ['the node powered off', { fastTrack: true, age: 30, power: 'power off', up: true }],
    ['an agent that does not answer', { fastTrack: true, age: 30, power: 'power on', up: false }],
  ])('boots the ramdisk as usual with %s, ending the old session', async (_name, c) => {
    if (!c.up) await agent.close();
    const fake = new FakeHardwareState();
    const forgot = { count: 0 };
    const t = task({ provision_state: 'deploying', driver_internal_info: session(c.age), fastTrack: c.fastTrack, forgot }, 'http://api.example:6385', fake);
    fake.machine(t.node).power = c.power as 'power on' | 'power off';
    expect(await t.driver.deploy.deploy(t)).toBe('wait');
    expect(forgot.count).toBe(1);
    expect(agent.seen.filter((r) => r.method === 'POST')).toHaveLength(0);
    expect(fake.peek(t.node.uuid)).toMatchObject({ prepared: 'ramdisk', bootDevice: 'pxe', power: 'power on' });
    if (!c.up) agent = await scriptedAgent(() => ({ status: 500, body: {} }));
  });
});
