/**
 * The stock OpenStack `baremetal port group …` commands (Debian `python3-ironicclient`) against a
 * real `ironring up`, and the port side of port groups (`port create --port-group`, `port list
 * --port-group`, `port set/unset --port-group`): every command is the real binary with
 * `--os-endpoint … --os-auth-type none` and must exit 0 with the output Ironic would give — or,
 * where Ironic refuses (a group with ports, a group of another node), exit 1 with its message.
 *
 * Without the binary these tests fail under CI (`CI=true`) and are skipped elsewhere with one line
 * naming the package (test/helpers/peers.ts).
 */
import { describe, expect, it } from 'vitest';
import { stockClientAvailable, useStockClient } from '../helpers/stock-client.js';

type Row = Record<string, unknown>;

describe.skipIf(!stockClientAvailable)('the stock baremetal port group commands against ironring up', () => {
  const { baremetal, ok, json } = useStockClient('baremetal-portgroup');

  let node: string;
  /** A second group, without a name or address (this client's `port group create` takes no --uuid). */
  let GIVEN: string;
  let bond: string;

  it('creates port groups, lists them (short, long, by node, chosen fields) and shows one', async () => {
    node = (await json('node', 'create', '--driver', 'fake-hardware', '--name', 'pg-node')).uuid as string;
    const [created, given] = await Promise.all([
      json('port', 'group', 'create', '--node', node, '--name', 'bond0', '--address', '52:54:00:cd:00:01', '--mode', '802.3ad', '--property', 'miimon=100', '--extra', 'row=a'),
      json('port', 'group', 'create', '--node', node, '--unsupport-standalone-ports'),
    ]);
    // The client drops links and ports from what it prints, as from Ironic's answer.
    expect(created).toEqual({
      uuid: expect.stringMatching(/^[0-9a-f-]{36}$/), name: 'bond0', address: '52:54:00:cd:00:01', node_uuid: node, mode: '802.3ad', properties: { miimon: 100 },
      extra: { row: 'a' }, internal_info: {}, standalone_ports_supported: true, created_at: expect.any(String), updated_at: expect.any(String),
    });
    GIVEN = given.uuid as string;
    expect(given).toMatchObject({ name: null, address: null, mode: 'active-backup', standalone_ports_supported: false });
    bond = created.uuid as string;

    const [short, long, ofNode, fields, shown] = await Promise.all([
      json<Row[]>('port', 'group', 'list'),
      json<Row[]>('port', 'group', 'list', '--long'),
      json<Row[]>('port', 'group', 'list', '--node', 'pg-node'),
      json<Row[]>('port', 'group', 'list', '--fields', 'uuid', 'mode'),
      json('port', 'group', 'show', 'bond0'),
    ]);
    const byUuid = (rows: Row[]) => [...rows].sort((a, b) => String(a.UUID).localeCompare(String(b.UUID)));
    expect(byUuid(short)).toEqual(byUuid([{ UUID: bond, Address: '52:54:00:cd:00:01', Name: 'bond0' }, { UUID: GIVEN, Address: null, Name: null }]));
    expect(long.find((g) => g.UUID === bond)).toMatchObject({ UUID: bond, Name: 'bond0', 'Node UUID': node, Mode: '802.3ad', Properties: { miimon: 100 }, 'Standalone Ports Supported': true });
    expect(byUuid(ofNode)).toEqual(byUuid(short));
    expect(byUuid(fields)).toEqual(byUuid([{ UUID: bond, Mode: '802.3ad' }, { UUID: GIVEN, Mode: 'active-backup' }]));
    expect(shown).toEqual(created);
    expect(await json('port', 'group', 'show', bond, '--fields', 'name', 'mode')).toEqual({ name: 'bond0', mode: '802.3ad' });
  });

  it('changes a port group with set and unset', async () => {
    await ok('port', 'group', 'set', bond, '--name', 'bond1', '--extra', 'pdu=2', '--property', 'lacp_rate=fast', '--unsupport-standalone-ports');
    expect(await json('port', 'group', 'show', 'bond1', '-c', 'name', '-c', 'extra', '-c', 'properties', '-c', 'standalone_ports_supported')).toEqual({
      name: 'bond1', extra: { row: 'a', pdu: 2 }, properties: { miimon: 100, lacp_rate: 'fast' }, standalone_ports_supported: false,
    });
    await ok('port', 'group', 'unset', 'bond1', '--extra', 'row', '--property', 'miimon', '--address');
    expect(await json('port', 'group', 'show', 'bond1', '-c', 'address', '-c', 'extra', '-c', 'properties')).toEqual({ address: null, extra: { pdu: 2 }, properties: { lacp_rate: 'fast' } });
    await ok('port', 'group', 'set', 'bond1', '--support-standalone-ports');
  });

  it('puts ports in a group of their node, lists a group\'s ports, and refuses a group of another node', async () => {
    const port = await json('port', 'create', '52:54:00:cd:00:02', '--node', node, '--port-group', bond);
    expect(port).toMatchObject({ address: '52:54:00:cd:00:02', node_uuid: node, portgroup_uuid: bond });
    const loose = await json('port', 'create', '52:54:00:cd:00:03', '--node', node);
    expect(loose).toMatchObject({ portgroup_uuid: null });
    expect((await json<Row[]>('port', 'list', '--port-group', bond)).map((p) => p.Address)).toEqual(['52:54:00:cd:00:02']);
    await ok('port', 'set', loose.uuid as string, '--port-group', GIVEN);
    expect(await json('port', 'show', loose.uuid as string, '-c', 'portgroup_uuid')).toEqual({ portgroup_uuid: GIVEN });
    await ok('port', 'unset', loose.uuid as string, '--port-group');
    expect(await json('port', 'show', loose.uuid as string, '-c', 'portgroup_uuid')).toEqual({ portgroup_uuid: null });

    const other = (await json('node', 'create', '--driver', 'fake-hardware')).uuid as string;
    const foreign = await baremetal('port', 'create', '52:54:00:cd:00:04', '--node', other, '--port-group', bond);
    expect(foreign.code).toBe(1);
    expect(foreign.stderr).toMatch(/port can not be added to a portgroup belonging to a different node.*\(HTTP 400\)/);
  });

  it('refuses to delete a group that has ports, then deletes it once they left', async () => {
    const refused = await baremetal('port', 'group', 'delete', bond);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(new RegExp(`portgroup ${bond} contains ports.*\\(HTTP 400\\)`));

    const [member] = await json<Row[]>('port', 'list', '--port-group', bond);
    await ok('port', 'delete', member!.UUID as string);
    expect(await ok('port', 'group', 'delete', bond, GIVEN)).toBe(`Deleted port group ${bond}\nDeleted port group ${GIVEN}\n`);
    const gone = await baremetal('port', 'group', 'show', bond);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toMatch(new RegExp(`portgroup ${bond} could not be found.*\\(HTTP 404\\)`));
    expect(await json<Row[]>('port', 'group', 'list')).toEqual([]);
  });
});
