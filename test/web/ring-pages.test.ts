/**
 * The ring page through `app.inject` on both engines: each live conductor's share of the nodes as
 * the ring places them, dead and stopped conductors marked in words, the what-if panel's numbers
 * equal to `ironring ring plan`'s over the same nodes, hostile hostnames escaped everywhere, and a
 * bad query parameter answered with a 400 page that names it.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { markOffline, registerConductor } from '../../src/cluster/membership.js';
import { HashRing } from '../../src/ring/index.js';
import type { Store } from '../../src/db/connect.js';
import { runMain } from '../helpers/cli-in-process.js';
import { testEngines, useMigratedDatabase } from '../helpers/databases.js';
import { textOf, usePagesApp } from './pages-app.js';

const engines = await testEngines();

const HOSTILE = '<img src=x onerror=alert(1)>"\'&';

async function addNodes(store: Store, count: number, group = ''): Promise<string[]> {
  const rows = Array.from({ length: count }, (_, i) => ({ uuid: randomUUID(), name: `n-${group}-${i}`, driver: 'fake-hardware', provision_state: 'available', conductor_group: group }));
  await store.db.insertInto('nodes').values(rows).execute();
  return rows.map((r) => r.uuid);
}

async function addConductor(store: Store, hostname: string, group = ''): Promise<number> {
  return registerConductor(store, { hostname, group, drivers: ['fake-hardware'] }, 60);
}

describe.each(engines)('ring pages on %s', (engine) => {
  const db = useMigratedDatabase(engine);
  const pages = usePagesApp(db);

  it('shows each live conductor with the nodes the ring gives it, and a stopped one as stopped', async () => {
    const uuids = await addNodes(db.store, 300);
    await addConductor(db.store, 'c1');
    await addConductor(db.store, 'c2');
    const c3 = await addConductor(db.store, 'c3');
    await markOffline(db.store, c3, 'c3');

    const res = await pages.get('/ui/ring');
    expect(res.status).toBe(200);
    expect(res.body).toMatch(/^<!doctype html>/);
    const ring = new HashRing(['c1', 'c2'], { mode: 'balanced' });
    const owned = { c1: 0, c2: 0 };
    for (const u of uuids) owned[ring.owner(u) as 'c1' | 'c2']++;
    expect(owned.c1 + owned.c2).toBe(300);
    const text = textOf(res.body);
    expect(text).toContain(`c1 alive ${owned.c1} ${((owned.c1 / 300) * 100).toFixed(1)} %`);
    expect(text).toContain(`c2 alive ${owned.c2} ${((owned.c2 / 300) * 100).toFixed(1)} %`);
    expect(text).toContain('c3 stopped 0');
    // The drawing: an image with a title and the numbers as text.
    expect(res.body).toMatch(/<svg class="ring-diagram"[^>]*role="img" aria-labelledby="ring-0-t ring-0-d"/);
    expect(res.body).toContain(`c1: ${owned.c1} nodes`);
    // The live part refetches itself on ring and node events.
    expect(res.body).toMatch(/hx-get="\/ui\/ring\/fragment" hx-trigger="[^"]*sse:ring[^"]*sse:nodes[^"]*"/);
  });

  it('serves the live part alone as a fragment', async () => {
    await addConductor(db.store, 'c1');
    const res = await pages.get('/ui/ring/fragment');
    expect(res.status).toBe(200);
    expect(res.body).toMatch(/^<section id="rings"/);
    expect(res.body).not.toContain('<html');
    expect(res.body).not.toContain('What if');
  });

  it('says which nodes have no live conductor', async () => {
    await addNodes(db.store, 5, 'rack9');
    await addConductor(db.store, 'c1');
    const text = textOf((await pages.get('/ui/ring')).body);
    expect(text).toContain('Group rack9: 0 live conductor(s), 5 node(s)');
    expect(text).toContain('5 node(s) of this group have no live conductor');
  });

  it('answers the what-if with the numbers of `ironring ring plan` over the same nodes', async () => {
    const uuids = await addNodes(db.store, 400);
    for (const h of ['c1', 'c2', 'c3']) await addConductor(db.store, h);
    const res = await pages.get('/ui/ring?group=&add=c4%2C+c5%3D2&remove=c2');
    expect(res.status).toBe(200);

    const dir = mkdtempSync(path.join(tmpdir(), 'ironring-whatif-'));
    try {
      writeFileSync(path.join(dir, 'keys'), uuids.join('\n'));
      const cli = await runMain(['ring', 'plan', '--hosts', 'c1,c2,c3', '--add', 'c4,c5=2', '--remove', 'c2', '--keys', path.join(dir, 'keys'), '--replicas', '2', '--format', 'json']);
      expect(cli.code).toBe(0);
      const plan = JSON.parse(cli.stdout) as { change: { moved: number; replicaSetsChanged: number; flows: { from: string; to: string; nodes: number }[] }; hosts: { name: string; nodes: number; nodesAfter: number }[] };
      expect(plan.change.moved).toBeGreaterThan(0);
      const text = textOf(res.body);
      expect(text).toContain(`${plan.change.moved} of 400 nodes would change owner`);
      expect(text).toContain(`${plan.change.replicaSetsChanged} nodes would get a different set of 2 conductors`);
      for (const h of plan.hosts) expect(text).toContain(`${h.name} ${h.nodes} ${h.nodesAfter}`);
      for (const f of plan.change.flows) expect(text).toContain(`${f.from} ${f.to} ${f.nodes}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    // The form keeps the question, so the answer's URL can be shared.
    expect(res.body).toContain('value="c4, c5=2"');
    expect(res.body).toMatch(/name="remove" value="c2" id="rm-\d"\s*checked/);
  });

  it('lists the nodes that would move, linked to their pages', async () => {
    const uuids = await addNodes(db.store, 20);
    await addConductor(db.store, 'c1');
    await addConductor(db.store, 'c2');
    const res = await pages.get('/ui/ring?remove=c2');
    const ring = new HashRing(['c1', 'c2'], { mode: 'balanced' });
    const moving = uuids.filter((u) => ring.owner(u) === 'c2');
    expect(textOf(res.body)).toContain(`${moving.length} of 20 nodes would change owner`);
    for (const u of moving) expect(res.body).toContain(`<a href="/ui/nodes/${u}">`);
    for (const u of uuids.filter((x) => !moving.includes(x))) expect(res.body).not.toContain(`/ui/nodes/${u}`);
  });

  it('escapes a hostile conductor hostname on every page', async () => {
    await addNodes(db.store, 3);
    await addConductor(db.store, HOSTILE);
    for (const url of ['/ui/ring', '/ui/ring/fragment', '/ui/conductors', `/ui/ring?remove=${encodeURIComponent(HOSTILE)}&add=c2`]) {
      const res = await pages.get(url);
      expect(res.status, url).toBe(200);
      expect(res.body, url).not.toContain('<img src=x');
      expect(res.body, url).toContain('&lt;img src=x onerror=alert(1)&gt;&quot;&#39;&amp;');
    }
  });

  it.each([
    ['/ui/ring?add=bad%20name!', 'add'],
    ['/ui/ring?add=%3Cscript%3E', 'add'],
    ['/ui/ring?remove=nosuch', 'remove'],
    ['/ui/ring?remove=c1', 'remove'],
    ['/ui/ring?group=nosuch', 'group'],
    ['/ui/ring?group=&group=x', 'group'],
    [`/ui/ring?add=${Array.from({ length: 51 }, (_, i) => `h${i}`).join(',')}`, 'add'],
    [`/ui/ring?add=${'a'.repeat(2001)}`, 'add'],
  ])('answers %s with a 400 page naming %s', async (url, parameter) => {
    await addConductor(db.store, 'c1');
    const res = await pages.get(url);
    expect(res.status).toBe(400);
    expect(res.body).toContain(`Bad query parameter <code>${parameter}</code>`);
    expect(res.body).not.toContain('<script>');
  });
});
