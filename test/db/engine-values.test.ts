import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { listConductors, registerConductor } from '../../src/cluster/membership.js';
import { isUniqueViolation, uniqueViolation } from '../../src/db/errors.js';
import { testEngines, useMigratedDatabase } from '../helpers/databases.js';

const engines = await testEngines();

describe.each(engines)('values and errors read the same on %s', (engine) => {
  const db = useMigratedDatabase(engine);

  const addNode = (uuid: string, name: string | null, extra: { maintenance?: boolean; instance_uuid?: string } = {}) =>
    db.store.db
      .insertInto('nodes')
      .values({ uuid, name, driver: 'fake-hardware', provision_state: 'enroll', ...extra, created_at: db.store.sqlNow(), updated_at: db.store.sqlNow() })
      .returning('id')
      .executeTakeFirstOrThrow();

  it('computed flags come back as booleans, and an unknown condition as false', async () => {
    const { store } = db;
    await addNode('00000000-0000-4000-8000-000000000001', 'n1', { maintenance: true });
    await addNode('00000000-0000-4000-8000-000000000002', 'n2');
    const rows = await store.db
      .selectFrom('nodes')
      .select('name')
      .select(store.sqlFlag(sql<boolean>`maintenance = ${true}`).as('held'))
      .select(store.sqlFlag(sql<boolean>`name = ${'n2'}`).as('second'))
      .select(store.sqlFlag(sql<boolean>`description = ${'never set'}`).as('unknown'))
      .orderBy('name')
      .execute();
    expect(rows).toEqual([
      { name: 'n1', held: true, second: false, unknown: false },
      { name: 'n2', held: false, second: true, unknown: false },
    ]);
  });

  it('converts a column by the table column it comes from, not by the name it has in the result', async () => {
    const { store } = db;
    const { id } = await addNode('00000000-0000-4000-8000-000000000003', 'n3', { maintenance: true });
    // An aliased flag and timestamp convert; a computed number called like a flag column stays a number.
    const row = await store.db
      .selectFrom('nodes')
      .leftJoin('ports', 'ports.node_id', 'nodes.id')
      .select(['nodes.maintenance as held', 'nodes.created_at as since', 'ports.pxe_enabled as pxe'])
      .select(sql<number>`1 + 1`.as('maintenance'))
      .where('nodes.id', '=', id)
      .executeTakeFirstOrThrow();
    expect(row.held).toBe(true);
    expect(row.since).toBeInstanceOf(Date);
    expect(row.pxe).toBeNull();
    expect(row.maintenance).toBe(2);
  });

  it('aggregates read as numbers on both engines', async () => {
    const { store } = db;
    await addNode('00000000-0000-4000-8000-000000000008', 'n8');
    await addNode('00000000-0000-4000-8000-000000000009', 'n9');
    const row = await store.db
      .selectFrom('nodes')
      .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.sum<number>('id').as('total'), eb.fn.avg<number>('id').as('mean')])
      .executeTakeFirstOrThrow();
    expect(row.n).toBe(2);
    expect(typeof row.total).toBe('number');
    expect(typeof row.mean).toBe('number');
    expect(row.mean).toBe(row.total / 2);
  });

  it('a conductor reads as alive while its heartbeat is fresh, as a boolean', async () => {
    await registerConductor(db.store, { hostname: 'c1', group: '', drivers: ['fake-hardware'] }, 60);
    const [c1] = await listConductors(db.store, 60);
    expect(c1).toMatchObject({ hostname: 'c1', online: true, alive: true });
    await db.store.db.updateTable('conductors').set({ online: false }).execute();
    const [after] = await listConductors(db.store, 60);
    expect(after?.alive).toBe(false);
  });

  it('recognises a unique violation by its code and names the columns', async () => {
    await addNode('00000000-0000-4000-8000-000000000004', 'dup', { instance_uuid: '00000000-0000-4000-8000-0000000000f1' });
    const caught = async (work: Promise<unknown>) => work.then(() => expect.fail('expected an error'), (err: unknown) => err);
    const byName = await caught(addNode('00000000-0000-4000-8000-000000000005', 'dup'));
    expect(uniqueViolation(byName)?.columns).toEqual(['name']);
    const byInstance = await caught(addNode('00000000-0000-4000-8000-000000000006', null, { instance_uuid: '00000000-0000-4000-8000-0000000000f1' }));
    expect(uniqueViolation(byInstance)?.columns).toEqual(['instance_uuid']);
    const { id: conductor } = await db.store.db.insertInto('conductors').values({ hostname: 'c2', created_at: db.store.sqlNow(), updated_at: db.store.sqlNow() }).returning('id').executeTakeFirstOrThrow();
    const iface = { conductor_id: conductor, hardware_type: 'fake-hardware', interface_type: 'power', interface_name: 'fake' };
    await db.store.db.insertInto('conductor_hardware_interfaces').values(iface).execute();
    const twice = await caught(db.store.db.insertInto('conductor_hardware_interfaces').values(iface).execute());
    expect(uniqueViolation(twice)?.columns).toEqual(['conductor_id', 'hardware_type', 'interface_type', 'interface_name']);
  });

  it('other constraint errors and ordinary errors are not unique violations, even when their text says "unique"', async () => {
    const missingDriver = await db.store.db
      .insertInto('nodes')
      .values({ uuid: '00000000-0000-4000-8000-000000000007', driver: sql<string>`null`, provision_state: 'enroll' })
      .execute()
      .then(() => null, (err: unknown) => err);
    expect(missingDriver).not.toBeNull();
    expect(isUniqueViolation(missingDriver)).toBe(false);
    expect(isUniqueViolation(new Error('duplicate key value violates unique constraint "nodes_name_key"'))).toBe(false);
    expect(isUniqueViolation(null)).toBe(false);
  });
});
