/**
 * The stock OpenStack `baremetal volume connector …` and `baremetal volume target …` commands (Debian
 * `python3-ironicclient`) against a real `ironring up`: every command is the real binary with
 * `--os-endpoint … --os-auth-type none` and must exit 0 with the output Ironic would give — or,
 * where Ironic refuses (a change while the node is powered on, a duplicate), exit 1 with its message.
 * Power is switched through the API and waited for, as the client's own `node power` does not wait.
 *
 * Without the binary these tests fail under CI (`CI=true`) and are skipped elsewhere with one line
 * naming the package (test/helpers/peers.ts).
 */
import { describe, expect, it } from 'vitest';
import { stockClientAvailable, useStockClient } from '../helpers/stock-client.js';

type Row = Record<string, unknown>;

describe.skipIf(!stockClientAvailable)('the stock baremetal volume commands against ironring up', () => {
  const { baremetal, ok, json, endpoint } = useStockClient('baremetal-volume');

  let node: string;

  /** Switches the node's power through the API and waits until the conductor is done. */
  async function power(target: 'power on' | 'power off'): Promise<void> {
    const headers = { 'content-type': 'application/json', 'x-openstack-ironic-api-version': 'latest' };
    const res = await fetch(`${endpoint()}/v1/nodes/${node}/states/power`, { method: 'PUT', headers, body: JSON.stringify({ target }) });
    expect(res.status, await res.text()).toBe(202);
    for (let i = 0; i < 100; i++) {
      const state = (await (await fetch(`${endpoint()}/v1/nodes/${node}/states`, { headers })).json()) as { power_state: string | null; target_power_state: string | null };
      if (state.power_state === target && state.target_power_state === null) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`node ${node} did not reach ${target}`);
  }

  let connector: string;
  let target: string;

  it('creates volume connectors and targets, lists them (short, long, by node) and shows them', async () => {
    node = ((await json('node', 'create', '--driver', 'fake-hardware', '--name', 'vol-node')) as Row).uuid as string;
    const [c, t] = await Promise.all([
      json('volume', 'connector', 'create', '--node', node, '--type', 'iqn', '--connector-id', 'iqn.2024-01.org.example:vol-node', '--extra', 'rack=a'),
      json('volume', 'target', 'create', '--node', node, '--type', 'iscsi', '--volume-id', 'vol-0', '--boot-index', '0', '--property', 'target_lun=0'),
    ]);
    expect(c).toEqual({ uuid: expect.stringMatching(/^[0-9a-f-]{36}$/), node_uuid: node, type: 'iqn', connector_id: 'iqn.2024-01.org.example:vol-node', extra: { rack: 'a' }, created_at: expect.any(String), updated_at: expect.any(String) });
    expect(t).toMatchObject({ node_uuid: node, volume_type: 'iscsi', volume_id: 'vol-0', boot_index: 0, properties: { target_lun: 0 }, extra: {} });
    connector = c.uuid as string;
    target = t.uuid as string;

    const [connectors, long, ofNode, targets, shownC, shownT] = await Promise.all([
      json<Row[]>('volume', 'connector', 'list'),
      json<Row[]>('volume', 'connector', 'list', '--long'),
      json<Row[]>('volume', 'connector', 'list', '--node', 'vol-node'),
      json<Row[]>('volume', 'target', 'list'),
      json('volume', 'connector', 'show', connector),
      json('volume', 'target', 'show', target),
    ]);
    expect(connectors).toEqual([{ UUID: connector, 'Node UUID': node, Type: 'iqn', 'Connector ID': 'iqn.2024-01.org.example:vol-node' }]);
    expect(long).toEqual([expect.objectContaining({ UUID: connector, Extra: { rack: 'a' } })]);
    expect(ofNode.map((r) => r.UUID)).toEqual([connector]);
    expect(targets).toEqual([{ UUID: target, 'Node UUID': node, 'Driver Volume Type': 'iscsi', 'Boot Index': 0, 'Volume ID': 'vol-0' }]);
    expect(shownC).toEqual(c);
    expect(shownT).toEqual(t);

    const dup = await baremetal('volume', 'target', 'create', '--node', node, '--type', 'iscsi', '--volume-id', 'vol-1', '--boot-index', '0');
    expect(dup.code).toBe(1);
    expect(dup.stderr).toMatch(/A volume target with boot index '0' for the same node already exists.*\(HTTP 409\)/);
  });

  it('refuses changes while the node is powered on, and makes them once it is off', async () => {
    await power('power on');
    const refused = await baremetal('volume', 'connector', 'set', connector, '--connector-id', 'iqn.new');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(new RegExp(`The requested action "volume connector update" can not be performed on node "${node}" while it is in state "power on".*\\(HTTP 400\\)`));
    const notDeleted = await baremetal('volume', 'target', 'delete', target);
    expect(notDeleted.code).toBe(1);
    expect(notDeleted.stderr).toMatch(/"volume target deletion" can not be performed/);

    await power('power off');
    await ok('volume', 'connector', 'set', connector, '--connector-id', 'iqn.new', '--extra', 'row=2');
    expect(await json('volume', 'connector', 'show', connector, '-c', 'connector_id', '-c', 'extra')).toEqual({ connector_id: 'iqn.new', extra: { rack: 'a', row: 2 } });
    await ok('volume', 'connector', 'unset', connector, '--extra', 'rack');
    await ok('volume', 'target', 'set', target, '--boot-index', '1', '--volume-id', 'vol-9');
    expect(await json('volume', 'target', 'show', target, '-c', 'boot_index', '-c', 'volume_id')).toEqual({ boot_index: 1, volume_id: 'vol-9' });
    await ok('volume', 'target', 'unset', target, '--property', 'target_lun');
    expect(await json('volume', 'target', 'show', target, '-c', 'properties')).toEqual({ properties: {} });
  });

  it('deletes connectors and targets, and a node takes the rest with it', async () => {
    expect(await ok('volume', 'connector', 'delete', connector)).toBe(`Deleted volume connector ${connector}\n`);
    const gone = await baremetal('volume', 'connector', 'show', connector);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toMatch(new RegExp(`Volume connector ${connector} could not be found.*\\(HTTP 404\\)`));
    await ok('node', 'delete', node);
    expect(await json<Row[]>('volume', 'target', 'list')).toEqual([]);
  });
});
