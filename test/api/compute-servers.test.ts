import type { FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildApi } from '../../src/api/server.js';
import { CellStores, createCell, mapCell0 } from '../../src/cells/index.js';
import { createLogger } from '../../src/common/logger.js';
import { COMPUTE_BINARY, registerService } from '../../src/compute/services.js';
import { loadConfig } from '../../src/config/load.js';
import { runCli } from '../helpers/cli.js';
import { runMain } from '../helpers/cli-in-process.js';
import { useMigratedDatabase } from '../helpers/databases.js';

const logger = createLogger({ level: 'silent', pretty: false });
const H = { 'x-openstack-ironic-api-version': 'latest' };
const SUM = `sha256:${'ab'.repeat(32)}`;
const image = { kernel: 'http://x/k', kernel_checksum: SUM, ramdisk: 'http://x/r', ramdisk_checksum: SUM };
const fault = (body: string) => (JSON.parse(JSON.parse(body).error_message) as { faultstring: string }).faultstring;

describe('the compute API in process', () => {
  const db = useMigratedDatabase('sqlite');
  let app: FastifyInstance;
  let cells: CellStores;
  beforeEach(async () => {
    cells = new CellStores();
    cells.share(db.url, db.store);
    await mapCell0(db.store, cells, db.url);
    await createCell(db.store, cells, { name: 'cell1', databaseConnection: db.url });
    app = buildApi({ store: db.store, config: loadConfig({ env: {} }).config, logger, compute: { api: db.store, cells } });
  });
  afterEach(async () => {
    await app.close();
    await cells.close();
  });
  const post = (payload: object) => app.inject({ method: 'POST', url: '/compute/v1/servers', headers: H, payload });

  it('refuses a request naming the bad field', async () => {
    const missing = await post({ resource_class: 'baremetal', image: { kernel: 'http://x/k', kernel_checksum: SUM, ramdisk: 'http://x/r' } });
    expect(missing.statusCode).toBe(400);
    expect(fault(missing.body)).toMatch(/image.*ramdisk_checksum/);
    const badUrl = await post({ resource_class: 'baremetal', image: { ...image, kernel: 'ftp://x/k' } });
    expect(badUrl.statusCode).toBe(400);
    expect(fault(badUrl.body)).toMatch(/image\/kernel must match pattern/);
    const noClass = await post({ image });
    expect(fault(noClass.body)).toMatch(/resource_class/);
    expect((await app.inject({ method: 'GET', url: '/compute/v1/servers/not-a-uuid' })).statusCode).toBe(400);
  });

  it('answers 409 with the reason when no node fits, and 404 for an unknown server', async () => {
    const none = await post({ resource_class: 'baremetal', image });
    expect(none.statusCode).toBe(409);
    expect(fault(none.body)).toBe('no valid host: no available node of resource class "baremetal" (provision state available, not in maintenance, no instance)');
    const unknown = await app.inject({ method: 'GET', url: '/compute/v1/servers/6f1c3a52-7c1c-4ad5-9d55-1a3f6f2a8e11' });
    expect(unknown.statusCode).toBe(404);
    expect((await app.inject({ method: 'GET', url: '/compute/v1/servers' })).json()).toEqual({ servers: [] });
  });

  it('schedules onto a node through the bare-metal API of the same process, and deletes a server never placed at once', async () => {
    const uuid = '0b9f7a4e-8d0e-4c55-9a43-3b0b5b1c2d3e';
    await db.store.db.insertInto('nodes').values({ uuid, driver: 'fake-hardware', provision_state: 'available', resource_class: 'baremetal' }).execute();
    await registerService(db.store, { host: 'c1', binary: COMPUTE_BINARY }, 60);
    await db.store.db.insertInto('compute_nodes').values({ uuid, host: 'c1', hypervisor_hostname: uuid, resource_class: 'baremetal' }).execute();
    const unmapped = await post({ resource_class: 'baremetal', image });
    expect(fault(unmapped.body)).toMatch(/host c1 is not mapped to any cell/);
    const cell = await db.store.db.selectFrom('cell_mappings').select('id').where('name', '=', 'cell1').executeTakeFirstOrThrow();
    await db.store.db.insertInto('host_mappings').values({ host: 'c1', cell_id: cell.id }).execute();
    const created = await post({ name: 'web-1', resource_class: 'baremetal', image });
    expect(created.statusCode).toBe(202);
    expect(created.json()).toMatchObject({ name: 'web-1', status: 'BUILD', host: 'c1', node: uuid, cell: 'cell1', fault: null });
    expect(created.headers.location).toBe(`/compute/v1/servers/${created.json().id}`);
    const listed = (await app.inject({ method: 'GET', url: '/compute/v1/services' })).json().services;
    expect(listed).toEqual([expect.objectContaining({ host: 'c1', cell: 'cell1', state: 'up', host_mapped: true, nodes: 1 })]);
    const deleting = await app.inject({ method: 'DELETE', url: `/compute/v1/servers/${created.json().id}` });
    expect(deleting.statusCode).toBe(202);
    expect(deleting.json()).toMatchObject({ status: 'DELETING' });
  });
});

describe('the compute API\'s server list', () => {
  const db = useMigratedDatabase('sqlite');
  let app: FastifyInstance;
  let cells: CellStores;
  /** Server uuids, oldest first: cell0 (a failed build) and cell1 share the API database. */
  const ids = Array.from({ length: 7 }, (_, i) => `00000000-0000-4000-8000-${String(900 - i).padStart(12, '0')}`);
  beforeEach(async () => {
    cells = new CellStores();
    cells.share(db.url, db.store);
    const cell0 = await mapCell0(db.store, cells, db.url);
    const cell1 = await createCell(db.store, cells, { name: 'cell1', databaseConnection: db.url });
    const config = loadConfig({ env: { IRONRING_API_MAX_LIMIT: '3', IRONRING_API_PUBLIC_ENDPOINT: 'https://compute.example' } }).config;
    app = buildApi({ store: db.store, config, logger, compute: { api: db.store, cells } });
    for (const [i, uuid] of ids.entries()) {
      await db.store.db.insertInto('instances').values({ uuid, display_name: `srv-${i}`, vm_state: i === 0 ? 'error' : 'active', created_at: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString() }).execute();
      await db.store.db.insertInto('instance_mappings').values({ instance_uuid: uuid, cell_id: i === 0 ? cell0.id : cell1.id }).execute();
    }
  });
  afterEach(async () => {
    await app.close();
    await cells.close();
  });
  const list = async (query = '') => {
    const res = await app.inject({ method: 'GET', url: `/compute/v1/servers${query}` });
    return { status: res.statusCode, body: res.json() as { servers?: Array<{ id: string; cell: string }>; servers_links?: Array<{ rel: string; href: string }> }, raw: res.body };
  };

  it('pages by limit and marker, oldest first across the cells, with a next link while more follow', async () => {
    const first = await list('?limit=2');
    expect(first.status).toBe(200);
    expect(first.body.servers!.map((s) => [s.id, s.cell])).toEqual([[ids[0], 'cell0'], [ids[1], 'cell1']]);
    expect(first.body.servers_links).toEqual([{ rel: 'next', href: `https://compute.example/compute/v1/servers?limit=2&marker=${ids[1]}` }]);
    const second = await list(`?limit=2&marker=${ids[1]!.toUpperCase()}`);
    expect(second.body.servers!.map((s) => s.id)).toEqual([ids[2], ids[3]]);
    const last = await list(`?limit=2&marker=${ids[4]}`);
    expect(last.body).toEqual({ servers: [expect.objectContaining({ id: ids[5] }), expect.objectContaining({ id: ids[6], name: 'srv-6', status: 'ACTIVE' })] });
  });

  it('answers a page of [api] max_limit without a limit (or with a larger one, or 0), and follows it to the end', async () => {
    for (const query of ['', '?limit=0', '?limit=50']) {
      const page = await list(query);
      expect(page.body.servers!.map((s) => s.id), query).toEqual(ids.slice(0, 3));
      expect(page.body.servers_links, query).toEqual([{ rel: 'next', href: `https://compute.example/compute/v1/servers?limit=3&marker=${ids[2]}` }]);
    }
    const seen: string[] = [];
    for (let href: string | undefined = '/compute/v1/servers'; href !== undefined; ) {
      const res = await app.inject({ method: 'GET', url: href.replace('https://compute.example', '') });
      const body = res.json() as { servers: Array<{ id: string }>; servers_links?: Array<{ href: string }> };
      seen.push(...body.servers.map((s) => s.id));
      href = body.servers_links?.[0]?.href;
      expect(seen.length).toBeLessThanOrEqual(ids.length);
    }
    expect(seen).toEqual(ids);
  });

  it('answers 400 naming limit for a bad limit, and "marker [<id>] not found" for a marker that is no server', async () => {
    for (const query of ['?limit=x', '?limit=-1', '?limit=1.5']) {
      const res = await list(query);
      expect(res.status, query).toBe(400);
      expect(fault(res.raw), query).toMatch(/^limit: /);
    }
    const unknown = '6f1c3a52-7c1c-4ad5-9d55-1a3f6f2a8e11';
    for (const marker of [unknown, 'not-a-server']) {
      const res = await list(`?marker=${marker}`);
      expect(res.status, marker).toBe(400);
      expect(fault(res.raw)).toBe(`marker [${marker}] not found`);
    }
  });

  it('gives `ironring server list` every server, page after page', async () => {
    const url = await app.listen({ host: '127.0.0.1', port: 0 });
    const res = await runMain(['server', 'list', '--url', url, '--format', 'json']);
    expect(res.code, res.stderr).toBe(0);
    expect((JSON.parse(res.stdout) as Array<{ id: string }>).map((s) => s.id)).toEqual(ids);
  });
});

describe('the compute commands', () => {
  it('explain themselves', () => {
    const help = (args: string[]) => {
      const res = runCli(args);
      expect(res.code).toBe(0);
      return { stdout: res.stdout.replace(/\s+/g, ' ') };
    };
    const server = help(['server', '--help']);
    expect(server.stdout).toMatch(/scheduler picks a free available node/);
    for (const cmd of ['create', 'list', 'show', 'delete']) expect(server.stdout).toContain(cmd);
    const create = help(['server', 'create', '--help']);
    expect(create.stdout).toMatch(/--image-kernel-checksum/);
    expect(create.stdout).toMatch(/not mapped to any cell/);
    const compute = help(['compute', '--help']);
    expect(compute.stdout).toMatch(/hash ring over the live compute services/);
    expect(help(['scheduler', '--help']).stdout).toMatch(/lowest service id/);
  });

  it('refuses a server create without its image flags', () => {
    const res = runCli(['server', 'create', '--resource-class', 'x']);
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/required option '--image-kernel <url>' not specified/);
  });
});
