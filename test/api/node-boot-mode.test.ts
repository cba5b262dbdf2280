/**
 * `PUT /v1/nodes/{node}/states/boot_mode` and `…/secure_boot` (Ironic's API 1.76) through the API
 * and its in-process conductor: the fake management interface changes them and the node's
 * `boot_mode`/`secure_boot` (1.75) show what it reads back; an interface that cannot (ipmitool) is
 * refused with 400 and nothing changes; bad targets 400, busy nodes 409, below 1.76 404.
 */
import { describe, expect, it, vi } from 'vitest';
import { FakeManagement } from '../../src/drivers/fake/fake-management.js';
import { testEngines, useMigratedDatabase } from '../helpers/databases.js';
import { at, fault, useInProcessApi } from '../helpers/api-test.js';

const engines = await testEngines();

describe.each(engines)('node boot mode and secure boot on %s', (engine) => {
  const db = useMigratedDatabase(engine);
  const api = useInProcessApi(db);

  const call = (method: 'GET' | 'POST' | 'PUT', url: string, payload?: unknown, version = 'latest') =>
    api.send(method, url, payload, at(version));
  const show = async (ident: string, version = 'latest') => (await call('GET', `/v1/nodes/${ident}`, undefined, version)).json<Record<string, unknown>>();
  const settle = () => Promise.allSettled([...api.ops().running]);
  const history = async (ident: string) => ((await call('GET', `/v1/nodes/${ident}/history?detail=true`)).json() as { history: Array<{ event_type: string; event: string }> }).history;

  it('changes them through the fake management interface and shows what it reads back', async () => {
    expect((await call('POST', '/v1/nodes', { name: 'f1', driver: 'fake-hardware' })).statusCode).toBe(201);
    expect(await show('f1')).toMatchObject({ boot_mode: null, secure_boot: null });
    const mode = await call('PUT', '/v1/nodes/f1/states/boot_mode', { target: 'uefi' });
    expect(mode.statusCode, mode.body).toBe(202);
    expect(mode.headers.location).toMatch(/\/v1\/nodes\/[0-9a-f-]{36}\/states$/);
    await settle();
    expect(await show('f1')).toMatchObject({ boot_mode: 'uefi', secure_boot: null, last_error: null });
    expect((await call('PUT', '/v1/nodes/f1/states/secure_boot', { target: true })).statusCode).toBe(202);
    await settle();
    expect(await show('f1')).toMatchObject({ boot_mode: 'uefi', secure_boot: true });
    // The node's states show them from 1.75, as Ironic's.
    expect((await call('GET', '/v1/nodes/f1/states')).json()).toMatchObject({ boot_mode: 'uefi', secure_boot: true });
    expect((await call('GET', '/v1/nodes/f1/states', undefined, '1.74')).json()).not.toHaveProperty('boot_mode');
    // The stock client may send a spelling of a boolean.
    expect((await call('PUT', '/v1/nodes/f1/states/secure_boot', { target: 'off' })).statusCode).toBe(202);
    await settle();
    expect((await call('PUT', '/v1/nodes/f1/states/boot_mode', { target: 'bios' })).statusCode).toBe(202);
    await settle();
    expect(await show('f1')).toMatchObject({ boot_mode: 'bios', secure_boot: false });
    expect((await history('f1')).filter((e) => e.event_type === 'management').map((e) => e.event)).toEqual([
      'boot mode is uefi', 'secure boot state is true', 'secure boot state is false', 'boot mode is bios',
    ]);
    // Verifying a node (manage) records what its management interface reports, as Ironic's.
    await db.store.db.updateTable('nodes').set({ boot_mode: null, secure_boot: null }).where('name', '=', 'f1').execute();
    expect((await call('PUT', '/v1/nodes/f1/states/provision', { target: 'manage' })).statusCode).toBe(202);
    await settle();
    await settle();
    expect(await show('f1')).toMatchObject({ provision_state: 'manageable', boot_mode: 'bios', secure_boot: false });
  });

  it('says when the change failed (last_error, an ERROR event) and leaves the recorded mode alone', async () => {
    expect((await call('POST', '/v1/nodes', { name: 'x1', driver: 'fake-hardware' })).statusCode).toBe(201);
    const spy = vi.spyOn(FakeManagement.prototype, 'setBootMode').mockRejectedValueOnce(new Error('the BMC said no'));
    try {
      expect((await call('PUT', '/v1/nodes/x1/states/boot_mode', { target: 'uefi' })).statusCode).toBe(202);
      await settle();
    } finally {
      spy.mockRestore();
    }
    expect(await show('x1')).toMatchObject({ boot_mode: null, last_error: "Failed to change boot mode to 'uefi': the BMC said no" });
    expect((await history('x1')).filter((e) => e.event_type === 'management').map((e) => e.event)).toEqual(["Failed to change boot mode to 'uefi': the BMC said no"]);
    // The next change clears it.
    expect((await call('PUT', '/v1/nodes/x1/states/boot_mode', { target: 'uefi' })).statusCode).toBe(202);
    await settle();
    expect(await show('x1')).toMatchObject({ boot_mode: 'uefi', last_error: null });
  });

  it('refuses an interface that cannot change them (400 naming it), bad targets, busy nodes and old versions', async () => {
    expect((await call('POST', '/v1/nodes', { name: 'i1', driver: 'ipmi' })).statusCode).toBe(201);
    for (const [action, target, what] of [['boot_mode', 'uefi', 'boot mode'], ['secure_boot', true, 'secure boot state']] as const) {
      const res = await call('PUT', `/v1/nodes/i1/states/${action}`, { target });
      expect(res.statusCode, res.body).toBe(400);
      expect(fault(res.body)).toBe(`Driver ipmi does not support changing the ${what}: the node's management_interface "ipmitool" cannot change it`);
    }
    await settle();
    expect(await show('i1')).toMatchObject({ boot_mode: null, secure_boot: null, last_error: null });

    expect((await call('POST', '/v1/nodes', { name: 'f2', driver: 'fake-hardware' })).statusCode).toBe(201);
    const badMode = await call('PUT', '/v1/nodes/f2/states/boot_mode', { target: 'legacy' });
    expect(badMode.statusCode).toBe(400);
    expect(fault(badMode.body)).toMatch(/^target: invalid boot mode "legacy" requested for node; allowed boot modes are: bios, uefi$/);
    expect((await call('PUT', '/v1/nodes/f2/states/secure_boot', { target: 'maybe' })).statusCode).toBe(400);
    expect((await call('PUT', '/v1/nodes/f2/states/secure_boot', {})).statusCode).toBe(400);
    await db.store.db.updateTable('nodes').set({ provision_state: 'cleaning' }).where('name', '=', 'f2').execute();
    const busy = await call('PUT', '/v1/nodes/f2/states/boot_mode', { target: 'uefi' });
    expect(busy.statusCode).toBe(409);
    await db.store.db.updateTable('nodes').set({ provision_state: 'enroll' }).where('name', '=', 'f2').execute();
    expect((await call('PUT', '/v1/nodes/f2/states/boot_mode', { target: 'uefi' }, '1.75')).statusCode).toBe(404);
    expect((await call('PUT', '/v1/nodes/f2/states/secure_boot', { target: true }, '1.75')).statusCode).toBe(404);
    expect(await show('f2', '1.74')).not.toHaveProperty('boot_mode');
    expect((await call('PUT', '/v1/nodes/nope/states/boot_mode', { target: 'uefi' })).statusCode).toBe(404);
  });
});
