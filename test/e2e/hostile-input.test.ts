/**
 * Hostile and malformed input against a real `ironring up` (issue #14, items 1, 6, 7 and 8): each
 * request is refused with a 400/413/415/431 in the Ironic error format, nothing it carried is
 * stored, and the process keeps serving (the prototype-polluting patch used to answer 200 and kill
 * `up` a few seconds later; the deeply nested driver_info used to be stored and break every detail
 * list).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCli } from '../helpers/cli.js';
import type { CliProcess } from '../helpers/cli.js';

const LATEST = { 'X-OpenStack-Ironic-API-Version': 'latest', 'content-type': 'application/json' };

let dir: string;
let proc: CliProcess;
let base: string;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'ironring-hostile-'));
  proc = startCli(
    ['up', '--api-address', '127.0.0.1:0', '--rpc-address', '127.0.0.1:0', '--tftp-address', '127.0.0.1:0', '--http-address', '127.0.0.1:0', '--host', 'aio', '--data-dir', dir],
    { cwd: dir },
  );
  base = (await proc.waitForOutput(/API: +(http:\/\/127\.0\.0\.1:\d+)\/v1/, 30_000))[1]!;
}, 60_000);
afterAll(async () => {
  if (proc.child.exitCode === null) proc.child.kill('SIGKILL');
  await proc.exited;
  rmSync(dir, { recursive: true, force: true });
});

/** The faultstring of an Ironic error body (throws when the body is not in that format). */
function fault(body: string): string {
  return (JSON.parse((JSON.parse(body) as { error_message: string }).error_message) as { faultstring: string }).faultstring;
}

async function call(method: string, url: string, body?: unknown, headers: Record<string, string> = LATEST): Promise<{ status: number; text: string }> {
  const res = await fetch(`${base}${url}`, { method, headers, ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}) });
  return { status: res.status, text: await res.text() };
}

async function createNode(body: Record<string, unknown>, headers: Record<string, string> = LATEST): Promise<Record<string, unknown>> {
  const res = await call('POST', '/v1/nodes', { driver: 'fake-hardware', ...body }, headers);
  expect(res.status, res.text).toBe(201);
  return JSON.parse(res.text) as Record<string, unknown>;
}

describe('hostile input against ironring up', () => {
  it('refuses prototype keys in patch paths and bodies with 400 naming the path, and keeps running', async () => {
    const node = await createNode({ name: 'proto-1', extra: { keep: 'me' } });
    const refused: Array<[unknown, RegExp]> = [
      [[{ op: 'add', path: '/extra/__proto__/x', value: 1 }], /^patch\[0\]\.path: "\/extra\/__proto__\/x" names the key "__proto__"/],
      [[{ op: 'add', path: '/extra/constructor/prototype/x', value: 1 }], /^patch\[0\]\.path: .*names the key "constructor"/],
      [[{ op: 'add', path: '/driver_info/a', value: 1 }, { op: 'add', path: '/properties/prototype', value: 1 }], /^patch\[1\]\.path: .*"prototype"/],
      ['[{"op":"add","path":"/extra/a","value":{"__proto__":{"x":1}}}]', /^\[0\]\.value\.__proto__: the key "__proto__" is not accepted$/],
      ['[{"op":"add","path":"/extra/a","value":{"constructor":{"prototype":{"x":1}}}}]', /^\[0\]\.value\.constructor: the key "constructor" is not accepted$/],
    ];
    for (const [body, message] of refused) {
      const res = await call('PATCH', '/v1/nodes/proto-1', body);
      expect(res.status, `${JSON.stringify(body)} → ${res.text}`).toBe(400);
      expect(fault(res.text)).toMatch(message);
    }
    const created = await call('POST', '/v1/nodes', '{"driver":"fake-hardware","extra":{"prototype":1}}');
    expect(created.status).toBe(400);
    expect(fault(created.text)).toBe('extra.prototype: the key "prototype" is not accepted');

    // prom-client used to throw on the polluted label set a few seconds after the patch.
    await new Promise((resolve) => setTimeout(resolve, 5000));
    expect(proc.child.exitCode).toBeNull();
    expect((await call('GET', '/metrics')).status).toBe(200);
    expect(({} as Record<string, unknown>).x).toBeUndefined();
    const shown = JSON.parse((await call('GET', `/v1/nodes/${node.uuid as string}`)).text) as { extra: unknown; driver_info: unknown; properties: unknown };
    expect(shown).toMatchObject({ extra: { keep: 'me' }, driver_info: {}, properties: {} });
  }, 30_000);

  it('masks secrets inside arrays', async () => {
    const node = await createNode({ driver_info: { list: [{ password: 'hunter2', user: 'root' }, [{ ipmi_password: 'x' }]], nested: { secret: 's' } } });
    expect(node.driver_info).toEqual({ list: [{ password: '******', user: 'root' }, [{ ipmi_password: '******' }]], nested: { secret: '******' } });
    const detail = JSON.parse((await call('GET', '/v1/nodes/detail')).text) as { nodes: Array<{ uuid: string; driver_info: unknown }> };
    expect(JSON.stringify(detail.nodes.find((n) => n.uuid === node.uuid))).not.toContain('hunter2');
  });

  it('refuses a 4,000-level driver_info with 400, stores nothing, and detail lists keep working', async () => {
    const deep = `${'{"a":'.repeat(4000)}1${'}'.repeat(4000)}`;
    const before = JSON.parse((await call('GET', '/v1/nodes')).text) as { nodes: unknown[] };
    const res = await call('POST', '/v1/nodes', `{"driver":"fake-hardware","name":"deep-1","driver_info":${deep}}`);
    expect(res.status, res.text).toBe(400);
    expect(fault(res.text)).toMatch(/^driver_info(\.a)+: nested deeper than 34 levels/);
    const patched = await call('PATCH', '/v1/nodes/proto-1', `[{"op":"add","path":"/driver_info/x","value":${deep}}]`);
    expect(patched.status).toBe(400);
    // Within the body's limit but too deep once it sits under its path in the field.
    const under = await call('PATCH', '/v1/nodes/proto-1', [{ op: 'add', path: `/extra${'/k'.repeat(30)}`, value: JSON.parse(`${'{"a":'.repeat(20)}1${'}'.repeat(20)}`) as unknown }]);
    expect(under.status).toBe(400);
    expect(fault(under.text)).toMatch(/^extra: nested deeper than 32 levels/);
    const after = JSON.parse((await call('GET', '/v1/nodes')).text) as { nodes: unknown[] };
    expect(after.nodes).toHaveLength(before.nodes.length);
    expect((await call('GET', '/v1/nodes/deep-1')).status).toBe(404);
    expect((await call('GET', '/v1/nodes/detail')).status).toBe(200);
  });

  it('bounds the size a JSON field can grow to, patch by patch', async () => {
    await createNode({ name: 'size-1' });
    const chunk = 'x'.repeat(40_000);
    expect((await call('PATCH', '/v1/nodes/size-1', [{ op: 'add', path: '/extra/a', value: chunk }])).status).toBe(200);
    const second = await call('PATCH', '/v1/nodes/size-1', [{ op: 'add', path: '/extra/b', value: chunk }]);
    expect(second.status).toBe(400);
    expect(fault(second.text)).toMatch(/^extra: 800\d\d bytes of JSON, more than the 65536 accepted \(\[api\] max_json_field_size\)$/);
    const shown = JSON.parse((await call('GET', '/v1/nodes/size-1')).text) as { extra: Record<string, string> };
    expect(Object.keys(shown.extra)).toEqual(['a']);
    // instance_info may carry a config drive: it is bounded by the body limit instead.
    expect((await call('PATCH', '/v1/nodes/size-1', [{ op: 'add', path: '/instance_info/image', value: 'y'.repeat(200_000) }])).status).toBe(200);
  });

  it('puts a node back in the default conductor group when its group is removed', async () => {
    await createNode({ name: 'group-1', conductor_group: '' });
    const res = await call('PATCH', '/v1/nodes/group-1', [{ op: 'remove', path: '/conductor_group' }]);
    expect(res.status, res.text).toBe(200);
    expect(JSON.parse(res.text)).toMatchObject({ conductor_group: '' });
  });

  it('answers repeated query parameters with 400 naming the parameter', async () => {
    for (const [url, name] of [
      ['/v1/nodes?fields=uuid&fields=name', 'fields'],
      ['/v1/nodes?detail=true&detail=false', 'detail'],
      ['/v1/nodes?driver=a&driver=b', 'driver'],
      ['/v1/nodes/detail?provision_state=enroll&provision_state=active', 'provision_state'],
      ['/v1/nodes/proto-1?fields=uuid&fields=name', 'fields'],
      ['/v1/ports?node=a&node=b', 'node'],
      ['/v1/drivers?detail=1&detail=0', 'detail'],
      ['/v1/conductors?fields=hostname&fields=alive', 'fields'],
      ['/compute/v1/servers?status=a&status=b', 'status'],
    ] as const) {
      const res = await call('GET', url);
      expect(res.status, `${url} → ${res.text}`).toBe(400);
      expect(fault(res.text)).toBe(`${name}: query parameter given 2 times; give it at most once`);
    }
  });

  it('answers text/plain with 415 and an oversized header with an Ironic-shaped 431', async () => {
    const plain = await call('POST', '/v1/nodes', 'driver=fake-hardware', { ...LATEST, 'content-type': 'text/plain' });
    expect(plain.status).toBe(415);
    expect(fault(plain.text)).toMatch(/^unsupported media type "text\/plain"/);
    // Over the body limit, judged by the declared length before any body is read: sent on a raw
    // socket with headers only, since a client still writing a body the server refused may get
    // EPIPE instead of the answer (seen under load with fetch).
    const url = new URL(base);
    const exchange = (request: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = connect(Number(url.port), url.hostname);
        let text = '';
        socket.setEncoding('utf8').on('data', (d: string) => (text += d));
        socket.on('close', () => resolve(text));
        socket.on('error', (err) => (text ? resolve(text) : reject(err)));
        socket.write(request);
      });
    const huge = await exchange(
      `POST /v1/nodes HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1100000\r\nX-OpenStack-Ironic-API-Version: latest\r\nConnection: close\r\n\r\n`,
    );
    expect(huge).toMatch(/^HTTP\/1\.1 413 /);
    expect(fault(huge.slice(huge.indexOf('\r\n\r\n') + 4))).toMatch(/too large/i);

    const raw = await exchange(`GET /v1/nodes HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`);
    expect(raw).toMatch(/^HTTP\/1\.1 431 /);
    expect(fault(raw.slice(raw.indexOf('\r\n\r\n') + 4))).toMatch(/^request header fields too large/);
  });

  it('refuses configdrive with manage, an unbounded power timeout and unknown local_link_connection keys', async () => {
    const manage = await call('PUT', '/v1/nodes/proto-1/states/provision', { target: 'manage', configdrive: 'H4sIAAAA' });
    expect(manage.status).toBe(400);
    expect(fault(manage.text)).toBe('configdrive: only the deploy (active) and rebuild actions take a config drive, not "manage"');
    // The JSON form needs 1.56; a list or a number is no config drive.
    const json = await call('PUT', '/v1/nodes/proto-1/states/provision', { target: 'active', configdrive: { user_data: 'x' } }, { ...LATEST, 'X-OpenStack-Ironic-API-Version': '1.55' });
    expect(json.status).toBe(400);
    expect(fault(json.text)).toBe('configdrive: a JSON object needs API version 1.56 or later (this request is 1.55); below it, send the gzipped, base64-encoded ISO image or its URL, or set instance_info/configdrive to the object');
    for (const configdrive of [['x'], 7]) {
      const odd = await call('PUT', '/v1/nodes/proto-1/states/provision', { target: 'active', configdrive });
      expect(odd.status).toBe(400);
      expect(fault(odd.text)).toBe('configdrive: expected a string (a gzipped, base64-encoded ISO image, or its URL) or, from API 1.56, an object');
    }
    for (const timeout of [1e308, 0, -5, 1.5, '10']) {
      const power = await call('PUT', '/v1/nodes/proto-1/states/power', { target: 'power on', timeout });
      expect(power.status, JSON.stringify(timeout)).toBe(400);
      expect(fault(power.text)).toMatch(/^timeout: expected a positive integer of seconds, at most 3600/);
    }
    const nodeState = JSON.parse((await call('GET', '/v1/nodes/proto-1/states')).text) as { provision_state: string; target_power_state: string | null };
    expect(nodeState).toMatchObject({ provision_state: 'enroll', target_power_state: null });

    const node = JSON.parse((await call('GET', '/v1/nodes/proto-1')).text) as { uuid: string };
    const port = await call('POST', '/v1/ports', { node_uuid: node.uuid, address: '52:54:00:12:34:56', local_link_connection: { switch_id: '0a:1b:2c:3d:4e:5f', port_id: 'Eth1/1', colour: 'red' } });
    expect(port.status).toBe(400);
    expect(fault(port.text)).toBe('local_link_connection.colour: unknown local_link_connection key "colour"; valid keys: switch_id, port_id, switch_info, hostname, network_type');
    const ok = await call('POST', '/v1/ports', { node_uuid: node.uuid, address: '52:54:00:12:34:56', local_link_connection: { switch_id: '0a:1b:2c:3d:4e:5f', port_id: 'Eth1/1' } });
    expect(ok.status, ok.text).toBe(201);
    const portUuid = (JSON.parse(ok.text) as { uuid: string }).uuid;
    const patch = await call('PATCH', `/v1/ports/${portUuid}`, [{ op: 'add', path: '/local_link_connection/colour', value: 'red' }]);
    expect(patch.status).toBe(400);
    expect(fault(patch.text)).toMatch(/^\/local_link_connection\/colour: unknown local_link_connection key "colour"/);
    expect(JSON.parse((await call('GET', `/v1/ports/${portUuid}`)).text)).toMatchObject({ local_link_connection: { switch_id: '0a:1b:2c:3d:4e:5f', port_id: 'Eth1/1' } });
  });

  it('lists the allowed actions in the names of the request\'s microversion', async () => {
    // A node created without a version header starts available (1.1 behaviour).
    const node = await createNode({}, { 'content-type': 'application/json' });
    const old = await call('PUT', `/v1/nodes/${node.uuid as string}/states/provision`, { target: 'provide' }, { ...LATEST, 'X-OpenStack-Ironic-API-Version': '1.49' });
    expect(old.status).toBe(400);
    expect(fault(old.text)).toBe('the requested action "provide" cannot be performed on node in state "available"; allowed actions: manage, active');
  });
});
