/**
 * The stock OpenStack `baremetal` client's VIF, NMI and passthru commands against a real
 * `ironring up`: `node vif attach|list|detach` (recorded on a port's internal_info),
 * `node inject nmi`, `node passthru list|call`, `driver passthru list` and `driver property list`
 * of fake-hardware showing the fake vendor's B1 and B2 — and the same through `ironring node …`
 * (its one-line errors and non-zero exit included).
 *
 * Without the binary these tests fail under CI (`CI=true`) and are skipped elsewhere with one line
 * naming the package (test/helpers/peers.ts).
 */
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { stockClientAvailable, useStockClient } from '../helpers/stock-client.js';

type Row = Record<string, unknown>;
const VIF = '6e1c7b0a-4d1f-4f6e-9a55-1c2b3d4e5f60';

describe.skipIf(!stockClientAvailable)('the stock baremetal VIF, NMI and passthru commands against ironring up', () => {
  const { baremetal, ok, json, endpoint } = useStockClient('baremetal-vif');
  let node: string;
  let port: string;

  it('attaches, lists and detaches a VIF on a fake node\'s port', async () => {
    node = (await json('node', 'create', '--driver', 'fake-hardware', '--name', 'vif-node')).uuid as string;
    port = (await json('port', 'create', '52:54:00:ee:00:01', '--node', node)).uuid as string;
    await ok('node', 'vif', 'attach', 'vif-node', VIF);
    expect(await json<Row[]>('node', 'vif', 'list', 'vif-node')).toEqual([{ ID: VIF }]);
    expect((await json('port', 'show', port)).internal_info).toEqual({ tenant_vif_port_id: VIF });
    const twice = await baremetal('node', 'vif', 'attach', 'vif-node', VIF);
    expect(twice.code).toBe(1);
    expect(twice.stderr).toMatch(/already attached to Ironic Port .*\(HTTP 409\)/);
    await ok('node', 'vif', 'detach', 'vif-node', VIF);
    expect(await json<Row[]>('node', 'vif', 'list', 'vif-node')).toEqual([]);
    const none = await baremetal('node', 'vif', 'detach', 'vif-node', VIF);
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/is not attached to it.*\(HTTP 400\)/);
  });

  it('injects an NMI into a fake node', async () => {
    await ok('node', 'inject', 'nmi', 'vif-node');
    const ipmi = (await json('node', 'create', '--driver', 'ipmi', '--name', 'nmi-ipmi')).uuid as string;
    const refused = await baremetal('node', 'inject', 'nmi', ipmi);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/driver_info\.ipmi_address.*\(HTTP 400\)/);
  });

  it('lists and calls the fake vendor methods of a node, and lists the driver\'s', async () => {
    const methods = await json<Row[]>('node', 'passthru', 'list', 'vif-node');
    expect(methods.map((m) => m.Name).sort()).toEqual(['fourth_method_shared_lock', 'second_method', 'third_method_sync']);
    await ok('node', 'passthru', 'call', 'vif-node', 'second_method', '--arg', 'bar=kazoo');
    const missing = await baremetal('node', 'passthru', 'call', 'vif-node', 'second_method');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/bar is required by vendor method second_method.*\(HTTP 400\)/);
    expect(await json<Row[]>('driver', 'passthru', 'list', 'fake-hardware')).toEqual([]);
  });

  it('lists fake-hardware\'s driver properties with the fake vendor\'s B1 and B2', async () => {
    const props = await json<Array<{ Property: string; Description: string }>>('driver', 'property', 'list', 'fake-hardware');
    expect(props).toEqual(expect.arrayContaining([{ Property: 'B1', Description: 'B1 description. Required.' }, { Property: 'B2', Description: 'B2 description. Required.' }]));
  });

  it('does the same through ironring node vif, inject-nmi and passthru, with one-line errors', () => {
    const cli = (...args: string[]) => runCli([...args, '--url', endpoint()]);
    expect(cli('node', 'vif', 'attach', 'vif-node', 'vif-2').code).toBe(0);
    const list = cli('node', 'vif', 'list', 'vif-node', '--format', 'json');
    expect(list.code, list.stderr).toBe(0);
    expect(JSON.parse(list.stdout)).toEqual([{ id: 'vif-2' }]);
    const again = cli('node', 'vif', 'attach', 'vif-node', 'vif-2');
    expect(again.code).not.toBe(0);
    expect(again.stderr.trim().split('\n')).toHaveLength(1);
    expect(again.stderr).toMatch(/409 .*already attached/);
    expect(cli('node', 'vif', 'detach', 'vif-node', 'vif-2').code).toBe(0);
    expect(cli('node', 'inject-nmi', 'vif-node').stdout).toMatch(/Injected an NMI into node vif-node/);
    const sync = cli('node', 'passthru', 'call', 'vif-node', 'third_method_sync', '--arg', 'bar=meow', '--format', 'json');
    expect(sync.code, sync.stderr).toBe(0);
    expect(JSON.parse(sync.stdout)).toBe(true);
    const methods = cli('node', 'passthru', 'list', 'vif-node', '--format', 'json');
    expect(Object.keys(JSON.parse(methods.stdout) as object).sort()).toEqual(['fourth_method_shared_lock', 'second_method', 'third_method_sync']);
    const indicators = cli('node', 'indicator', 'list', 'vif-node', '--format', 'json');
    expect((JSON.parse(indicators.stdout) as Array<{ name: string }>).map((i) => i.name)).toEqual(['led-0@chassis', 'led@system']);
    expect(cli('node', 'indicator', 'set', 'vif-node', 'led@system', 'BLINKING').code).toBe(0);
    expect(JSON.parse(cli('node', 'indicator', 'show', 'vif-node', 'led@system', '--format', 'json').stdout)).toEqual({ state: 'BLINKING' });
    const readOnly = cli('node', 'indicator', 'set', 'vif-node', 'led-0@chassis', 'OFF');
    expect(readOnly.code).not.toBe(0);
    expect(readOnly.stderr).toMatch(/400 .*read-only/);
    const smart = cli('port', 'create', '52:54:00:ee:00:09', '--node', 'vif-node', '--is-smartnic', '--local-link-connection', 'port_id=rep0', '--local-link-connection', 'hostname=dpu-1', '--format', 'json');
    expect(smart.code, smart.stderr).toBe(0);
    const smartUuid = (JSON.parse(smart.stdout) as { uuid: string; is_smartnic: boolean }).uuid;
    expect(JSON.parse(smart.stdout)).toMatchObject({ is_smartnic: true, local_link_connection: { port_id: 'rep0', hostname: 'dpu-1' } });
    const ordinary = cli('port', 'set', smartUuid, '--no-is-smartnic', '--format', 'json');
    expect(ordinary.code, ordinary.stderr).toBe(0);
    expect(JSON.parse(ordinary.stdout)).toMatchObject({ is_smartnic: false });
    const notSmart = cli('port', 'create', '52:54:00:ee:00:0a', '--node', 'vif-node', '--is-smartnic');
    expect(notSmart.code).not.toBe(0);
    expect(notSmart.stderr.trim().split('\n')).toHaveLength(1);
    expect(notSmart.stderr).toMatch(/is_smartnic: a Smart NIC port must have port_id and hostname/);
    const badMethod = cli('node', 'passthru', 'call', 'vif-node', 'x', '--http-method', 'TRACE');
    expect(badMethod.code).not.toBe(0);
    expect(badMethod.stderr).toMatch(/--http-method: expected one of/);
  });
});
