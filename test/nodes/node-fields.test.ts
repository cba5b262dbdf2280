/**
 * The node field table against an independent statement of each field's contract: when it
 * appeared, whether create and PATCH take it, a value it accepts and one it refuses, what the view
 * shows for a known row, and which fields mask secrets. A field added to the table without a row
 * here (or the other way round) fails the first test.
 */
import { describe, expect, it } from 'vitest';
import type { NodeRow } from '../../src/db/schema.js';
import { NODE_FIELDS, NODE_INTERFACE_FIELDS } from '../../src/nodes/node-fields.js';
import type { NodeFieldContext } from '../../src/nodes/node-fields.js';
import { applyNodePatch, parsePatch } from '../../src/nodes/node-patch.js';
import { NODE_SORT_KEYS } from '../../src/nodes/node-store.js';

type V = readonly [number, number];
const LATEST: V = [1, 82];
const UUID = '1be26c0b-03f2-4d2d-ae87-c02d7f33c123';
const CHASSIS = '2be26c0b-03f2-4d2d-ae87-c02d7f33c124';

const row: NodeRow = {
  id: 7, uuid: UUID, name: 'rack1-n1', description: 'second from the top', owner: 'team-a', driver: 'fake-hardware',
  driver_info: { ipmi_address: '10.0.0.1', ipmi_password: 'hunter2', nested: { secret_key: 'k' } },
  driver_internal_info: { clean_step: { step: 'erase_devices', interface: 'deploy' }, deploy_step: { step: 'write_image', interface: 'deploy' }, password: 'shown' },
  properties: { cpus: 4, password: 'not-a-secret-here' }, instance_info: { image_source: 'x', configdrive: 'H4sI' }, extra: { a: 1 }, traits: ['CUSTOM_GPU'],
  instance_uuid: null, conductor_group: 'rack1', resource_class: 'small', provision_state: 'available', target_provision_state: null,
  provision_updated_at: new Date('2026-01-02T03:04:05.678Z'), power_state: 'power off', target_power_state: null, maintenance: false,
  maintenance_reason: null, last_error: null, reservation: null, conductor_affinity: 3, agent_token_hash: 'ab'.repeat(32),
  chassis_id: 4, chassis_uuid: CHASSIS, allocation_id: null,
  boot_interface: 'fake', console_interface: 'no-console', deploy_interface: 'fake', inspect_interface: 'fake', management_interface: 'fake',
  network_interface: 'noop', power_interface: 'fake', raid_interface: 'fake', rescue_interface: 'fake', vendor_interface: 'fake',
  raid_config: {}, target_raid_config: { logical_disks: [{ size_gb: 100, raid_level: '1' }] }, console_enabled: true,
  protected: false, protected_reason: null,
  storage_interface: 'noop', bios_interface: 'fake', automated_clean: null,
  retired: true, retired_reason: 'old', lessee: 'team-l', network_data: { links: [] }, boot_mode: 'uefi', secure_boot: true, shard: 'row-1',
  allocation_uuid: '3be26c0b-03f2-4d2d-ae87-c02d7f33c125',
  created_at: new Date('2026-01-01T00:00:00.000Z'), updated_at: new Date('2026-01-01T00:00:01.000Z'),
};
const ctx: NodeFieldContext = { conductorOf: () => 'c1', replicasOf: () => ['c2'], conductorName: (id) => (id === 3 ? 'c3' : null) };

interface Contract {
  since: V;
  /** What the view shows for `row`. */
  view: unknown;
  create?: boolean;
  patch?: boolean;
  /** An accepted value and what is stored for it (the same unless normalised). */
  good?: [unknown, unknown];
  /** A refused value and the 400's message pattern. */
  bad?: [unknown, RegExp];
}

const iface = (value: string): Contract => ({ since: [1, 31], view: value, create: true, patch: true, good: ['fake', 'fake'], bad: [7, /expected an interface name/] });

/** Ironic's node fields up to 1.82 as ironring serves them (versions from Ironic's versions.py). */
const CONTRACT: Record<string, Contract> = {
  uuid: { since: [1, 1], view: UUID, create: true, good: [UUID.toUpperCase(), UUID], bad: ['nope', /^uuid: expected a UUID, got "nope"$/] },
  name: { since: [1, 5], view: 'rack1-n1', create: true, patch: true, good: ['n-1.a_b~c', 'n-1.a_b~c'], bad: [UUID, /is not a valid node name/] },
  chassis_uuid: { since: [1, 1], view: CHASSIS, create: true, patch: true, good: [UUID.toUpperCase(), UUID], bad: ['c-1', /^(\/)?chassis_uuid: expected the UUID of a chassis or null, got "c-1"$/] },
  driver: { since: [1, 1], view: 'fake-hardware', create: true, patch: true, good: ['ipmi', 'ipmi'], bad: ['', /needs a driver/] },
  driver_info: { since: [1, 1], view: { ipmi_address: '10.0.0.1', ipmi_password: '******', nested: { secret_key: '******' } }, create: true, patch: true, good: [{ a: 1 }, { a: 1 }], bad: ['x', /expected a JSON object/] },
  driver_internal_info: { since: [1, 3], view: { clean_step: { step: 'erase_devices', interface: 'deploy' }, deploy_step: { step: 'write_image', interface: 'deploy' }, password: 'shown' } },
  extra: { since: [1, 1], view: { a: 1 }, create: true, patch: true, good: [{ b: 2 }, { b: 2 }], bad: [[1], /expected a JSON object/] },
  instance_info: { since: [1, 1], view: { image_source: 'x', configdrive: '******' }, create: true, patch: true, good: [{ c: 3 }, { c: 3 }], bad: [null, /expected a JSON object/] },
  instance_uuid: { since: [1, 1], view: null, create: true, patch: true, good: [UUID.toUpperCase(), UUID], bad: ['i-1', /expected a UUID/] },
  properties: { since: [1, 1], view: { cpus: 4, password: 'not-a-secret-here' }, create: true, patch: true, good: [{ cpus: 8 }, { cpus: 8 }], bad: [3, /expected a JSON object/] },
  provision_state: { since: [1, 1], view: 'available' },
  target_provision_state: { since: [1, 1], view: null },
  provision_updated_at: { since: [1, 1], view: '2026-01-02T03:04:05+00:00' },
  power_state: { since: [1, 1], view: 'power off' },
  target_power_state: { since: [1, 1], view: null },
  maintenance: { since: [1, 1], view: false, patch: true, good: ['true', true], bad: ['maybe', /^(\/)?maintenance: expected true or false$/] },
  maintenance_reason: { since: [1, 1], view: null, patch: true, good: ['BMC down', 'BMC down'], bad: [7, /expected a string/] },
  last_error: { since: [1, 1], view: null },
  reservation: { since: [1, 1], view: null },
  console_enabled: { since: [1, 1], view: true },
  created_at: { since: [1, 1], view: '2026-01-01T00:00:00+00:00' },
  updated_at: { since: [1, 1], view: '2026-01-01T00:00:01+00:00' },
  inspection_started_at: { since: [1, 6], view: null },
  inspection_finished_at: { since: [1, 6], view: null },
  clean_step: { since: [1, 7], view: { step: 'erase_devices', interface: 'deploy' } },
  raid_config: { since: [1, 12], view: {} },
  target_raid_config: { since: [1, 12], view: { logical_disks: [{ size_gb: 100, raid_level: '1' }] } },
  network_interface: { ...iface('noop'), since: [1, 20] },
  resource_class: { since: [1, 21], view: 'small', create: true, patch: true, good: ['x'.repeat(80), 'x'.repeat(80)], bad: ['x'.repeat(81), /at most 80 characters/] },
  boot_interface: iface('fake'),
  console_interface: iface('no-console'),
  deploy_interface: iface('fake'),
  inspect_interface: iface('fake'),
  management_interface: iface('fake'),
  power_interface: iface('fake'),
  raid_interface: iface('fake'),
  vendor_interface: iface('fake'),
  storage_interface: { ...iface('noop'), since: [1, 33] },
  rescue_interface: { ...iface('fake'), since: [1, 38] },
  bios_interface: { ...iface('fake'), since: [1, 40] },
  fault: { since: [1, 42], view: null },
  deploy_step: { since: [1, 44], view: { step: 'write_image', interface: 'deploy' } },
  conductor_group: { since: [1, 46], view: 'rack1', create: true, patch: true, good: ['Rack_2', 'rack_2'], bad: ['has space', /is invalid; use at most 255 letters/] },
  automated_clean: { since: [1, 47], view: null, create: true, patch: true, good: ['off', false], bad: ['sometimes', /^(\/)?automated_clean: expected true, false or null$/] },
  traits: { since: [1, 37], view: ['CUSTOM_GPU'] },
  protected: { since: [1, 48], view: false, patch: true, good: ['yes', true], bad: ['sure', /^(\/)?protected: expected true or false$/] },
  protected_reason: { since: [1, 48], view: null, patch: true, good: ['reason!', 'reason!'], bad: [['x'], /expected a string of at most 255/] },
  conductor: { since: [1, 49], view: 'c1' },
  owner: { since: [1, 50], view: 'team-a', create: true, patch: true, good: ['team b', 'team b'], bad: ['x'.repeat(256), /expected a string of at most 255 characters or null/] },
  description: { since: [1, 51], view: 'second from the top', create: true, patch: true, good: ['x'.repeat(4096), 'x'.repeat(4096)], bad: ['x'.repeat(4097), /expected a string of at most 4096 characters or null/] },
  retired: { since: [1, 61], view: true, create: true, patch: true, good: ['false', false], bad: ['soon', /^(\/)?retired: expected true or false$/] },
  retired_reason: { since: [1, 61], view: 'old', create: true, patch: true, good: ['worn out', 'worn out'], bad: ['x'.repeat(4097), /expected a string of at most 4096 characters or null/] },
  lessee: { since: [1, 65], view: 'team-l', create: true, patch: true, good: ['team m', 'team m'], bad: ['x'.repeat(256), /expected a string of at most 255 characters or null/] },
  network_data: { since: [1, 66], view: { links: [] }, create: true, patch: true, good: [{ links: [], networks: [], services: [] }, { links: [], networks: [], services: [] }], bad: [{ links: 'eth0', networks: [], services: [] }, /links/] },
  boot_mode: { since: [1, 75], view: 'uefi' },
  secure_boot: { since: [1, 75], view: true },
  shard: { since: [1, 82], view: 'row-1', create: true, patch: true, good: ['row-2', 'row-2'], bad: ['x'.repeat(256), /expected a string of at most 255 characters or null/] },
  allocation_uuid: { since: [1, 52], view: '3be26c0b-03f2-4d2d-ae87-c02d7f33c125' },
  conductor_replicas: { since: [1, 49], view: ['c2'] },
  conductor_affinity: { since: [1, 49], view: 'c3' },
};

const before = (v: V): V => [v[0], v[1] - 1];

describe('the node field table', () => {
  it('has exactly the fields of the contract, each since its version', () => {
    expect(NODE_FIELDS.fieldsAt(LATEST)).toEqual(Object.keys(CONTRACT));
    for (const [field, c] of Object.entries(CONTRACT)) expect(NODE_FIELDS.since(field), field).toEqual(c.since);
    expect(NODE_FIELDS.since('colour')).toBeUndefined();
  });

  it('shows each field from its version on, and hides it from older requests', () => {
    for (const [field, c] of Object.entries(CONTRACT)) {
      expect(NODE_FIELDS.fieldsAt(c.since), field).toContain(field);
      if (c.since[1] > 1) expect(NODE_FIELDS.fieldsAt(before(c.since)), field).not.toContain(field);
    }
  });

  it('renders every field of a row as the contract says, secrets masked at any depth', () => {
    const view = NODE_FIELDS.render(row, ctx, NODE_FIELDS.fieldsAt(LATEST));
    expect(view).toEqual(Object.fromEntries(Object.entries(CONTRACT).map(([f, c]) => [f, c.view])));
    // Masking is the view's: the row keeps the secret.
    expect(row.driver_info.ipmi_password).toBe('hunter2');
  });

  it('renders a subset reading only the columns it needs', () => {
    expect(NODE_FIELDS.render(row, ctx, ['uuid', 'conductor'])).toEqual({ uuid: UUID, conductor: 'c1' });
    expect(new Set(NODE_FIELDS.columnsFor(['uuid', 'conductor', 'clean_step', 'fault'], ['uuid']))).toEqual(new Set(['uuid', 'conductor_group', 'driver_internal_info']));
  });

  it('takes on create exactly the creatable fields, checked and normalised', () => {
    for (const [field, c] of Object.entries(CONTRACT)) {
      const body = { driver: 'fake-hardware', [field]: c.good?.[0] ?? 'x' };
      if (!c.create) {
        expect(() => NODE_FIELDS.create(body, LATEST), field).toThrow(new RegExp(`^${field}: unknown or read-only field for a new node at API version 1.82$`));
        continue;
      }
      expect(NODE_FIELDS.create(body, LATEST)[field], field).toEqual(c.good![1]);
      expect(() => NODE_FIELDS.create({ driver: 'fake-hardware', [field]: c.bad![0] }, LATEST), field).toThrow(c.bad![1]);
    }
    expect(() => NODE_FIELDS.create({ name: 'x' }, LATEST)).toThrow(/^driver: required, a hardware type name$/);
    expect(() => NODE_FIELDS.create([1], LATEST)).toThrow(/^request body: expected a JSON object$/);
  });

  it('refuses on create a field newer than the request with 406, but takes its empty value', () => {
    for (const [field, c] of Object.entries(CONTRACT)) {
      if (!c.create || c.since[1] === 1) continue;
      const err = (() => {
        try {
          NODE_FIELDS.create({ driver: 'fake-hardware', [field]: c.good![0] }, before(c.since));
        } catch (e) {
          return e as { httpStatus?: number; message: string };
        }
        return undefined;
      })();
      expect(err?.httpStatus, field).toBe(406);
      expect(err?.message).toBe(`${field}: needs API version ${c.since[0]}.${c.since[1]} or later`);
      expect(NODE_FIELDS.create({ driver: 'fake-hardware', [field]: null }, before(c.since)), field).toEqual({ driver: 'fake-hardware' });
    }
    expect(NODE_FIELDS.create({ driver: 'fake-hardware', conductor_group: '' }, [1, 45])).toEqual({ driver: 'fake-hardware' });
  });

  it('patches exactly the patchable fields; the rest are read-only', () => {
    for (const [field, c] of Object.entries(CONTRACT)) {
      const op = { op: 'replace' as const, path: `/${field}`, value: c.good?.[0] ?? 'x' };
      if (!c.patch) {
        expect(() => applyNodePatch(row, [op]), field).toThrow(`/${field}: cannot be changed (read-only)`);
        continue;
      }
      expect(applyNodePatch(row, [op]), field).toEqual({ [field]: c.good![1] });
      expect(() => applyNodePatch(row, [{ ...op, value: c.bad![0] }]), field).toThrow(c.bad![1]);
    }
    expect(() => applyNodePatch(row, [{ op: 'add', path: '/colour', value: 'red' }])).toThrow('/colour: cannot be changed (no such field)');
    expect(() => applyNodePatch(row, [{ op: 'add', path: '/name/x', value: 'red' }])).toThrow('/name/x: cannot be changed (no such field)');
  });

  it('removes a scalar to null, the conductor group to the default group, a JSON field to {}', () => {
    const removed = applyNodePatch(row, ['name', 'resource_class', 'conductor_group', 'extra', 'boot_interface'].map((f) => ({ op: 'remove' as const, path: `/${f}` })));
    expect(JSON.parse(JSON.stringify(removed))).toEqual({ name: null, resource_class: null, conductor_group: '', extra: {}, boot_interface: null });
    expect(() => applyNodePatch(row, [{ op: 'remove', path: '/driver' }])).toThrow(/^\/driver: a node needs a driver/);
  });

  it('edits inside JSON fields key by key, leaving the row untouched', () => {
    const changed = applyNodePatch(row, [
      { op: 'add', path: '/driver_info/ipmi_port', value: 623 },
      { op: 'remove', path: '/driver_info/ipmi_password' },
      { op: 'add', path: '/properties/disk/size', value: 10 },
    ]);
    expect(JSON.parse(JSON.stringify(changed))).toEqual({
      driver_info: { ipmi_address: '10.0.0.1', ipmi_port: 623, nested: { secret_key: 'k' } },
      properties: { cpus: 4, password: 'not-a-secret-here', disk: { size: 10 } },
    });
    expect(row.driver_info.ipmi_password).toBe('hunter2');
  });

  it('refuses a patch of a field newer than the request with 406', () => {
    for (const [field, c] of Object.entries(CONTRACT)) {
      const ops = [{ op: 'replace' as const, path: `/${field}`, value: 'x' }];
      expect(() => NODE_FIELDS.checkPatchVersion(ops, c.since), field).not.toThrow();
      if (c.since[1] > 1) expect(() => NODE_FIELDS.checkPatchVersion(ops, before(c.since)), field).toThrow(`/${field}: needs API version`);
    }
    expect(() => NODE_FIELDS.checkPatchVersion([{ op: 'add', path: '/conductor_group', value: 'g' }], [1, 45])).toThrow(expect.objectContaining({ httpStatus: 406 }));
  });

  it('refuses to clear a chassis_uuid that holds a value before 1.25, as Ironic', () => {
    const remove = [{ op: 'remove' as const, path: '/chassis_uuid' }];
    const toNull = [{ op: 'replace' as const, path: '/chassis_uuid', value: null }];
    for (const ops of [remove, toNull]) {
      expect(() => NODE_FIELDS.checkPatchVersion(ops, [1, 24], row)).toThrow('/chassis_uuid: clearing it needs API version 1.25 or later');
      expect(() => NODE_FIELDS.checkPatchVersion(ops, [1, 25], row)).not.toThrow();
      // Nothing to clear: allowed at any version.
      expect(() => NODE_FIELDS.checkPatchVersion(ops, [1, 1], { ...row, chassis_id: null, chassis_uuid: null })).not.toThrow();
    }
    expect(() => NODE_FIELDS.checkPatchVersion([{ op: 'replace', path: '/chassis_uuid', value: UUID }], [1, 1], row)).not.toThrow();
    expect(applyNodePatch(row, remove)).toEqual({ chassis_uuid: null });
  });

  it('reads a patch document: add and replace need a value, remove takes none', () => {
    expect(parsePatch([{ op: 'remove', path: '/name', value: 'ignored' }, { op: 'add', path: '/extra/a', value: null }])).toEqual([
      { op: 'remove', path: '/name' },
      { op: 'add', path: '/extra/a', value: null },
    ]);
    expect(() => parsePatch([{ op: 'replace', path: '/name' }])).toThrow('patch[0].value: required for replace');
    expect(() => parsePatch([{ op: 'move', path: '/name', from: '/x' }])).toThrow(/^patch\[0\]\.op: "move" is not supported/);
    expect(() => parsePatch([])).toThrow('the patch has no operations');
  });

  it('documents a create body with exactly the creatable fields, driver required', () => {
    const schema = NODE_FIELDS.createSchema() as unknown as { properties: Record<string, { description: string }>; required: string[]; additionalProperties: boolean };
    expect(Object.keys(schema.properties).sort()).toEqual(Object.keys(CONTRACT).filter((f) => CONTRACT[f]!.create).sort());
    expect(schema.required).toEqual(['driver']);
    expect(schema.additionalProperties).toBe(false);
    expect(schema.properties.conductor_group!.description).toBe('Since API 1.46.');
  });

  it('derives the sort keys (every own non-JSON column) and the interface fields', () => {
    expect(new Set(NODE_SORT_KEYS)).toEqual(new Set([
      'created_at', 'updated_at', 'uuid', 'name', 'driver', 'provision_state', 'power_state', 'conductor_group', 'resource_class', 'instance_uuid',
      'maintenance', 'provision_updated_at', 'target_provision_state', 'target_power_state', 'maintenance_reason', 'last_error', 'reservation',
      'boot_interface', 'console_interface', 'deploy_interface', 'inspect_interface', 'management_interface', 'network_interface', 'power_interface',
      'raid_interface', 'rescue_interface', 'vendor_interface', 'console_enabled', 'protected', 'protected_reason',
      'storage_interface', 'bios_interface', 'automated_clean', 'owner',
      'retired', 'lessee', 'boot_mode', 'secure_boot', 'shard',
    ]));
    expect(NODE_INTERFACE_FIELDS).toEqual(Object.keys(CONTRACT).filter((f) => f.endsWith('_interface')));
    expect(NODE_FIELDS.jsonFields()).toEqual(['driver_info', 'extra', 'instance_info', 'properties', 'network_data']);
  });

  it('keeps automated_clean three-valued: true, false, or null (the configuration decides), which remove and null leave', () => {
    for (const [value, stored] of [[true, true], ['TRUE', true], [false, false], ['0', false], [null, null]] as const) {
      expect(applyNodePatch(row, [{ op: 'replace', path: '/automated_clean', value }]), String(value)).toEqual({ automated_clean: stored });
    }
    expect(applyNodePatch({ ...row, automated_clean: false }, [{ op: 'remove', path: '/automated_clean' }])).toEqual({ automated_clean: null });
    expect(NODE_FIELDS.create({ driver: 'fake-hardware', automated_clean: null }, LATEST)).toEqual({ driver: 'fake-hardware' });
    expect(NODE_FIELDS.create({ driver: 'fake-hardware', automated_clean: 'yes' }, [1, 47])).toEqual({ driver: 'fake-hardware', automated_clean: true });
    for (const bad of [1, 'maybe', [], {}]) expect(() => NODE_FIELDS.create({ driver: 'fake-hardware', automated_clean: bad }, LATEST), JSON.stringify(bad)).toThrow('automated_clean: expected true, false or null');
  });
});
