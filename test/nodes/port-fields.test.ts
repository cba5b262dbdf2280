/**
 * The port field table against an independent statement of each field's contract (version, create,
 * patch, accepted and refused values, view), as for nodes in node-fields.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { PORT_FIELDS } from '../../src/nodes/port-fields.js';
import type { PortRow } from '../../src/nodes/port-store.js';

type V = readonly [number, number];
const LATEST: V = [1, 49];
const UUID = 'a3b1c2d4-0000-4000-8000-00000000abcd';

const row: PortRow = {
  id: 1, uuid: UUID, address: '52:54:00:aa:bb:01', node_id: 9, node_uuid: 'n-uuid', portgroup_id: null, portgroup_uuid: null, pxe_enabled: true, physical_network: null,
  local_link_connection: { switch_id: 'aa:bb:cc:dd:ee:ff', port_id: 'Eth1/1' }, extra: { rack: 3 }, is_smartnic: false, internal_info: {},
  created_at: new Date('2026-01-01T00:00:00.000Z'), updated_at: new Date('2026-01-01T00:00:02.000Z'),
};

interface Contract {
  since: V;
  view: unknown;
  create?: boolean;
  patch?: boolean;
  good?: [unknown, unknown];
  bad?: [unknown, RegExp];
}

const CONTRACT: Record<string, Contract> = {
  uuid: { since: [1, 1], view: UUID, create: true, good: [UUID, UUID], bad: ['x', /^uuid: expected a UUID/] },
  address: { since: [1, 1], view: '52:54:00:aa:bb:01', create: true, patch: true, good: ['52-54-00-AA-BB-02', '52-54-00-AA-BB-02'], bad: [5, /expected a MAC address/] },
  // A uuid only, as Ironic's (a node name is refused).
  node_uuid: { since: [1, 1], view: 'n-uuid', create: true, good: [UUID.toUpperCase(), UUID], bad: ['node-1', /^node_uuid: expected the UUID of a node, got "node-1"/] },
  extra: { since: [1, 1], view: { rack: 3 }, create: true, patch: true, good: [{ a: 1 }, { a: 1 }], bad: ['x', /expected a JSON object/] },
  created_at: { since: [1, 1], view: '2026-01-01T00:00:00+00:00' },
  updated_at: { since: [1, 1], view: '2026-01-01T00:00:02+00:00' },
  internal_info: { since: [1, 18], view: {} },
  local_link_connection: {
    since: [1, 19], view: { switch_id: 'aa:bb:cc:dd:ee:ff', port_id: 'Eth1/1' }, create: true, patch: true,
    good: [{ port_id: 'p', network_type: 'managed' }, { port_id: 'p', network_type: 'managed' }], bad: [{ colour: 'red' }, /local_link_connection\.colour: unknown local_link_connection key "colour"/],
  },
  pxe_enabled: { since: [1, 19], view: true, create: true, patch: true, good: ['false', false], bad: ['perhaps', /expected true or false/] },
  portgroup_uuid: { since: [1, 24], view: null, create: true, patch: true, good: [UUID.toUpperCase(), UUID], bad: ['pg-1', /^portgroup_uuid: expected the UUID of a port group or null/] },
  physical_network: { since: [1, 34], view: null, create: true, patch: true, good: ['physnet1', 'physnet1'], bad: ['p'.repeat(65), /at most 64 characters/] },
};

const before = (v: V): V => [v[0], v[1] - 1];
const required = { node_uuid: UUID, address: '52:54:00:aa:bb:03' };

describe('the port field table', () => {
  it('has exactly the fields of the contract, shown from their version on', () => {
    expect(PORT_FIELDS.fieldsAt(LATEST)).toEqual(Object.keys(CONTRACT));
    for (const [field, c] of Object.entries(CONTRACT)) {
      expect(PORT_FIELDS.fieldsAt(c.since), field).toContain(field);
      if (c.since[1] > 1) expect(PORT_FIELDS.fieldsAt(before(c.since)), field).not.toContain(field);
    }
  });

  it('renders a row as the contract says', () => {
    expect(PORT_FIELDS.render(row, undefined, PORT_FIELDS.fieldsAt(LATEST))).toEqual(Object.fromEntries(Object.entries(CONTRACT).map(([f, c]) => [f, c.view])));
  });

  it('takes on create exactly the creatable fields; newer ones answer 406', () => {
    for (const [field, c] of Object.entries(CONTRACT)) {
      const body = { ...required, [field]: c.good?.[0] ?? 'x' };
      if (!c.create) {
        expect(() => PORT_FIELDS.create(body, LATEST), field).toThrow(`${field}: unknown or read-only field for a new port`);
        continue;
      }
      expect(PORT_FIELDS.create(body, LATEST)[field], field).toEqual(c.good![1]);
      expect(() => PORT_FIELDS.create({ ...required, [field]: c.bad![0] }, LATEST), field).toThrow(c.bad![1]);
      if (c.since[1] > 1) expect(() => PORT_FIELDS.create(body, before(c.since)), field).toThrow(expect.objectContaining({ httpStatus: 406 }));
    }
    expect(() => PORT_FIELDS.create({ address: '52:54:00:aa:bb:03' }, LATEST)).toThrow("node_uuid: required, the uuid of the port's node");
  });

  it('patches exactly the patchable fields', () => {
    for (const [field, c] of Object.entries(CONTRACT)) {
      const op = { op: 'replace' as const, path: `/${field}`, value: c.good?.[0] ?? 'x' };
      if (!c.patch) {
        expect(() => PORT_FIELDS.applyPatch(row, [op]), field).toThrow(`/${field}: cannot be changed on a port`);
        continue;
      }
      expect(PORT_FIELDS.applyPatch(row, [op]), field).toEqual({ [field]: c.good![1] });
      expect(() => PORT_FIELDS.applyPatch(row, [{ ...op, value: c.bad![0] }]), field).toThrow();
    }
  });

  it('checks local_link_connection keys named by the patch path, and removes physical_network to null', () => {
    expect(() => PORT_FIELDS.applyPatch(row, [{ op: 'add', path: '/local_link_connection/colour', value: 'red' }])).toThrow(/^\/local_link_connection\/colour: unknown local_link_connection key "colour"/);
    expect(() => PORT_FIELDS.applyPatch(row, [{ op: 'add', path: '/local_link_connection/network_type', value: 'hybrid' }])).toThrow(/expected one of managed, unmanaged/);
    expect(() => PORT_FIELDS.applyPatch(row, [{ op: 'add', path: '/local_link_connection/port_id/deeper', value: 'x' }])).toThrow(/^\/local_link_connection\/port_id\/deeper: expected a string$/);
    expect(JSON.parse(JSON.stringify(PORT_FIELDS.applyPatch(row, [{ op: 'add', path: '/local_link_connection/switch_info', value: 's1' }])))).toEqual({
      local_link_connection: { switch_id: 'aa:bb:cc:dd:ee:ff', port_id: 'Eth1/1', switch_info: 's1' },
    });
    expect(PORT_FIELDS.applyPatch(row, [{ op: 'remove', path: '/physical_network' }])).toEqual({ physical_network: null });
    expect(() => PORT_FIELDS.applyPatch(row, [{ op: 'remove', path: '/pxe_enabled' }])).toThrow(/expected true or false/);
  });
});
