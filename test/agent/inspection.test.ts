/**
 * In-band inspection end to end, without a VM: the API and the node's owner in this process,
 * `ironring agent`'s `Agent` on a loopback port posting an inventory (a fixed one, so every figure
 * is known), through `POST /v1/continue_inspection`. The node boots the ramdisk with the inventory's
 * destination, waits in `inspect wait`, and ends `manageable` with its properties, its ports per
 * `[inspector]`, and the inventory served back; a bad report, a wrong token, hints no disk matches
 * and an abort each end as Ironic's do. The real-machine version is test/realnode/.
 */
import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import type { Agent } from '../../src/agent/agent.js';
import { DISCOVERY_UUIDS } from '../../src/boot/discovery.js';
import { createLogger } from '../../src/common/logger.js';
import { loadConfig } from '../../src/config/load.js';
import type { InspectorSettings } from '../../src/conductor/inspection.js';
import { DEFAULT_INSPECTOR_SETTINGS } from '../../src/conductor/inspection.js';
import type { NodeOperations } from '../../src/conductor/node-operations.js';
import { createDriverRegistry, FakeHardwareState } from '../../src/drivers/index.js';
import { startLoopbackAgent, untilState } from '../helpers/agent-runs.js';
import { waitUntil } from '../helpers/conductors.js';
import { testEngines, useMigratedDatabase } from '../helpers/databases.js';
import { startInProcessApi } from '../helpers/in-process-api.js';

const engines = await testEngines();
const LATEST = { 'x-openstack-ironic-api-version': 'latest' };
const MAC1 = '52:54:00:aa:bb:01';
const MAC2 = '52:54:00:aa:bb:02';
const GIB = 2 ** 30;
const untilTrue = (check: () => boolean, what: string) => waitUntil(check, 5_000, what);

/** What a 2-CPU, 1 GiB UEFI machine with two disks and two NICs reports (booted from MAC1). */
function inventory(): Record<string, unknown> {
  return {
    cpu: { model_name: 'QEMU Virtual CPU', frequency: '2400.000', count: 2, architecture: 'x86_64', flags: ['lm', 'sse2'] },
    memory: { total: 1000 * 2 ** 20, physical_mb: 1024 },
    disks: [
      { name: '/dev/vda', size: 20 * GIB, model: null, vendor: '0x1af4', serial: 'root-disk', wwn: null, wwn_with_extension: null, wwn_vendor_extension: null, rotational: true, hctl: null, by_path: null, logical_sectors: 512, physical_sectors: 512, removable: false },
      { name: '/dev/vdb', size: 8 * GIB, model: null, vendor: '0x1af4', serial: 'data-disk', wwn: null, wwn_with_extension: null, wwn_vendor_extension: null, rotational: true, hctl: null, by_path: null, logical_sectors: 512, physical_sectors: 512, removable: false },
    ],
    interfaces: [
      { name: 'eth0', mac_address: MAC1, ipv4_address: '192.0.2.10', ipv6_address: null, has_carrier: true, lldp: null, vendor: '0x1af4', product: '0x0001', client_id: null, biosdevname: null, speed_mbps: 1000 },
      { name: 'eth1', mac_address: MAC2, ipv4_address: null, ipv6_address: null, has_carrier: false, lldp: null, vendor: '0x1af4', product: '0x0001', client_id: null, biosdevname: null, speed_mbps: null },
    ],
    system_vendor: { product_name: 'Standard PC', serial_number: '', manufacturer: 'QEMU', firmware: { vendor: 'EDK II', version: 'x', build_date: '' } },
    boot: { current_boot_mode: 'uefi', pxe_interface: MAC1 },
    hostname: 'ramdisk',
    bmc_address: null,
    bmc_v6address: null,
    bmc_mac: null,
  };
}

describe.each(engines)('agent inspection on %s', (engine) => {
  const db = useMigratedDatabase(engine);
  let app: FastifyInstance;
  let ops: NodeOperations;
  let apiUrl: string;
  let fake: FakeHardwareState;
  const agents: Agent[] = [];

  async function startApi(settings: Partial<InspectorSettings> = {}, fastTrack = false, env: Record<string, string> = {}): Promise<void> {
    const config = loadConfig({ env: { IRONRING_JSON_RPC_AUTH_STRATEGY: 'noauth', ...env } }).config;
    const logger = createLogger({ level: 'warn', pretty: false });
    fake = new FakeHardwareState();
    const drivers = createDriverRegistry({ fakeState: fake, agentApiUrl: 'http://api.invalid:6385/', ...(fastTrack ? { fastTrack: { enabled: true, timeoutSeconds: 300 } } : {}) });
    ({ app, ops } = await startInProcessApi(db.store, config, logger, drivers, { inspector: { ...DEFAULT_INSPECTOR_SETTINGS, ...settings } }));
    apiUrl = await app.listen({ host: '127.0.0.1', port: 0 });
  }

  afterEach(async () => {
    await Promise.all(agents.splice(0).map((a) => a.stop()));
    await Promise.allSettled([...ops.running]);
    await app.close();
  });

  async function manageableNode(properties: Record<string, unknown> = {}, macs = [MAC1]): Promise<string> {
    const created = await app.inject({ method: 'POST', url: '/v1/nodes', headers: LATEST, payload: { name: 'i1', driver: 'fake-hardware', inspect_interface: 'agent', properties } });
    expect(created.statusCode, created.body).toBe(201);
    const uuid = (created.json() as { uuid: string }).uuid;
    for (const address of macs) {
      const port = await app.inject({ method: 'POST', url: '/v1/ports', headers: LATEST, payload: { address, node_uuid: uuid } });
      expect(port.statusCode, port.body).toBe(201);
    }
    await db.store.db.updateTable('nodes').set({ provision_state: 'manageable', target_provision_state: null }).where('uuid', '=', uuid).execute();
    return uuid;
  }

  const row = (uuid: string) => db.store.db.selectFrom('nodes').selectAll().where('uuid', '=', uuid).executeTakeFirstOrThrow();
  const ports = async (uuid: string) => {
    const res = await app.inject({ method: 'GET', url: `/v1/ports/detail?node=${uuid}`, headers: LATEST });
    return (res.json() as { ports: Array<{ address: string; pxe_enabled: boolean }> }).ports.map((p) => [p.address, p.pxe_enabled]).sort();
  };

  async function inspect(uuid: string): Promise<void> {
    const res = await app.inject({ method: 'PUT', url: `/v1/nodes/${uuid}/states/provision`, headers: LATEST, payload: { target: 'inspect' } });
    expect(res.statusCode, res.body).toBe(202);
  }

  const until = (uuid: string, states: string[], ms = 20_000) => untilState(() => row(uuid), states, ms);

  function startAgent(report: () => Record<string, unknown> = inventory): Agent {
    const agent = startLoopbackAgent({ apiUrl, macs: [MAC1], inspectionCallbackUrl: `${apiUrl}/v1/continue_inspection`, inventory: async () => report() });
    agents.push(agent);
    return agent;
  }

  it('boots the agent, and its inventory sets the properties, the PXE port and the stored inventory', async () => {
    await startApi();
    const uuid = await manageableNode({ capabilities: 'secure_boot:false' });
    await inspect(uuid);
    const waiting = await until(uuid, ['inspect wait', 'inspect failed']);
    expect(waiting.provision_state, waiting.last_error ?? '').toBe('inspect wait');
    // The ramdisk boots from the network, told where to post its inventory.
    expect(fake.peek(uuid)).toMatchObject({
      power: 'power on', bootDevice: 'pxe', persistent: false, prepared: 'ramdisk',
      ramdiskParams: { 'ipa-api-url': 'http://api.invalid:6385/', 'ipa-inspection-callback-url': 'http://api.invalid:6385/v1/continue_inspection' },
    });

    const agent = startAgent();
    const done = await until(uuid, ['manageable', 'inspect failed']);
    expect(done.provision_state, done.last_error ?? '').toBe('manageable');
    expect(done.last_error).toBeNull();
    // The node may be manageable before the agent has read the answer to its post.
    await untilTrue(() => agent.inventoryPosts === 1, 'the agent to count its inventory post');
    expect(done.properties).toEqual({ capabilities: 'secure_boot:false,boot_mode:uefi', cpus: 2, cpu_arch: 'x86_64', memory_mb: 1024, local_gb: 7 });
    // add_ports = pxe: the NIC it booted from (already enrolled); the second gets no port.
    expect(await ports(uuid)).toEqual([[MAC1, true]]);
    // Powered off once the inventory is in, the ramdisk's files gone, the agent session over.
    expect(fake.peek(uuid)).toMatchObject({ power: 'power off', prepared: null });
    expect(done.power_state).toBe('power off');
    expect(done.agent_token_hash).toBeNull();

    const stored = await app.inject({ method: 'GET', url: `/v1/nodes/${uuid}/inventory`, headers: LATEST });
    expect(stored.statusCode, stored.body).toBe(200);
    const body = stored.json() as { inventory: Record<string, unknown>; plugin_data: Record<string, unknown> };
    expect(body.inventory).toEqual(inventory());
    expect(body.plugin_data).toMatchObject({ macs: [MAC1], local_gb: 7, root_disk: { name: '/dev/vdb', serial: 'data-disk' } });
    const history = await db.store.db.selectFrom('node_history').select(['event']).where('node_id', '=', done.id).orderBy('id').execute();
    expect(history.map((h) => h.event)).toEqual(expect.arrayContaining(['inspecting → inspect wait', 'inspect wait → manageable']));
  });

  it('adds every NIC with add_ports = all, drops ports not present with keep_ports = present, and follows the root device hints', async () => {
    await startApi({ addPorts: 'all', keepPorts: 'present' });
    const stale = '52:54:00:aa:bb:99';
    const uuid = await manageableNode({ root_device: { serial: 'root-disk' } }, [MAC1, stale]);
    await inspect(uuid);
    await until(uuid, ['inspect wait']);
    startAgent();
    const done = await until(uuid, ['manageable', 'inspect failed']);
    expect(done.provision_state, done.last_error ?? '').toBe('manageable');
    expect(await ports(uuid)).toEqual([[MAC1, true], [MAC2, false]]);
    // The 20 GiB disk the hint names, less 1 GiB of partitioning room.
    expect(done.properties).toMatchObject({ local_gb: 19 });
  });

  it('fails the inspection when no disk matches the root device hints, powering the node off', async () => {
    await startApi();
    const uuid = await manageableNode({ root_device: { serial: 'no-such-disk' } });
    await inspect(uuid);
    await until(uuid, ['inspect wait']);
    startAgent();
    const failed = await until(uuid, ['inspect failed', 'manageable']);
    expect(failed.provision_state).toBe('inspect failed');
    expect(failed.last_error).toContain('no disk satisfies the root device hints');
    expect(fake.peek(uuid)).toMatchObject({ power: 'power off', prepared: null });
    expect(failed.agent_token_hash).toBeNull();
    // Nothing of the report was kept.
    const stored = await app.inject({ method: 'GET', url: `/v1/nodes/${uuid}/inventory`, headers: LATEST });
    expect(stored.statusCode).toBe(404);
    expect(stored.body).toContain(`Inventory not found for node ${uuid}`);
  });

  it('keeps the agent up with fast track, so the next verb needs no boot', async () => {
    await startApi({}, true);
    const uuid = await manageableNode();
    await inspect(uuid);
    await until(uuid, ['inspect wait']);
    startAgent();
    const done = await until(uuid, ['manageable', 'inspect failed']);
    expect(done.provision_state, done.last_error ?? '').toBe('manageable');
    expect(fake.peek(uuid)).toMatchObject({ power: 'power on', prepared: null });
    expect(done.agent_token_hash).not.toBeNull();
    expect(done.driver_internal_info).toMatchObject({ agent_url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/) });
  });

  it('refuses reports that are malformed, carry a wrong token, or match no node waiting for one', async () => {
    await startApi();
    const uuid = await manageableNode();
    const post = (payload: unknown) => app.inject({ method: 'POST', url: '/v1/continue_inspection', headers: LATEST, payload: payload as Record<string, unknown> });
    // Not waiting for an inventory: answered as a lookup of an unknown node is.
    let res = await post({ inventory: inventory() });
    expect(res.statusCode, res.body).toBe(404);
    // A machine no node knows, with auto-discovery off (the default): the same, nothing enrolled.
    res = await post({ inventory: { ...inventory(), interfaces: [{ name: 'eth9', mac_address: '52:54:00:99:99:99' }] } });
    expect(res.statusCode, res.body).toBe(404);
    expect(await db.store.db.selectFrom('nodes').select('id').execute()).toHaveLength(1);
    expect((await row(uuid)).provision_state).toBe('manageable');

    await inspect(uuid);
    await until(uuid, ['inspect wait']);
    res = await post({});
    expect(res.statusCode).toBe(400);
    expect(res.body).toContain('inventory: required');
    res = await post({ inventory: { interfaces: [] } });
    expect(res.statusCode).toBe(400);
    expect(res.body).toContain('inventory.interfaces');
    res = await post({ inventory: { interfaces: [{ name: 'eth0' }] } });
    expect(res.statusCode).toBe(400);
    expect(res.body).toContain('inventory.interfaces[0].mac_address');
    res = await post({ inventory: inventory(), extra: JSON.parse('{"__proto__": {"polluted": true}}') });
    expect(res.statusCode).toBe(400);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();

    // The node's agent looked up (a token exists): a report without it, or with another, is refused.
    const lookup = await app.inject({ method: 'GET', url: `/v1/lookup?addresses=${MAC1}`, headers: LATEST });
    expect(lookup.statusCode, lookup.body).toBe(200);
    res = await post({ inventory: inventory() });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.body).toContain('Invalid or missing agent token');
    res = await post({ inventory: inventory(), agent_token: 'x'.repeat(43) });
    expect(res.statusCode).toBe(400);
    const still = await row(uuid);
    expect(still.provision_state).toBe('inspect wait');
    expect(still.properties).toEqual({});

    // The right token is accepted.
    const token = (lookup.json() as { config: { agent_token: string } }).config.agent_token;
    res = await post({ inventory: inventory(), agent_token: token });
    expect(res.statusCode, res.body).toBe(202);
    expect(res.json()).toMatchObject({ node: { uuid }, config: { agent_token: '******' } });
    expect((await until(uuid, ['manageable', 'inspect failed'])).provision_state).toBe('manageable');
  });

  it('gives an agent that did not look up (IPA) its token in the answer', async () => {
    await startApi();
    const uuid = await manageableNode();
    await inspect(uuid);
    await until(uuid, ['inspect wait']);
    const res = await app.inject({ method: 'POST', url: '/v1/continue_inspection', headers: LATEST, payload: { inventory: inventory(), root_disk: { name: '/dev/vda' } } });
    expect(res.statusCode, res.body).toBe(202);
    const answer = res.json() as { node: { uuid: string }; config: { agent_token: string } };
    expect(answer.node.uuid).toBe(uuid);
    expect(answer.config.agent_token).toMatch(/^[A-Za-z0-9_-]{20,}$/);
    const done = await until(uuid, ['manageable', 'inspect failed']);
    expect(done.provision_state, done.last_error ?? '').toBe('manageable');
    // What the agent sent besides the inventory is kept as plugin data.
    const stored = (await app.inject({ method: 'GET', url: `/v1/nodes/${uuid}/inventory`, headers: LATEST })).json() as { plugin_data: Record<string, unknown> };
    expect(stored.plugin_data).toMatchObject({ root_disk: { name: '/dev/vdb' } });
  });

  it('runs the inspection rules: one sets the resource class, a capability and extra, a failing one fails the inspection', async () => {
    await startApi();
    const post = (payload: Record<string, unknown>) => app.inject({ method: 'POST', url: '/v1/inspection_rules', headers: LATEST, payload });
    const tagging = await post({
      description: 'uefi two-socket boxes',
      priority: 10,
      conditions: [{ op: 'eq', args: { values: ['{inventory[boot][current_boot_mode]}', 'uefi'] } }, { op: 'gt', args: { values: ['{inventory[cpu][count]}', 1] } }],
      actions: [
        { op: 'set-attribute', args: ['/resource_class', 'baremetal-uefi'] },
        { op: 'set-capability', args: ['cpu_count', '{inventory[cpu][count]}'] },
        { op: 'set-attribute', args: ['/extra/vendor', '{inventory[system_vendor][manufacturer]}'] },
        { op: 'add-trait', args: ['CUSTOM_UEFI_BOX'] },
        { op: 'remove-trait', args: ['CUSTOM_UNTESTED'] },
      ],
    });
    expect(tagging.statusCode, tagging.body).toBe(201);
    const secret = await post({ sensitive: true, conditions: [{ op: 'is-true', args: [false] }], actions: [{ op: 'set-attribute', args: ['/driver_info/ipmi_password', 'never shown'] }] });
    expect(secret.statusCode, secret.body).toBe(201);
    const listed = (await app.inject({ method: 'GET', url: '/v1/inspection_rules', headers: LATEST })).json() as { inspection_rules: Array<Record<string, unknown>> };
    expect(listed.inspection_rules.map((r) => r.description)).toEqual(['uefi two-socket boxes', null]);
    expect(listed.inspection_rules[1]).toMatchObject({ sensitive: true, conditions: null, actions: null });
    expect(JSON.stringify(listed)).not.toContain('never shown');
    const bad = await post({ actions: [{ op: 'set-port-attribute', args: ['/pxe_enabled', false] }] });
    expect(bad.statusCode).toBe(400);
    expect(bad.body).toContain('unsupported action');

    const uuid = await manageableNode();
    const traits = (payload: object) => app.inject({ method: 'PUT', url: `/v1/nodes/${uuid}/traits`, headers: LATEST, payload });
    expect((await traits({ traits: ['CUSTOM_UNTESTED', 'CUSTOM_RACK_7'] })).statusCode).toBe(204);
    await inspect(uuid);
    await until(uuid, ['inspect wait']);
    startAgent();
    const done = await until(uuid, ['manageable', 'inspect failed']);
    expect(done.provision_state, done.last_error ?? '').toBe('manageable');
    expect(done.resource_class).toBe('baremetal-uefi');
    expect(done.properties).toMatchObject({ cpus: 2, capabilities: 'boot_mode:uefi,cpu_count:2' });
    expect(done.extra).toEqual({ vendor: 'QEMU' });
    expect(done.driver_info).not.toHaveProperty('ipmi_password');
    // Traits: the rule's added, its removed gone, the operator's other one kept.
    expect((await app.inject({ method: 'GET', url: `/v1/nodes/${uuid}/traits`, headers: LATEST })).json()).toEqual({ traits: ['CUSTOM_RACK_7', 'CUSTOM_UEFI_BOX'] });

    // A rule that refuses the machine: inspect failed with its message, the node off.
    expect((await post({ description: 'no small boxes', conditions: [{ op: 'lt', args: { values: ['{inventory[memory][physical_mb]}', 4096] } }], actions: [{ op: 'fail', args: ['only {inventory[memory][physical_mb]} MiB'] }] })).statusCode).toBe(201);
    await inspect(uuid);
    await until(uuid, ['inspect wait']);
    startAgent();
    const failed = await until(uuid, ['inspect failed', 'manageable']);
    expect(failed.provision_state).toBe('inspect failed');
    expect(failed.last_error).toBe('inspection failed: inspection rule no small boxes: only 1024 MiB');
    expect(fake.peek(uuid)).toMatchObject({ power: 'power off' });

    const gone = await app.inject({ method: 'DELETE', url: '/v1/inspection_rules', headers: LATEST });
    expect(gone.statusCode).toBe(204);
    expect(((await app.inject({ method: 'GET', url: '/v1/inspection_rules', headers: LATEST })).json() as { inspection_rules: unknown[] }).inspection_rules).toEqual([]);
  });

  it('auto-discovery: a machine no node knows posts its inventory and is enrolled, with properties, ports and inventory', async () => {
    const report = () => ({ ...inventory(), bmc_address: '192.0.2.99' });
    const ramdisk = {
      IRONRING_AUTO_DISCOVERY_DEPLOY_KERNEL: 'http://images.invalid/ipa.kernel',
      IRONRING_AUTO_DISCOVERY_DEPLOY_KERNEL_CHECKSUM: `sha256:${'a'.repeat(64)}`,
      IRONRING_AUTO_DISCOVERY_DEPLOY_RAMDISK: 'http://images.invalid/ipa.initramfs',
      IRONRING_AUTO_DISCOVERY_DEPLOY_RAMDISK_CHECKSUM: `sha256:${'b'.repeat(64)}`,
    };
    await startApi({}, false, { IRONRING_AUTO_DISCOVERY_ENABLED: 'true', IRONRING_AUTO_DISCOVERY_DRIVER: 'ipmi', ...ramdisk });
    const agent = startAgent(report);
    const end = Date.now() + 20_000;
    let nodes: Array<{ uuid: string }> = [];
    while (nodes.length === 0 && Date.now() < end) {
      nodes = await db.store.db.selectFrom('nodes').select('uuid').execute();
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(nodes).toHaveLength(1);
    const node = await row(nodes[0]!.uuid);
    // The node may be manageable before the agent has read the answer to its post.
    await untilTrue(() => agent.inventoryPosts === 1, 'the agent to count its inventory post');
    expect(node).toMatchObject({
      driver: 'ipmi',
      provision_state: 'enroll',
      inspect_interface: 'agent',
      extra: { auto_discovered: true },
      // The discovery ramdisk it booted is its deploy ramdisk from now on.
      driver_info: {
        ipmi_address: '192.0.2.99',
        deploy_kernel: ramdisk.IRONRING_AUTO_DISCOVERY_DEPLOY_KERNEL,
        deploy_kernel_checksum: ramdisk.IRONRING_AUTO_DISCOVERY_DEPLOY_KERNEL_CHECKSUM,
        deploy_ramdisk: ramdisk.IRONRING_AUTO_DISCOVERY_DEPLOY_RAMDISK,
        deploy_ramdisk_checksum: ramdisk.IRONRING_AUTO_DISCOVERY_DEPLOY_RAMDISK_CHECKSUM,
      },
      properties: { cpus: 2, cpu_arch: 'x86_64', memory_mb: 1024, local_gb: 7, capabilities: 'boot_mode:uefi' },
    });
    expect(await ports(node.uuid)).toEqual([[MAC1, true]]);
    const stored = await app.inject({ method: 'GET', url: `/v1/nodes/${node.uuid}/inventory`, headers: LATEST });
    expect((stored.json() as { inventory: unknown }).inventory).toEqual(report());
    const history = await db.store.db.selectFrom('node_history').select(['event']).where('node_id', '=', node.id).orderBy('id').execute();
    expect(history.map((h) => h.event)).toContain('discovered and enrolled (driver ipmi)');
    // The same machine again: it is known now, and not waiting for an inventory.
    const again = await app.inject({ method: 'POST', url: '/v1/continue_inspection', headers: LATEST, payload: { inventory: report() } });
    expect(again.statusCode).toBe(404);
    expect(await db.store.db.selectFrom('nodes').select('id').execute()).toHaveLength(1);
    // The discovery boot entries' uuids are no node's to take.
    const reserved = await app.inject({ method: 'POST', url: '/v1/nodes', headers: LATEST, payload: { driver: 'fake-hardware', uuid: DISCOVERY_UUIDS.pxelinux.toUpperCase() } });
    expect(reserved.statusCode).toBe(400);
    expect(reserved.body).toContain('is reserved for the auto-discovery boot entries');
  });

  it('aborts an inspection waiting for its agent: inspect failed, the node off, its ramdisk gone', async () => {
    await startApi();
    const uuid = await manageableNode();
    await inspect(uuid);
    await until(uuid, ['inspect wait']);
    const res = await app.inject({ method: 'PUT', url: `/v1/nodes/${uuid}/states/provision`, headers: LATEST, payload: { target: 'abort' } });
    expect(res.statusCode, res.body).toBe(202);
    const failed = await until(uuid, ['inspect failed']);
    expect(failed.last_error).toBe('By request, the inspection operation has been aborted');
    expect(fake.peek(uuid)).toMatchObject({ power: 'power off', prepared: null });
  });
});
