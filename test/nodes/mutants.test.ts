/**
 * Node and port storage, patching and the state machine: behaviour that mutants of
 * scripts/mutants.json showed untested (issue #21; docs/testing.md). Each case names the mutants it
 * kills. The `provision_state` filter (mutant N1) is covered by the list-filter tests of issue #21.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/connect.js';
import type { Store } from '../../src/db/connect.js';
import { migrateDatabase } from '../../src/db/migrate.js';
import { applyNodePatch, parsePatch } from '../../src/nodes/node-patch.js';
import { createNode, getNode, listNodes } from '../../src/nodes/node-store.js';
import type { NodeFilters, NodeRow, NodeSortKey } from '../../src/nodes/node-store.js';
import { createPort, deletePort, listPorts } from '../../src/nodes/port-store.js';
import { applyAction, initialProvisionState, InvalidStateTransition, provisionStateAtVersion, transition } from '../../src/nodes/state-machine.js';
import { createTestDatabase, testEngines } from '../helpers/databases.js';
import type { TestDatabase } from '../helpers/databases.js';

const engines = await testEngines();

describe.each(engines)('node and port lists on %s', (engine) => {
  let target: TestDatabase;
  let store: Store;
  const uuids: Record<string, string> = {};
  const instance = randomUUID();

  beforeAll(async () => {
    target = await createTestDatabase(engine);
    store = await openDatabase(target.url);
    await migrateDatabase(store);
    const rows: Array<[string, Record<string, unknown>]> = [
      ['plain', { driver: 'fake-hardware' }],
      ['ipmi', { driver: 'ipmi' }],
      ['rack', { driver: 'fake-hardware', conductor_group: 'rack2' }],
      ['maint', { driver: 'fake-hardware', maintenance: true }],
      ['deployed', { driver: 'fake-hardware', instance_uuid: instance }],
      ['stamped', { driver: 'fake-hardware', provision_updated_at: new Date('2026-01-02T03:04:05Z') }],
    ];
    for (const [name, values] of rows) {
      const node = await createNode(store, { name, provision_state: 'available', ...values } as never);
      uuids[name] = node.uuid;
    }
  });
  afterAll(async () => {
    await store.close();
    await target.drop();
  });

  const names = async (filters: NodeFilters, sortKey: NodeSortKey = 'name', sortDir: 'asc' | 'desc' = 'asc', extra: { limit?: number; marker?: string } = {}) =>
    (await listNodes(store, { limit: extra.limit ?? 100, sortKey, sortDir, filters, ...(extra.marker ? { marker: extra.marker } : {}) })).map((n: NodeRow) => n.name);

  it('filters by driver, maintenance, instance_uuid and association (N2, N5, N6, N7)', async () => {
    expect(await names({ driver: 'ipmi' })).toEqual(['ipmi']);
    expect(await names({ maintenance: true })).toEqual(['maint']);
    expect(await names({ maintenance: false })).toEqual(['deployed', 'ipmi', 'plain', 'rack', 'stamped']);
    expect(await names({ instance_uuid: instance })).toEqual(['deployed']);
    expect(await names({ associated: true })).toEqual(['deployed']);
    expect(await names({ associated: false })).toEqual(['ipmi', 'maint', 'plain', 'rack', 'stamped']);
  });

  it('matches conductor groups case-insensitively, as they are stored lower-case (N3)', async () => {
    expect(await names({ conductor_group: 'RACK2' })).toEqual(['rack']);
  });

  it('pages with a marker without repeating the marker node, both ways (N8)', async () => {
    const all = await names({}, 'name', 'asc');
    const firstTwo = await names({}, 'name', 'asc', { limit: 2 });
    const next = await names({}, 'name', 'asc', { limit: 2, marker: uuids[firstTwo[1]!] });
    expect([...firstTwo, ...next]).toEqual(all.slice(0, 4));
    const down = await names({}, 'name', 'desc', { limit: 2, marker: uuids['plain'] });
    expect(down).toEqual(['maint', 'ipmi']);
  });

  it('breaks ties of the sort key by id in the sort direction (N9)', async () => {
    // Every node has the same driver except one: within the tie, creation (id) order decides.
    const asc = await names({ driver: 'fake-hardware' }, 'driver', 'asc');
    const desc = await names({ driver: 'fake-hardware' }, 'driver', 'desc');
    expect(desc).toEqual([...asc].reverse());
    expect(asc).toEqual(['plain', 'rack', 'maint', 'deployed', 'stamped']);
  });

  it('sorts by provision_updated_at with never-set values lowest (N11)', async () => {
    const desc = await names({}, 'provision_updated_at', 'desc');
    expect(desc[0]).toBe('stamped');
    const asc = await names({}, 'provision_updated_at', 'asc');
    expect(asc[asc.length - 1]).toBe('stamped');
  });

  it('finds a node by its uuid in upper case (N10)', async () => {
    expect((await getNode(store, uuids['ipmi']!.toUpperCase())).name).toBe('ipmi');
  });

  it('pages ports without repeating the marker, filters by any spelling of a MAC, and 404s deleting a missing port (P1, P2, P3)', async () => {
    const node = await getNode(store, 'plain');
    const made = [];
    for (const address of ['52:54:00:00:00:01', '52:54:00:00:00:02', '52:54:00:00:00:03']) made.push(await createPort(store, { nodeId: node.id, address } as never));
    const page = await listPorts(store, { limit: 10, sortDir: 'asc', nodeId: node.id, marker: made[0]!.uuid });
    expect(page.map((p) => p.address)).toEqual(['52:54:00:00:00:02', '52:54:00:00:00:03']);
    const down = await listPorts(store, { limit: 10, sortDir: 'desc', nodeId: node.id, marker: made[2]!.uuid });
    expect(down.map((p) => p.address)).toEqual(['52:54:00:00:00:02', '52:54:00:00:00:01']);
    const found = await listPorts(store, { limit: 10, sortDir: 'asc', address: '52-54-00-00-00-02' });
    expect(found.map((p) => p.uuid)).toEqual([made[1]!.uuid]);
    await expect(deletePort(store, randomUUID())).rejects.toMatchObject({ httpStatus: 404 });
  });
});

describe('state machine and patch edges', () => {
  it('starts new nodes in enroll from 1.11 exactly (S1)', () => {
    expect(initialProvisionState([1, 10])).toBe('available');
    expect(initialProvisionState([1, 11])).toBe('enroll');
  });

  it('refuses from the API a transition only a conductor may make (S2)', () => {
    expect(() => applyAction('cleaning', 'manage')).toThrow(InvalidStateTransition);
  });

  it('keeps the target of the flow a node is in (S3)', () => {
    expect(transition({ state: 'cleaning', target: 'manageable' }, 'wait')).toEqual({ state: 'clean wait', target: 'manageable' });
  });

  it('shows available as null before 1.2 only (S4)', () => {
    expect(provisionStateAtVersion('available', [1, 1])).toBeNull();
    expect(provisionStateAtVersion('available', [1, 2])).toBe('available');
  });

  it('caps resource_class at 80 characters (NP1)', async () => {
    const node = { resource_class: null, extra: {} } as unknown as NodeRow;
    expect(applyNodePatch(node, [{ op: 'replace', path: '/resource_class', value: 'x'.repeat(80) }])).toMatchObject({ resource_class: 'x'.repeat(80) });
    expect(() => applyNodePatch(node, [{ op: 'replace', path: '/resource_class', value: 'x'.repeat(81) }])).toThrow(/at most 80/);
  });

  it('needs a value for add and replace, and an existing key for replace (NP2, NP3)', () => {
    expect(() => parsePatch([{ op: 'add', path: '/extra/a' }])).toThrow(/patch\[0\]\.value: required for add/);
    expect(parsePatch([{ op: 'remove', path: '/extra/a' }])).toEqual([{ op: 'remove', path: '/extra/a' }]);
    const node = { extra: { present: 1 } } as unknown as NodeRow;
    expect(() => applyNodePatch(node, [{ op: 'replace', path: '/extra/missing', value: 2 }])).toThrow(/no such key to replace/);
    expect(applyNodePatch(node, [{ op: 'add', path: '/extra/missing', value: 2 }])).toMatchObject({ extra: { present: 1, missing: 2 } });
  });
});
