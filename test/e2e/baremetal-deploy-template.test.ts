/**
 * The stock OpenStack `baremetal deploy template …` commands (Debian `python3-ironicclient`)
 * against a real `ironring up`: create (with `--steps` as JSON), list (short, long), show (by name
 * and uuid, chosen fields), set, unset and delete must exit 0 with the output Ironic would give — or,
 * where Ironic refuses (a name that is no trait, a name in use, an unknown template), exit 1 with its
 * message. Then a fake node whose instance asks for the template's trait is deployed through the
 * client and the template's steps run (and a step its interface does not offer refuses the deploy).
 *
 * Without the binary these tests fail under CI (`CI=true`) and are skipped elsewhere with one line
 * naming the package (test/helpers/peers.ts).
 */
import { describe, expect, it } from 'vitest';
import { stockClientAvailable, useStockClient } from '../helpers/stock-client.js';

type Row = Record<string, unknown>;

const STEPS = [{ interface: 'bios', step: 'apply_configuration', args: { settings: [{ name: 'LogicalProc', value: 'Enabled' }] }, priority: 150 }];
const RAID = [{ interface: 'raid', step: 'delete_configuration', args: {}, priority: 10 }];

describe.skipIf(!stockClientAvailable)('the stock baremetal deploy template commands against ironring up', () => {
  const { baremetal, ok, json } = useStockClient('baremetal-deploy-template');
  const GIVEN = '5d1b3e0a-7c2f-4e9b-8a61-c0d1e2f3a4b5';
  let made: Row;

  it('creates templates, lists them (short, long) and shows one by name or uuid', async () => {
    const [created, given] = await Promise.all([
      json('deploy', 'template', 'create', 'CUSTOM_HYPERTHREADING_ON', '--steps', JSON.stringify(STEPS), '--extra', 'team=hpc'),
      json('deploy', 'template', 'create', 'CUSTOM_RAID_WIPE', '--uuid', GIVEN, '--steps', JSON.stringify(RAID)),
    ]);
    expect(created).toEqual({ uuid: expect.stringMatching(/^[0-9a-f-]{36}$/), name: 'CUSTOM_HYPERTHREADING_ON', steps: STEPS, extra: { team: 'hpc' }, created_at: expect.any(String), updated_at: expect.any(String) });
    expect(given).toMatchObject({ uuid: GIVEN, name: 'CUSTOM_RAID_WIPE', steps: RAID, extra: {} });
    made = created;

    const [short, long, byName, byUuid, fields] = await Promise.all([
      json<Row[]>('deploy', 'template', 'list'),
      json<Row[]>('deploy', 'template', 'list', '--long'),
      json('deploy', 'template', 'show', 'CUSTOM_HYPERTHREADING_ON'),
      json('deploy', 'template', 'show', GIVEN),
      json('deploy', 'template', 'show', 'CUSTOM_RAID_WIPE', '--fields', 'name', 'steps'),
    ]);
    const sorted = (rows: Row[]) => [...rows].sort((a, b) => String(a.Name).localeCompare(String(b.Name)));
    expect(sorted(short)).toEqual([{ UUID: made.uuid, Name: 'CUSTOM_HYPERTHREADING_ON' }, { UUID: GIVEN, Name: 'CUSTOM_RAID_WIPE' }]);
    expect(sorted(long)[0]).toEqual({ UUID: made.uuid, Name: 'CUSTOM_HYPERTHREADING_ON', Steps: STEPS, Extra: { team: 'hpc' }, 'Created At': made.created_at, 'Updated At': made.updated_at });
    expect(byName).toEqual(created);
    expect(byUuid).toEqual(given);
    expect(fields).toEqual({ name: 'CUSTOM_RAID_WIPE', steps: RAID });
  });

  it('refuses a name that is no trait, a name in use and an unknown template, as Ironic', async () => {
    const [invalid, taken, unknown] = await Promise.all([
      baremetal('deploy', 'template', 'create', 'not-a-trait', '--steps', JSON.stringify(STEPS)),
      baremetal('deploy', 'template', 'create', 'CUSTOM_RAID_WIPE', '--steps', JSON.stringify(STEPS)),
      baremetal('deploy', 'template', 'show', 'CUSTOM_NOPE'),
    ]);
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toMatch(/name: invalid trait "not-a-trait".*\(HTTP 400\)/);
    expect(taken.code).toBe(1);
    expect(taken.stderr).toMatch(/a deploy template with name "CUSTOM_RAID_WIPE" already exists.*\(HTTP 409\)/);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/deploy template CUSTOM_NOPE could not be found.*\(HTTP 404\)/);
  });

  it('changes a template with set and unset', async () => {
    const steps = [{ ...STEPS[0], priority: 120 }, { interface: 'bios', step: 'factory_reset', args: {}, priority: 130 }];
    await ok('deploy', 'template', 'set', 'CUSTOM_HYPERTHREADING_ON', '--name', 'CUSTOM_HT_ON', '--steps', JSON.stringify(steps), '--extra', 'rack=4');
    expect(await json('deploy', 'template', 'show', made.uuid as string, '-c', 'name', '-c', 'steps', '-c', 'extra')).toEqual({ name: 'CUSTOM_HT_ON', steps, extra: { team: 'hpc', rack: 4 } });
    await ok('deploy', 'template', 'unset', 'CUSTOM_HT_ON', '--extra', 'team');
    expect(await json('deploy', 'template', 'show', 'CUSTOM_HT_ON', '-c', 'extra')).toEqual({ extra: { rack: 4 } });
  });

  it('runs a template\'s steps when an instance that asks for its trait is deployed, and refuses a step the node cannot run', async () => {
    await ok('node', 'create', '--driver', 'fake-hardware', '--name', 'ht');
    await ok('node', 'add', 'trait', 'ht', 'CUSTOM_HT_ON');
    await ok('node', 'set', 'ht', '--instance-info', 'traits=["CUSTOM_HT_ON"]');
    await ok('node', 'manage', 'ht', '--wait', '30');
    await ok('node', 'provide', 'ht', '--wait', '30');
    await ok('node', 'deploy', 'ht', '--wait', '30');
    const node = await json('node', 'show', 'ht', '-c', 'provision_state', '-c', 'driver_internal_info');
    expect(node).toMatchObject({ provision_state: 'active' });
    expect((node.driver_internal_info as Row).deploy_steps).toEqual([
      { interface: 'bios', step: 'factory_reset', args: {}, priority: 130 },
      { interface: 'bios', step: 'apply_configuration', args: STEPS[0]!.args, priority: 120 },
      { interface: 'deploy', step: 'deploy', args: {}, priority: 100 },
    ]);
    const history = await json<Row[]>('node', 'history', 'list', 'ht');
    const events = history.map((h) => String(h['Description of the event']));
    expect(events).toEqual(expect.arrayContaining(['deploy step bios.factory_reset done', 'deploy step bios.apply_configuration done', 'deploy step deploy.deploy done']));

    // The same instance on a node without a BIOS interface is refused before anything happens.
    await ok('node', 'create', '--driver', 'fake-hardware', '--name', 'nobios', '--bios-interface', 'no-bios');
    await ok('node', 'add', 'trait', 'nobios', 'CUSTOM_HT_ON');
    await ok('node', 'set', 'nobios', '--instance-info', 'traits=["CUSTOM_HT_ON"]');
    await ok('node', 'manage', 'nobios', '--wait', '30');
    await ok('node', 'provide', 'nobios', '--wait', '30');
    const refused = await baremetal('node', 'deploy', 'nobios');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/node does not support this deploy step: \{"interface":"bios","step":"factory_reset"\} \(bios_interface "no-bios" offers no deploy steps\).*\(HTTP 400\)/);
    expect(await json('node', 'show', 'nobios', '-c', 'provision_state')).toEqual({ provision_state: 'available' });
  });

  it('deletes templates by name and uuid', async () => {
    expect(await ok('deploy', 'template', 'delete', 'CUSTOM_HT_ON', GIVEN)).toBe(`Deleted deploy template CUSTOM_HT_ON\nDeleted deploy template ${GIVEN}\n`);
    const gone = await baremetal('deploy', 'template', 'delete', GIVEN);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toMatch(new RegExp(`Failed to delete deploy template ${GIVEN}.*could not be found.*\\(HTTP 404\\)`));
    expect(await json<Row[]>('deploy', 'template', 'list')).toEqual([]);
  });
});
