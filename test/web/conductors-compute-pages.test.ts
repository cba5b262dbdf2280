/**
 * The conductors and compute pages through `app.inject` on both engines. Conductors: heartbeat age
 * and state by the database clock, the boot endpoints of the conductor rows, the counters read from
 * each live conductor's own `/metrics` and `/v1/reconcile` (here a stand-in HTTP server), "not
 * reported" for what nobody publishes, and a conductor that does not answer said so. Compute: cells
 * without their database URLs, services up and down with their mapping and nodes, servers paged.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo, Server } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CellStores } from '../../src/cells/cell-stores.js';
import type { ComputeStores } from '../../src/cells/compute-stores.js';
import { registerConductor } from '../../src/cluster/membership.js';
import { metricValue, parseStats } from '../../src/web/pages/conductor-stats.js';
import { testEngines, useMigratedDatabase } from '../helpers/databases.js';
import { textOf, usePagesApp } from './pages-app.js';

const engines = await testEngines();

const METRICS = `# HELP ironring_tftp_transfers_started_total x
# TYPE ironring_tftp_transfers_started_total counter
ironring_tftp_transfers_started_total{conductor="c1",conductor_group=""} 17
ironring_tftp_transfers_total{outcome="completed",conductor="c1",conductor_group=""} 15
ironring_tftp_transfers_total{outcome="failed",conductor="c1",conductor_group=""} 2
ironring_tftp_requests_refused_total{conductor="c1",conductor_group=""} 3
ironring_tftp_transfers_active{conductor="c1",conductor_group=""} 0
# HELP ironring_http_boot_requests_total x
# TYPE ironring_http_boot_requests_total counter
ironring_http_boot_requests_total{outcome="served",conductor="c1",conductor_group=""} 21
ironring_http_boot_requests_total{outcome="not_modified",conductor="c1",conductor_group=""} 0
ironring_http_boot_requests_total{outcome="not_found",conductor="c1",conductor_group=""} 5
ironring_http_boot_requests_total{outcome="refused",conductor="c1",conductor_group=""} 6
ironring_http_boot_requests_total{outcome="failed",conductor="c1",conductor_group=""} 1
ironring_http_boot_sent_bytes_total{conductor="c1",conductor_group=""} 12582912
ironring_proxydhcp_answers_total{kind="offer",conductor="c1",conductor_group=""} 11
ironring_proxydhcp_answers_total{kind="ack",conductor="c1",conductor_group=""} 10
ironring_proxydhcp_ignored_total{conductor="c1",conductor_group=""} 4
ironring_conductor_reconcile_pass_seconds_sum{trigger="start",conductor="c1",conductor_group=""} 0.5
ironring_conductor_reconcile_pass_seconds_sum{trigger="ring",conductor="c1",conductor_group=""} 0.3
ironring_conductor_reconcile_pass_seconds_count{trigger="start",conductor="c1",conductor_group=""} 1
ironring_conductor_reconcile_pass_seconds_count{trigger="ring",conductor="c1",conductor_group=""} 3
ironring_conductor_takeovers_total{conductor="c1",conductor_group=""} 42
`;

describe('metricValue', () => {
  it('sums the series of a name that carry the labels asked for, and says null for a name not published', () => {
    expect(metricValue(METRICS, 'ironring_conductor_reconcile_pass_seconds_count')).toBe(4);
    expect(metricValue(METRICS, 'ironring_tftp_transfers_total', { outcome: 'failed' })).toBe(2);
    expect(metricValue(METRICS, 'ironring_tftp_transfers')).toBeNull();
    expect(metricValue(METRICS, 'ironring_http_requests_total')).toBeNull();
  });

  it('reads the HTTP boot outcomes and bytes, and null for each where a conductor publishes none', () => {
    expect(parseStats(METRICS, null).httpBoot).toEqual({ served: 21, notModified: 0, notFound: 5, refused: 6, failed: 1, bytesSent: 12582912 });
    const withoutHttp = METRICS.split('\n').filter((l) => !l.includes('ironring_http_boot_')).join('\n');
    expect(parseStats(withoutHttp, null).httpBoot).toEqual({ served: null, notModified: null, notFound: null, refused: null, failed: null, bytesSent: null });
  });
});

describe.each(engines)('conductors and compute pages on %s', (engine) => {
  const db = useMigratedDatabase(engine);
  let server: Server;
  let rpcUrl = '';
  const asked: string[] = [];

  beforeEach(async () => {
    asked.length = 0;
    server = createServer((req, res) => {
      asked.push(req.url ?? '');
      if (req.url === '/metrics') res.end(METRICS);
      else if (req.url === '/v1/reconcile') res.end(JSON.stringify({ trigger: 'ring change to version 4', durationMs: 37.2, takenOver: 9, pending: 1, backingOff: 0 }));
      else res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    rpcUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterEach(() => new Promise<void>((resolve) => server.close(() => resolve())));

  describe('conductors', () => {
    const pages = usePagesApp(db);

    it('shows heartbeat, endpoints and the counters each conductor publishes, and "not reported" for the rest', async () => {
      await registerConductor(db.store, { hostname: 'c1', group: 'rack1', drivers: [], rpcUrl, tftpAddress: '10.0.0.5:69', httpUrl: 'http://10.0.0.5:8080', proxyDhcpAddress: '10.0.0.5:67+4011' }, 60);
      // Nothing listens on port 9 of 127.0.0.1: a conductor that does not answer.
      await registerConductor(db.store, { hostname: 'c2', group: 'rack1', drivers: [], rpcUrl: 'http://127.0.0.1:9' }, 60);
      await registerConductor(db.store, { hostname: 'c3', group: '', drivers: [] }, 60);
      await db.store.db.updateTable('conductors').set({ updated_at: new Date(Date.now() - 3_600_000).toISOString() }).where('hostname', '=', 'c3').execute();

      const res = await pages.get('/ui/conductors');
      expect(res.status).toBe(200);
      const text = textOf(res.body);
      expect(text).toContain('3 conductor(s), 2 alive');
      expect(text).toMatch(/c1 rack1 alive \d+(\.\d)? s http:\/\/127\.0\.0\.1:\d+ 10\.0\.0\.5:69 http:\/\/10\.0\.0\.5:8080 10\.0\.0\.5:67\+4011/);
      expect(text).toMatch(/c3 \(default\) dead \(heartbeat expired\) (59 min|1 h( 0 min)?) not reported not reported not reported not reported Counters/);
      expect(text).toContain('c1 17 / 15 / 2 / 3 / 0 21 / 0 / 5 / 6 / 1 (12582912 bytes, 12.0 MiB) 11 / 10 / 4 4 (200 ms) 37 ms (ring change to version 4; 9 taken over, 1 pending) 42');
      expect(text).toMatch(/c2 not reported: the conductor did not answer \(.+\)/);
      expect(asked.sort()).toEqual(['/metrics', '/v1/reconcile']);
      expect(res.body).toMatch(/hx-get="\/ui\/conductors\/fragment" hx-trigger="[^"]*sse:conductors[^"]*sse:ring[^"]*"/);
    });

    it('reuses counters read a moment ago when the fragment is refetched', async () => {
      await registerConductor(db.store, { hostname: 'c1', group: '', drivers: [], rpcUrl }, 60);
      await pages.get('/ui/conductors');
      const res = await pages.get('/ui/conductors/fragment');
      expect(res.body).toMatch(/^<section id="conductors"/);
      expect(asked).toHaveLength(2);
    });
  });

  describe('compute without stores', () => {
    const pages = usePagesApp(db);

    it('says so where this API serves no compute tier', async () => {
      const res = await pages.get('/ui/compute');
      expect(res.status).toBe(200);
      expect(textOf(res.body)).toContain('Compute tier not served here');
    });
  });

  describe('compute with a cell', () => {
    let compute: ComputeStores;
    /** The servers' uuids in creation order (srv-0 first). */
    let ids: string[] = [];
    beforeEach(async () => {
      // A cell URL with a password (PostgreSQL), which the page must never show.
      const connection = engine === 'postgres' ? db.url.replace(/^postgres:\/\/[^@]*@/, 'postgres://u:s3cret@') : db.url;
      const cells = new CellStores();
      cells.share(connection, db.store);
      compute = { api: db.store, cells };
      const cell = await db.store.db.insertInto('cell_mappings').values({ uuid: randomUUID(), name: 'cell1', database_connection: connection }).returning('id').executeTakeFirstOrThrow();
      await db.store.db.insertInto('services').values([
        { uuid: randomUUID(), host: 'cmp-up', binary: 'ironring-compute', last_seen_up: db.store.sqlNow() },
        { uuid: randomUUID(), host: 'cmp-<down>', binary: 'ironring-compute', last_seen_up: new Date(Date.now() - 3_600_000).toISOString() },
      ]).execute();
      await db.store.db.insertInto('host_mappings').values({ cell_id: cell.id, host: 'cmp-up' }).execute();
      await db.store.db.insertInto('compute_nodes').values(Array.from({ length: 3 }, () => { const uuid = randomUUID(); return { uuid, host: 'cmp-up', hypervisor_hostname: uuid }; })).execute();
      const servers = Array.from({ length: 60 }, (_, i) => ({ uuid: randomUUID(), display_name: i === 59 ? '<script>x</script>' : `srv-${i}`, vm_state: 'active', host: 'cmp-up', created_at: new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString() }));
      ids = servers.map((srv) => srv.uuid);
      await db.store.db.insertInto('instances').values(servers).execute();
      await db.store.db.insertInto('instance_mappings').values(servers.map((s) => ({ instance_uuid: s.uuid, cell_id: cell.id }))).execute();
    });
    const pages = usePagesApp(db, {}, () => compute);

    it('shows cells without their database URL, services up and down, mapped or not, with their nodes', async () => {
      const res = await pages.get('/ui/compute');
      expect(res.status).toBe(200);
      const text = textOf(res.body);
      expect(text).toContain('1 cell(s), 2 compute service(s), 60 server(s)');
      expect(text).toMatch(/cell1 [0-9a-f-]{36} enabled 2 \(1 up\) 3/);
      expect(text).toContain('cmp-up ironring-compute cell1 up enabled yes 3');
      expect(text).toContain('cmp-&lt;down&gt; ironring-compute cell1 down enabled not mapped 0');
      expect(res.body).not.toContain('s3cret');
      expect(res.body).not.toContain(db.url);
    });

    it('pages the servers, 50 a page, after a bookmarkable marker, with the total in the heading', async () => {
      const first = await pages.get('/ui/compute');
      expect(first.status).toBe(200);
      expect(first.body).toContain('srv-0<');
      expect(first.body).toContain('srv-49<');
      expect(first.body).not.toContain('srv-50<');
      expect(textOf(first.body)).toContain('50 of 60 server(s) shown');
      expect(first.body).toContain(`<a href="/ui/compute?marker=${ids[49]}">Next →</a>`);
      expect(first.body).not.toContain('First page');
      expect(first.body).toContain('hx-get="/ui/compute/fragment" ');

      const second = await pages.get(`/ui/compute?marker=${ids[49]}`);
      expect(second.status).toBe(200);
      expect(textOf(second.body)).toContain('1 cell(s), 2 compute service(s), 60 server(s)');
      expect(second.body).toContain('srv-50<');
      expect(second.body).toContain('srv-58<');
      expect(second.body).not.toContain('srv-49<');
      expect(textOf(second.body)).toContain('10 of 60 server(s) shown');
      expect(second.body).toContain('&lt;script&gt;x&lt;/script&gt;');
      expect(second.body).not.toContain('<script>x');
      expect(second.body).toContain('<a href="/ui/compute">First page</a>');
      expect(second.body).not.toContain('Next →');
      expect(second.body).toContain(`hx-get="/ui/compute/fragment?marker=${ids[49]}"`);

      // The fragment of a later page is that page; a marker in upper case is the same server.
      const fragment = await pages.get(`/ui/compute/fragment?marker=${ids[54]!.toUpperCase()}`);
      expect(fragment.body).toMatch(/^<section id="compute"/);
      expect(fragment.body).toContain('srv-55<');
      expect(fragment.body).not.toContain('srv-54<');
    });

    it.each([
      ['/ui/compute?marker=not-a-uuid', 'not a server uuid'],
      ['/ui/compute?marker=6f1c3a52-7c1c-4ad5-9d55-1a3f6f2a8e11', 'no server has this uuid'],
      ['/ui/compute/fragment?marker=6f1c3a52-7c1c-4ad5-9d55-1a3f6f2a8e11', 'no server has this uuid'],
    ])('answers %s with a 400 naming marker', async (url, reason) => {
      const res = await pages.get(url);
      expect(res.status).toBe(400);
      expect(res.body).toContain('Bad query parameter <code>marker</code>');
      expect(res.body).toContain(reason);
    });
  });
});
