/**
 * The stock OpenStack `baremetal chassis …` commands (Debian `python3-ironicclient`) against a real
 * `ironring up`, and the node side of chassis (`node create --chassis-uuid`, `node list --chassis`,
 * `node set/unset --chassis-uuid`): every command is the real binary with `--os-endpoint …
 * --os-auth-type none` and must exit 0 with the output Ironic would give — or, where Ironic refuses
 * (a chassis with nodes, an unknown chassis), exit 1 with its message.
 *
 * Without the binary these tests fail under CI (`CI=true`) and are skipped elsewhere with one line
 * naming the package (test/helpers/peers.ts).
 */
import { describe, expect, it } from 'vitest';
import { stockClientAvailable, useStockClient } from '../helpers/stock-client.js';

type Row = Record<string, unknown>;

describe.skipIf(!stockClientAvailable)('the stock baremetal chassis commands against ironring up', () => {
  const { baremetal, ok, json } = useStockClient('baremetal-chassis');

  const GIVEN = '7c3b9a55-1d2e-4f60-8a71-b2c3d4e5f607';
  let rack: string;

  it('creates chassis, lists them (short, long, chosen fields) and shows one', async () => {
    const [created, given] = await Promise.all([
      json('chassis', 'create', '--description', 'rack 1', '--extra', 'row=a'),
      json('chassis', 'create', '--uuid', GIVEN, '--description', 'В Україні ♡ OpenStack!'),
    ]);
    // The client drops links and nodes from what it prints, as from Ironic's answer.
    expect(created).toEqual({ uuid: expect.stringMatching(/^[0-9a-f-]{36}$/), description: 'rack 1', extra: { row: 'a' }, created_at: expect.any(String), updated_at: expect.any(String) });
    expect(given).toMatchObject({ uuid: GIVEN, description: 'В Україні ♡ OpenStack!', extra: {} });
    rack = created.uuid as string;

    const [short, long, fields, shown] = await Promise.all([
      json<Row[]>('chassis', 'list'),
      json<Row[]>('chassis', 'list', '--long'),
      json<Row[]>('chassis', 'list', '--fields', 'uuid', 'extra'),
      json('chassis', 'show', rack),
    ]);
    const byUuid = (rows: Row[]) => [...rows].sort((a, b) => String(a.UUID).localeCompare(String(b.UUID)));
    expect(byUuid(short)).toEqual(byUuid([{ UUID: rack, Description: 'rack 1' }, { UUID: GIVEN, Description: 'В Україні ♡ OpenStack!' }]));
    expect(long.find((c) => c.UUID === rack)).toEqual({ UUID: rack, Description: 'rack 1', 'Created At': created.created_at, 'Updated At': created.updated_at, Extra: { row: 'a' } });
    expect(byUuid(fields)).toEqual(byUuid([{ UUID: rack, Extra: { row: 'a' } }, { UUID: GIVEN, Extra: {} }]));
    expect(shown).toEqual(created);
    expect(await json('chassis', 'show', rack, '--fields', 'description')).toEqual({ description: 'rack 1' });
  });

  it('changes a chassis with set and unset', async () => {
    // The client sends each value as JSON when it parses as JSON: pdu=2 becomes the number 2.
    await ok('chassis', 'set', rack, '--description', 'rack 1, row a', '--extra', 'pdu=2', '--extra', 'row=b');
    expect(await json('chassis', 'show', rack, '-c', 'description', '-c', 'extra')).toEqual({ description: 'rack 1, row a', extra: { pdu: 2, row: 'b' } });
    await ok('chassis', 'unset', rack, '--extra', 'row', '--description');
    expect(await json('chassis', 'show', rack, '-c', 'description', '-c', 'extra')).toEqual({ description: null, extra: { pdu: 2 } });
  });

  it('puts nodes in chassis, lists a chassis\'s nodes, and moves or frees a node', async () => {
    const [inRack, loose] = await Promise.all([
      json('node', 'create', '--driver', 'fake-hardware', '--name', 'in-rack', '--chassis-uuid', rack),
      json('node', 'create', '--driver', 'fake-hardware', '--name', 'loose'),
    ]);
    expect(inRack).toMatchObject({ name: 'in-rack', chassis_uuid: rack });
    expect(loose).toMatchObject({ name: 'loose', chassis_uuid: null });

    const [ofRack, ofGiven, shown] = await Promise.all([
      json<Row[]>('node', 'list', '--chassis', rack),
      json<Row[]>('node', 'list', '--chassis', GIVEN),
      json('node', 'show', 'in-rack', '-c', 'chassis_uuid'),
    ]);
    expect(ofRack.map((n) => n.Name)).toEqual(['in-rack']);
    expect(ofGiven).toEqual([]);
    expect(shown).toEqual({ chassis_uuid: rack });

    const unknown = await baremetal('node', 'create', '--driver', 'fake-hardware', '--name', 'nowhere', '--chassis-uuid', '00000000-0000-4000-8000-000000000000');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/chassis 00000000-0000-4000-8000-000000000000 could not be found.*\(HTTP 400\)/);

    await ok('node', 'set', 'loose', '--chassis-uuid', GIVEN);
    expect(await json('node', 'show', 'loose', '-c', 'chassis_uuid')).toEqual({ chassis_uuid: GIVEN });
    await ok('node', 'unset', 'loose', '--chassis-uuid');
    expect(await json('node', 'show', 'loose', '-c', 'chassis_uuid')).toEqual({ chassis_uuid: null });
  });

  it('refuses to delete a chassis that has nodes, then deletes it once they left', async () => {
    const refused = await baremetal('chassis', 'delete', rack);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`Failed to delete chassis ${rack}`);
    expect(refused.stderr).toMatch(new RegExp(`chassis ${rack} contains nodes.*\\(HTTP 400\\)`));

    await ok('node', 'delete', 'in-rack');
    expect(await ok('chassis', 'delete', rack, GIVEN)).toBe(`Deleted chassis ${rack}\nDeleted chassis ${GIVEN}\n`);
    const gone = await baremetal('chassis', 'show', rack);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toMatch(new RegExp(`chassis ${rack} could not be found.*\\(HTTP 404\\)`));
    expect(await json<Row[]>('chassis', 'list')).toEqual([]);
  });
});
