/**
 * The stock OpenStack `baremetal allocation …` commands (Debian `python3-ironicclient`) against a
 * real `ironring up`, whose conductor does the allocating: `create --resource-class … --wait`
 * ends active on the one matching node, `list`, `show`, `set`, `unset`, `delete` behave as against
 * Ironic, a request nothing matches fails `--wait` with its reason (exit 1), and the node shows
 * its `allocation_uuid`.
 *
 * Without the binary these tests fail under CI (`CI=true`) and are skipped elsewhere with one line
 * naming the package (test/helpers/peers.ts).
 */
import { describe, expect, it } from 'vitest';
import { stockClientAvailable, useStockClient } from '../helpers/stock-client.js';

type Row = Record<string, unknown>;

describe.skipIf(!stockClientAvailable)('the stock baremetal allocation commands against ironring up', () => {
  const { baremetal, ok, json } = useStockClient('baremetal-allocation');
  let node: string;
  let allocation: string;

  it('makes a node available, then allocates it with create --wait', async () => {
    node = (await json('node', 'create', '--driver', 'fake-hardware', '--name', 'alloc-n1', '--resource-class', 'e2e-gold')).uuid as string;
    await ok('node', 'manage', 'alloc-n1', '--wait', '120');
    await ok('node', 'provide', 'alloc-n1', '--wait', '120');
    // As Ironic's tempest tests: a known power state, or the allocating process skips the node.
    await ok('node', 'power', 'off', 'alloc-n1', '--power-timeout', '60');
    for (let i = 0; i < 100 && (await json('node', 'show', 'alloc-n1', '-c', 'power_state')).power_state !== 'power off'; i += 1) await new Promise((r) => setTimeout(r, 200));

    const made = await json('allocation', 'create', '--resource-class', 'e2e-gold', '--name', 'e2e-a1', '--extra', 'team=a', '--wait', '60');
    expect(made).toMatchObject({ name: 'e2e-a1', state: 'active', node_uuid: node, resource_class: 'e2e-gold', extra: { team: 'a' }, last_error: null, candidate_nodes: [], traits: [] });
    allocation = made.uuid as string;
    expect(await json('node', 'show', 'alloc-n1', '-c', 'allocation_uuid', '-c', 'instance_uuid')).toEqual({ allocation_uuid: allocation, instance_uuid: allocation });
  });

  it('lists and shows allocations, by filters and fields', async () => {
    const [all, long, active, ofNode, shown] = await Promise.all([
      json<Row[]>('allocation', 'list'),
      json<Row[]>('allocation', 'list', '--long'),
      json<Row[]>('allocation', 'list', '--state', 'active'),
      json<Row[]>('allocation', 'list', '--node', 'alloc-n1'),
      json('allocation', 'show', 'e2e-a1'),
    ]);
    expect(all).toEqual([{ UUID: allocation, Name: 'e2e-a1', 'Resource Class': 'e2e-gold', State: 'active', 'Node UUID': node }]);
    expect(long[0]).toMatchObject({ UUID: allocation, 'Last Error': null, Extra: { team: 'a' } });
    expect(active.map((a) => a.UUID)).toEqual([allocation]);
    expect(ofNode.map((a) => a.UUID)).toEqual([allocation]);
    expect(shown).toMatchObject({ uuid: allocation, name: 'e2e-a1', node_uuid: node });
    expect(await json('allocation', 'show', allocation, '--fields', 'state', 'node_uuid')).toEqual({ state: 'active', node_uuid: node });
  });

  it('changes an allocation with set and unset', async () => {
    await ok('allocation', 'set', 'e2e-a1', '--name', 'e2e-b1', '--extra', 'n=2');
    expect(await json('allocation', 'show', allocation, '-c', 'name', '-c', 'extra')).toEqual({ name: 'e2e-b1', extra: { team: 'a', n: 2 } });
    await ok('allocation', 'unset', 'e2e-b1', '--name', '--extra', 'team');
    expect(await json('allocation', 'show', allocation, '-c', 'name', '-c', 'extra')).toEqual({ name: null, extra: { n: 2 } });
  });

  it('fails --wait for a request no node matches, with the reason', async () => {
    const failed = await baremetal('allocation', 'create', '--resource-class', 'e2e-none', '--name', 'e2e-f', '--wait', '60');
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/no available nodes match the resource class e2e-none/);
    expect(await json('allocation', 'show', 'e2e-f', '-c', 'state')).toEqual({ state: 'error' });
  });

  it('deletes allocations, freeing the node', async () => {
    await ok('allocation', 'delete', allocation, 'e2e-f');
    expect(await json<Row[]>('allocation', 'list')).toEqual([]);
    expect(await json('node', 'show', 'alloc-n1', '-c', 'allocation_uuid', '-c', 'instance_uuid')).toEqual({ allocation_uuid: null, instance_uuid: null });
    const gone = await baremetal('allocation', 'show', allocation);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toMatch(/could not be found.*\(HTTP 404\)/);
  });
});
