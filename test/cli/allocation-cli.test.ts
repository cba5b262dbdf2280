/**
 * `ironring allocation list|show|create|set|unset|delete` against a listening API with its
 * conductor's allocating process in this process, through the same main() that bin/ironring runs:
 * table and JSON output, `create --wait` until active (exit 0) or failed (exit 1 with the reason),
 * the API's refusals as one line with exit code 1, a usage error as exit code 2.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { conductorRings } from '../../src/cluster/conductor-rings.js';
import type { ConductorRings } from '../../src/cluster/conductor-rings.js';
import { createLogger } from '../../src/common/logger.js';
import { AllocationWorker } from '../../src/conductor/allocations.js';
import { loadConfig } from '../../src/config/load.js';
import { useCliApi } from '../helpers/cli-in-process.js';

describe('ironring allocation commands', () => {
  const env = useCliApi();
  const cli = (...args: string[]) => env.run('allocation', ...args);
  const json = <T = Record<string, unknown>>(...args: string[]) => env.json<T>('allocation', ...args);
  let view: ConductorRings;
  let worker: AllocationWorker;

  beforeAll(async () => {
    const logger = createLogger({ level: 'silent', pretty: false });
    view = conductorRings(env.store(), loadConfig({ env: {} }).config.conductor, { logger, pollIntervalMs: 0 });
    // The in-process API's conductor (`aio`) allocating, as `ironring up` runs it.
    worker = new AllocationWorker({ store: env.store(), hostname: 'aio', view, logger, conductorId: () => undefined, pollMs: 50, retry: { attempts: 1, intervalMs: 0 } });
    await worker.start();
  });
  afterAll(async () => {
    await worker.stop();
    await view.stop();
  });

  async function freeNode(name: string, rc: string): Promise<string> {
    const res = await env.api().app.inject({ method: 'POST', url: '/v1/nodes', headers: { 'x-openstack-ironic-api-version': 'latest' }, payload: { driver: 'fake-hardware', name, resource_class: rc } });
    expect(res.statusCode, res.body).toBe(201);
    const uuid = (res.json() as { uuid: string }).uuid;
    await env.store().db.updateTable('nodes').set({ provision_state: 'available', power_state: 'power off' }).where('uuid', '=', uuid).execute();
    return uuid;
  }

  it('creates and waits, shows, lists, changes and deletes an allocation', async () => {
    const node = await freeNode('cli-n1', 'cli-gold');
    const made = await json('create', '--resource-class', 'cli-gold', '--name', 'cli-a1', '--extra', 'team=a', '--wait', '20');
    expect(made).toMatchObject({ name: 'cli-a1', state: 'active', node_uuid: node, resource_class: 'cli-gold', extra: { team: 'a' } });
    expect(await json('show', 'cli-a1')).toEqual(made);
    const table = await cli('show', made.uuid as string);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/│ state +│ active +│/);
    expect(table.stdout).not.toMatch(/links|bookmark/);

    const list = await cli('list', '--state', 'active');
    expect(list.stdout).toMatch(new RegExp(`│ ${made.uuid as string} +│ cli-a1 +│ cli-gold +│ active +│ ${node} +│`));
    expect((await cli('list', '--long')).stdout).toMatch(/Last Error.*Traits.*Candidate Nodes/);
    expect((await json<Array<{ uuid: string }>>('list', '--node', 'cli-n1')).map((a) => a.uuid)).toEqual([made.uuid]);
    expect(await json('list', '--resource-class', 'nothing')).toEqual([]);

    expect(await json('set', 'cli-a1', '--name', 'cli-b1', '--extra', 'n=2')).toMatchObject({ name: 'cli-b1', extra: { team: 'a', n: 2 } });
    expect(await json('unset', 'cli-b1', '--name', '--extra', 'team')).toMatchObject({ name: null, extra: { n: 2 } });

    // Backfilling a deployed node with --node: active at once, the resource class the node's.
    const deployed = await freeNode('cli-n2', 'cli-silver');
    await env.store().db.updateTable('nodes').set({ provision_state: 'active' }).where('uuid', '=', deployed).execute();
    const backfilled = await json('create', '--node', 'cli-n2', '--name', 'cli-bf');
    expect(backfilled).toMatchObject({ state: 'active', node_uuid: deployed, resource_class: 'cli-silver' });
    const active = await cli('delete', 'cli-bf');
    expect([active.code, active.stderr]).toEqual([1, expect.stringMatching(/^ironring: 409 from .*: cannot remove allocation .* because the node is active \(and maintenance mode is off\)\n$/)]);
    await env.store().db.updateTable('nodes').set({ provision_state: 'available' }).where('uuid', '=', deployed).execute();
    expect((await cli('delete', 'cli-bf')).code).toBe(0);

    const deleted = await cli('delete', made.uuid as string);
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(deleted.stdout).toBe(`Deleted allocation ${made.uuid as string}\n`);
    expect(await json('list')).toEqual([]);
  });

  it('fails a --wait with the allocation\'s last_error, and prints refusals as one line', async () => {
    const failed = await cli('create', '--resource-class', 'cli-none', '--name', 'cli-f', '--wait', '20');
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(/^ironring: allocation [0-9a-f-]{36} failed: Failed to process allocation .*: no available nodes match the resource class cli-none\.\n$/);
    const dup = await cli('create', '--resource-class', 'x', '--name', 'cli-f');
    expect(dup.code).toBe(1);
    expect(dup.stderr).toBe(`ironring: 409 from ${env.url()}/v1/allocations: an allocation with name cli-f already exists\n`);
    const missing = await cli('show', 'ghost');
    expect([missing.code, missing.stderr]).toEqual([1, `ironring: 404 from ${env.url()}/v1/allocations/ghost: allocation ghost could not be found\n`]);
    const badTrait = await cli('create', '--resource-class', 'x', '--trait', 'meow');
    expect(badTrait.code).toBe(1);
    expect(badTrait.stderr).toMatch(/^ironring: 400 from .*: traits: entry 0: invalid trait "meow"/);

    const nothing = await cli('create');
    expect([nothing.code, nothing.stderr]).toEqual([2, 'ironring: allocation create: give --resource-class, or --node to backfill a deployed node\n']);
    const noChange = await cli('set', 'cli-f');
    expect([noChange.code, noChange.stderr]).toEqual([2, 'ironring: allocation set: name at least one field to change\n']);
    expect((await cli('--help')).stdout).toMatch(/backfill/);
  });
});
