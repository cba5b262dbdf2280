/**
 * The stock OpenStack `baremetal` CLI (Debian `python3-ironicclient`) against a real `ironring up`:
 * operators' scripts must work unchanged. Every command is the real binary with
 * `--os-endpoint … --os-auth-type none`, and must exit 0 with the output Ironic would give.
 *
 * Without the binary these tests fail under CI (`CI=true`) and are skipped elsewhere with one line
 * naming the package (test/helpers/peers.ts).
 */
import { describe, expect, it } from 'vitest';
import { stockClientAvailable, useStockClient } from '../helpers/stock-client.js';

describe.skipIf(!stockClientAvailable)('the stock baremetal CLI against ironring up', () => {
  const { baremetal, ok, json } = useStockClient('baremetal');

  /** Polls `node show` until `field` has `value` (power changes finish after the 202). */
  async function waitForField(node: string, field: string, value: unknown): Promise<void> {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const shown = await json('node', 'show', node, '-c', field);
      if (shown[field] === value) return;
      if (Date.now() > deadline) throw new Error(`node ${node}: ${field} is ${JSON.stringify(shown[field])}, expected ${JSON.stringify(value)}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  let nodeUuid: string;
  let spareUuid: string;

  it('lists the hardware types and the conductor', async () => {
    const [drivers, conductors] = await Promise.all([
      json<Array<Record<string, unknown>>>('driver', 'list'),
      json<Array<Record<string, unknown>>>('conductor', 'list'),
    ]);
    expect(drivers).toEqual(expect.arrayContaining([{ 'Supported driver(s)': 'fake-hardware', 'Active host(s)': 'aio' }, { 'Supported driver(s)': 'ipmi', 'Active host(s)': 'aio' }]));
    expect(conductors).toEqual([{ Hostname: 'aio', 'Conductor Group': '', Alive: true }]);
  });

  it('creates, lists and shows fake-hardware nodes (enroll at the negotiated microversion)', async () => {
    const [created, spare] = await Promise.all([
      json('node', 'create', '--driver', 'fake-hardware', '--name', 'rack1-node1', '--resource-class', 'baremetal.small', '--property', 'cpus=8'),
      json('node', 'create', '--driver', 'fake-hardware', '--name', 'spare'),
    ]);
    expect(created).toMatchObject({
      name: 'rack1-node1', driver: 'fake-hardware', provision_state: 'enroll', power_state: null, maintenance: false,
      resource_class: 'baremetal.small', properties: { cpus: 8 }, power_interface: 'fake', deploy_interface: 'fake', conductor: 'aio',
    });
    expect(created.uuid).toMatch(/^[0-9a-f-]{36}$/);
    nodeUuid = created.uuid as string;
    spareUuid = spare.uuid as string;

    const [list, shown] = await Promise.all([
      json<Array<Record<string, unknown>>>('--os-baremetal-api-version', 'latest', 'node', 'list'),
      json('node', 'show', 'rack1-node1'),
    ]);
    // Created side by side, so either may come first.
    expect(list.sort((a, b) => String(a.Name).localeCompare(String(b.Name)))).toEqual([
      { UUID: nodeUuid, Name: 'rack1-node1', 'Instance UUID': null, 'Power State': null, 'Provisioning State': 'enroll', Maintenance: false },
      { UUID: spareUuid, Name: 'spare', 'Instance UUID': null, 'Power State': null, 'Provisioning State': 'enroll', Maintenance: false },
    ]);
    expect(shown).toMatchObject({ uuid: nodeUuid, name: 'rack1-node1', provision_state: 'enroll', driver_info: {}, extra: {} });
  });

  it('patches nodes with set and unset, masking passwords on read', async () => {
    await ok(
      'node', 'set', 'rack1-node1', '--name', 'rack1-node01',
      '--property', 'memory_mb=16384', '--property', 'cpu_arch=x86_64',
      '--driver-info', 'ipmi_address=10.0.0.5', '--driver-info', 'ipmi_password=hunter2',
      '--extra', 'rack=r1', '--extra', 'owner=ops',
    );
    const set = await json('node', 'show', nodeUuid, '-c', 'name', '-c', 'properties', '-c', 'driver_info', '-c', 'extra');
    expect(set).toEqual({
      name: 'rack1-node01',
      properties: { cpus: 8, memory_mb: 16384, cpu_arch: 'x86_64' },
      driver_info: { ipmi_address: '10.0.0.5', ipmi_password: '******' },
      extra: { rack: 'r1', owner: 'ops' },
    });

    await ok('node', 'unset', 'rack1-node01', '--property', 'cpus', '--extra', 'owner', '--driver-info', 'ipmi_password');
    const unset = await json('node', 'show', 'rack1-node01', '-c', 'properties', '-c', 'driver_info', '-c', 'extra');
    expect(unset).toEqual({ properties: { memory_mb: 16384, cpu_arch: 'x86_64' }, driver_info: { ipmi_address: '10.0.0.5' }, extra: { rack: 'r1' } });
  });

  it('creates, lists by node, shows and deletes ports', async () => {
    const [port, wired] = await Promise.all([
      json('port', 'create', '52:54:00:AB:CD:01', '--node', nodeUuid),
      // A node's uuid, not its name: Ironic's port create takes only a uuid (ironring's too).
      json(
        'port', 'create', '52:54:00:ab:cd:02', '--node', nodeUuid, '--pxe-enabled', 'false', '--physical-network', 'physnet1',
        '--local-link-connection', 'switch_id=aa:bb:cc:dd:ee:ff', '--local-link-connection', 'port_id=Eth1/7',
      ),
    ]);
    expect(port).toMatchObject({ address: '52:54:00:ab:cd:01', node_uuid: nodeUuid, pxe_enabled: true, extra: {}, portgroup_uuid: null });
    expect(wired).toMatchObject({
      address: '52:54:00:ab:cd:02', node_uuid: nodeUuid, pxe_enabled: false, physical_network: 'physnet1',
      local_link_connection: { switch_id: 'aa:bb:cc:dd:ee:ff', port_id: 'Eth1/7' },
    });
    const portUuid = port.uuid as string;
    const wiredUuid = wired.uuid as string;

    const [byNode, ofSpare, shown] = await Promise.all([
      json<Array<Record<string, unknown>>>('port', 'list', '--node', 'rack1-node01'),
      json<Array<Record<string, unknown>>>('port', 'list', '--node', spareUuid),
      json('port', 'show', portUuid),
    ]);
    expect(byNode.sort((a, b) => String(a.Address).localeCompare(String(b.Address)))).toEqual([
      { UUID: portUuid, Address: '52:54:00:ab:cd:01' },
      { UUID: wiredUuid, Address: '52:54:00:ab:cd:02' },
    ]);
    expect(ofSpare).toEqual([]);
    expect(shown).toMatchObject({ uuid: portUuid, address: '52:54:00:ab:cd:01', node_uuid: nodeUuid, pxe_enabled: true });

    expect(await ok('port', 'delete', portUuid, wiredUuid)).toContain(`Deleted port ${portUuid}`);
    expect(await json<unknown[]>('port', 'list', '--node', nodeUuid)).toEqual([]);
  });

  it('validates a node interface by interface', async () => {
    const results = await json<Array<{ Interface: string; Result: boolean; Reason: string }>>('node', 'validate', nodeUuid);
    const byInterface = Object.fromEntries(results.map((r) => [r.Interface, r.Result]));
    // fake-hardware's defaults are the fake interfaces (as Ironic's): console, inspect, raid and
    // rescue validate; the node's ipmi-less driver_info is not theirs to read.
    expect(byInterface).toMatchObject({ boot: true, console: true, deploy: true, inspect: true, management: true, network: true, power: true, raid: true, rescue: true });
  });

  it('moves a node enroll → manageable → available → active → available', async () => {
    expect(await ok('node', 'manage', nodeUuid, '--wait', '30')).toContain('Waiting for provision state manageable');
    expect(await ok('node', 'provide', nodeUuid, '--wait', '30')).toContain('Waiting for provision state available');
    await ok('node', 'deploy', nodeUuid, '--wait', '30');
    expect(await json('node', 'show', nodeUuid, '-c', 'provision_state', '-c', 'target_provision_state')).toEqual({ provision_state: 'active', target_provision_state: null });
    await ok('node', 'undeploy', nodeUuid, '--wait', '30');
    expect(await json('node', 'show', nodeUuid, '-c', 'provision_state', '-c', 'last_error')).toEqual({ provision_state: 'available', last_error: null });
  });

  it('powers a node on and off', async () => {
    await ok('node', 'power', 'on', nodeUuid);
    await waitForField(nodeUuid, 'power_state', 'power on');
    await ok('node', 'power', 'off', nodeUuid);
    await waitForField(nodeUuid, 'power_state', 'power off');
  });

  it('sets and shows the boot device', async () => {
    await ok('node', 'boot', 'device', 'set', nodeUuid, 'pxe', '--persistent');
    const [device, supported] = await Promise.all([
      json('node', 'boot', 'device', 'show', nodeUuid),
      json('node', 'boot', 'device', 'show', nodeUuid, '--supported'),
    ]);
    expect(device).toEqual({ boot_device: 'pxe', persistent: true });
    expect(String(supported.supported_boot_devices).split(', ')).toContain('pxe');
  });

  it('sets and unsets maintenance with a reason', async () => {
    await ok('node', 'maintenance', 'set', nodeUuid, '--reason', 'disk swap');
    expect(await json('node', 'show', nodeUuid, '-c', 'maintenance', '-c', 'maintenance_reason')).toEqual({ maintenance: true, maintenance_reason: 'disk swap' });
    await ok('node', 'maintenance', 'unset', nodeUuid);
    expect(await json('node', 'show', nodeUuid, '-c', 'maintenance', '-c', 'maintenance_reason')).toEqual({ maintenance: false, maintenance_reason: null });
  });

  it('sets, adds, lists and removes traits (baremetal node trait …), and shows them on the node', async () => {
    await ok('node', 'add', 'trait', nodeUuid, 'CUSTOM_GPU', 'HW_CPU_X86_VMX');
    expect(await json<Array<{ Traits: string }>>('node', 'trait', 'list', nodeUuid)).toEqual([{ Traits: 'CUSTOM_GPU' }, { Traits: 'HW_CPU_X86_VMX' }]);
    expect((await json('node', 'show', nodeUuid, '-c', 'traits')).traits).toEqual(['CUSTOM_GPU', 'HW_CPU_X86_VMX']);
    await ok('node', 'remove', 'trait', nodeUuid, 'CUSTOM_GPU');
    const missing = await baremetal('node', 'remove', 'trait', nodeUuid, 'CUSTOM_GPU');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("doesn't have a trait CUSTOM_GPU");
    const invalid = await baremetal('node', 'add', 'trait', nodeUuid, 'lower_case');
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toContain('invalid trait');
    await ok('node', 'remove', 'trait', nodeUuid, '--all');
    expect(await json('node', 'trait', 'list', nodeUuid)).toEqual([]);
  });

  it('deletes a node, and reports an unknown one with exit 1 and the API message', async () => {
    const [deleted, unknown] = await Promise.all([ok('node', 'delete', 'spare'), baremetal('node', 'show', 'no-such-node')]);
    expect(deleted).toContain('Deleted node spare');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/no-such-node.*\(HTTP 404\)/);
    const list = await json<Array<Record<string, unknown>>>('node', 'list');
    expect(list.map((n) => n.UUID)).toEqual([nodeUuid]);
  });
});
