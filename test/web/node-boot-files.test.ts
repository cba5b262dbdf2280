/**
 * The node page's boot files, through `app.inject` on an in-process API whose one conductor's row
 * points at a stand-in HTTP server: the page lists what that owner answers on
 * `GET /v1/nodes/{uuid}/boot-files`, asked with the RPC credentials (which never reach the page),
 * every value escaped; an owner that does not answer, refuses, or answers something else is
 * "not reported" with the reason, never a made-up table.
 */
import { createServer } from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';
import type { AddressInfo, Server } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseBootFiles } from '../../src/web/pages/node-boot-files.js';
import { LATEST, useInProcessApi } from '../helpers/api-test.js';
import { useMigratedDatabase } from '../helpers/databases.js';
import { textOf } from './pages-app.js';

const RPC_PASSWORD = 'rpc-s3cret-pw';
const RPC_AUTH = `Basic ${Buffer.from(`dashboard:${RPC_PASSWORD}`).toString('base64')}`;
const EVIL = '<img src=x onerror=alert(1)>';

/** A listing as a conductor answers it, for node `uuid`. */
function listing(uuid: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    node: uuid,
    conductor: 'aio',
    owned: true,
    affinity_here: true,
    truncated: false,
    files: [
      { root: 'tftp', path: uuid, kind: 'directory', size: 4096, modified: '2026-03-01T10:00:00.000Z' },
      { root: 'tftp', path: `${uuid}/config`, kind: 'file', size: 312, modified: '2026-03-01T10:00:01.000Z', hard_links: 1 },
      { root: 'tftp', path: `${uuid}/kernel`, kind: 'file', size: 50003, modified: '2026-03-01T10:00:02.000Z', hard_links: 2 },
      { root: 'tftp', path: `${uuid}/${EVIL}`, kind: 'symlink', size: 11, modified: '2026-03-01T10:00:03.000Z', target: null, target_outside_root: true },
      { root: 'tftp', path: 'pxelinux.cfg/01-52-54-00-00-00-07', kind: 'symlink', size: 48, modified: '2026-03-01T10:00:04.000Z', target: `${uuid}/<script>config`, target_outside_root: false },
      { root: 'dhcp_hosts', path: 'ironring-aio-52-54-00-00-00-07.conf', kind: 'file', size: 60, modified: '2026-03-01T10:00:05.000Z', hard_links: 1 },
    ],
    ...extra,
  };
}

describe('the node page lists the boot files its owner reports', () => {
  const db = useMigratedDatabase('sqlite');
  const api = useInProcessApi(db, { IRONRING_JSON_RPC_AUTH_STRATEGY: 'http_basic', IRONRING_JSON_RPC_USERNAME: 'dashboard', IRONRING_JSON_RPC_PASSWORD: RPC_PASSWORD });
  let server: Server;
  let standIn = '';
  let answer: (uuid: string) => { status: number; body: string };
  const asked: Array<{ url: string; headers: IncomingHttpHeaders }> = [];

  beforeEach(async () => {
    asked.length = 0;
    answer = (uuid) => ({ status: 200, body: JSON.stringify(listing(uuid)) });
    server = createServer((req, res) => {
      asked.push({ url: req.url ?? '', headers: req.headers });
      const m = /^\/v1\/nodes\/([^/]+)\/boot-files$/.exec(req.url ?? '');
      if (req.headers.authorization !== RPC_AUTH) return void res.writeHead(401).end();
      if (!m) return void res.writeHead(404).end();
      const { status, body } = answer(m[1]!);
      res.writeHead(status, { 'content-type': 'application/json' }).end(body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    standIn = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterEach(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const node = async (): Promise<string> => (await api.made('/v1/nodes', { driver: 'fake-hardware', name: 'bf-node' }, LATEST)).uuid as string;
  const pointOwnerAt = (url: string) => db.store.db.updateTable('conductors').set({ rpc_url: url }).where('hostname', '=', 'aio').execute();

  it('shows the files, links and entries from the owner, escaped, asked with the RPC credentials that never reach the page', async () => {
    const uuid = await node();
    await pointOwnerAt(standIn);
    const res = await api.get(`/ui/nodes/${uuid}`);
    expect(res.statusCode).toBe(200);
    expect(asked.map((a) => a.url)).toEqual([`/v1/nodes/${uuid}/boot-files`]);
    expect(asked[0]!.headers.authorization).toBe(RPC_AUTH);
    const text = textOf(res.body);
    expect(text).toContain('As listed by aio from its disk: 6 entries.');
    expect(text).toContain(`TFTP root ${uuid} directory — 2026-03-01T10:00:00Z`);
    expect(text).toContain(`TFTP root ${uuid}/config file 312 bytes 2026-03-01T10:00:01Z`);
    expect(text).toContain(`TFTP root ${uuid}/kernel file (2 links) 50003 bytes`);
    expect(text).toContain('dnsmasq hosts ironring-aio-52-54-00-00-00-07.conf file 60 bytes');
    expect(res.body).toContain(`<td class="mono">${uuid}/&lt;img src=x onerror=alert(1)&gt;</td><td>symlink → <em>outside root</em></td>`);
    expect(res.body).toContain(`symlink → <span class="mono">${uuid}/&lt;script&gt;config</span>`);
    expect(res.body).not.toContain('<img src=x');
    expect(res.body).not.toContain('<script>config');
    expect(res.body).not.toContain(RPC_PASSWORD);
    expect(res.body).not.toContain(RPC_AUTH.slice('Basic '.length));
    // The live summary carries the same table; the details part asks the owner nothing.
    const summary = await api.get(`/ui/nodes/${uuid}/live/summary`);
    expect(summary.body).toContain('data-testid="boot-files"');
    await api.get(`/ui/nodes/${uuid}/live/details`);
    expect(asked).toHaveLength(2);
  });

  it('says "not reported" with the reason when the owner does not answer, refuses, or answers something else', async () => {
    const uuid = await node();
    // The in-process conductor's row points at port 9 of 127.0.0.1, where nothing listens.
    const dead = textOf((await api.get(`/ui/nodes/${uuid}`)).body);
    expect(dead).toMatch(/Files on aio: not reported: aio did not list them \(connect ECONNREFUSED 127\.0\.0\.1:9\)/);
    expect(dead).not.toContain('As listed by');

    await pointOwnerAt(standIn);
    answer = () => ({ status: 500, body: '{}' });
    expect(textOf((await api.get(`/ui/nodes/${uuid}`)).body)).toContain('not reported: aio did not list them (answered 500)');
    answer = (u) => ({ status: 200, body: JSON.stringify(listing(u, { files: [{ root: '../etc', path: EVIL, kind: 'file', size: 1, modified: 'x' }] })) });
    const odd = await api.get(`/ui/nodes/${uuid}`);
    expect(textOf(odd.body)).toContain('not reported: aio answered something other than a boot file listing');
    expect(odd.body).not.toContain('onerror');
    answer = (u) => ({ status: 200, body: JSON.stringify(listing(u, { conductor: 'other' })) });
    expect(textOf((await api.get(`/ui/nodes/${uuid}`)).body)).toContain('not reported: the RPC address of aio is answered by another conductor');

    await pointOwnerAt('not a url');
    expect(textOf((await api.get(`/ui/nodes/${uuid}`)).body)).toContain('not reported: aio publishes no http(s) RPC address');
  });

  it('says when the owner holds nothing for the node, and when the listing was cut', async () => {
    const uuid = await node();
    await pointOwnerAt(standIn);
    answer = (u) => ({ status: 200, body: JSON.stringify(listing(u, { files: [] })) });
    expect(textOf((await api.get(`/ui/nodes/${uuid}`)).body)).toContain('aio holds no boot files for this node.');
    answer = (u) => ({ status: 200, body: JSON.stringify(listing(u, { truncated: true, owned: false })) });
    const cut = textOf((await api.get(`/ui/nodes/${uuid}`)).body);
    expect(cut).toContain('6 entries (cut at 500; there are more)');
    expect(cut).toContain('It does not own the node on its ring now');
  });
});

describe('parseBootFiles', () => {
  it('takes a listing and refuses anything that is not one', () => {
    const uuid = '6f1f7a3c-2b8e-4c1e-9d0a-7b2f7d1e5a10';
    expect(parseBootFiles(JSON.stringify(listing(uuid)))?.files).toHaveLength(6);
    for (const bad of ['', 'null', '[]', '{"files":[]}', JSON.stringify(listing(uuid, { files: Array.from({ length: 501 }, () => ({ root: 'tftp', path: 'a', kind: 'file', size: 1, modified: '2026-01-01T00:00:00Z' })) })), JSON.stringify(listing(uuid, { files: [{ root: 'tftp', path: 'a', kind: 'file', size: -1, modified: '2026-01-01T00:00:00Z' }] }))]) {
      expect(parseBootFiles(bad)).toBeNull();
    }
  });
});
