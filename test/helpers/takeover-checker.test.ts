/**
 * The take-over invariant checker judges for itself (issue #21): here ironring's own ring and
 * membership code are replaced by wrong ones, and the checker must still find a correct cluster
 * correct and a broken one broken — liveness by the database clock, owners by its own ring, and
 * leftover per-MAC links of every boot loader.
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { openDatabase } from '../../src/db/connect.js';
import type { Store } from '../../src/db/connect.js';
import { migrateDatabase } from '../../src/db/migrate.js';
import type * as Ring from '../../src/ring/index.js';
import type * as Membership from '../../src/cluster/membership.js';
import { createTestDatabase, testEngines } from './databases.js';
import type { TestDatabase } from './databases.js';
import { checkInvariants, seedDeployedNodes, writeTestImages } from './takeover.js';
import type { ConductorDisk, SeededNode } from './takeover.js';

// A product ring that names the wrong owner, and a membership that calls every conductor live: a
// checker built on them would agree with a product that shares the bug.
vi.mock('../../src/ring/index.js', async (importOriginal) => {
  const real = await importOriginal<typeof Ring>();
  class WrongRing extends real.HashRing {
    override lookup(key: string, options?: Ring.LookupOptions): string[] {
      const right = super.lookup(key, { ...options, replicas: this.size });
      return [...right.slice(1), right[0]!].slice(0, options?.replicas ?? 1);
    }
  }
  return { ...real, HashRing: WrongRing };
});
vi.mock('../../src/cluster/membership.js', async (importOriginal) => {
  const real = await importOriginal<typeof Membership>();
  return {
    ...real,
    listConductors: async (...args: Parameters<typeof real.listConductors>) => (await real.listConductors(...args)).map((c) => ({ ...c, alive: true })),
  };
});

const engines = await testEngines();

describe.each(engines)('the take-over checker on %s', (engine) => {
  let target: TestDatabase;
  let store: Store;
  let work: string;
  let nodes: SeededNode[];
  const ids = new Map<string, number>();
  const owners = new Map<string, string>();
  const disks: ConductorDisk[] = [];

  beforeAll(async () => {
    target = await createTestDatabase(engine);
    store = await openDatabase(target.url);
    await migrateDatabase(store);
    work = mkdtempSync(path.join(tmpdir(), 'ironring-checker-'));
    const images = writeTestImages(path.join(work, 'images'));
    // c1–c3 live; c4 stopped; c5 "online" but silent for an hour by the database clock.
    const hour = new Date(Date.now() - 3600_000);
    for (const [hostname, online, fresh] of [['c1', true, true], ['c2', true, true], ['c3', true, true], ['c4', false, true], ['c5', true, false]] as const) {
      const row = await store.db
        .insertInto('conductors')
        .values({ hostname, conductor_group: '', online, drivers: '[]', weight: 1, created_at: hour, updated_at: fresh ? store.sqlNow() : hour })
        .returning('id')
        .executeTakeFirstOrThrow();
      ids.set(hostname, row.id);
      disks.push({ hostname, dataDir: path.join(work, hostname) });
    }
    nodes = await seedDeployedNodes(store, 40, images);
    // The true owners, by the real ring over the live three, and their files laid out as a conductor does.
    const real = await vi.importActual<typeof Ring>('../../src/ring/index.js');
    const ring = new real.HashRing(['c1', 'c2', 'c3'], { mode: 'balanced' });
    for (const n of nodes) {
      const owner = ring.lookup(n.uuid)[0]!;
      owners.set(n.uuid, owner);
      await store.db.updateTable('nodes').set({ conductor_affinity: ids.get(owner)! }).where('uuid', '=', n.uuid).execute();
      const root = path.join(work, owner, 'tftpboot');
      mkdirSync(path.join(root, n.uuid), { recursive: true });
      mkdirSync(path.join(root, 'pxelinux.cfg'), { recursive: true });
      writeFileSync(path.join(root, n.uuid, 'config'), `kernel ${n.uuid}/kernel\ninitrd ${n.uuid}/ramdisk\n`);
      writeFileSync(path.join(root, n.uuid, 'kernel'), 'k');
      writeFileSync(path.join(root, n.uuid, 'ramdisk'), 'r');
      symlinkSync(`../${n.uuid}/config`, path.join(root, 'pxelinux.cfg', `01-${n.mac.replaceAll(':', '-')}`));
    }
  });
  afterAll(async () => {
    await store?.close();
    await target?.drop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  const check = () => checkInvariants(store, disks, { heartbeatTimeout: 30, replicas: 2, ring: { mode: 'balanced' } });

  it('finds a correct cluster correct: live by the database clock, owners by its own ring', async () => {
    const report = await check();
    expect(report.live).toEqual(['c1', 'c2', 'c3']);
    expect(report.violations).toEqual([]);
    expect(report.nodes).toBe(40);
    expect(report.current).toBe(40);
  });

  it('reports a node whose affinity names a conductor that is online but silent', async () => {
    const victim = nodes[0]!;
    await store.db.updateTable('nodes').set({ conductor_affinity: ids.get('c5')! }).where('uuid', '=', victim.uuid).execute();
    try {
      const report = await check();
      expect(report.violations).toEqual([`${victim.uuid}: conductor_affinity ${ids.get('c5')} is not its owner ${owners.get(victim.uuid)} (#${ids.get(owners.get(victim.uuid)!)})`]);
    } finally {
      await store.db.updateTable('nodes').set({ conductor_affinity: ids.get(owners.get(victim.uuid)!)! }).where('uuid', '=', victim.uuid).execute();
    }
  });

  it('reports per-MAC links of every boot loader left on a conductor that does not own the node, and links for unknown MACs', async () => {
    const victim = nodes[1]!;
    const other = ['c1', 'c2', 'c3'].find((h) => h !== owners.get(victim.uuid))!;
    const tftp = path.join(work, other, 'tftpboot');
    const http = path.join(work, other, 'httpboot');
    mkdirSync(path.join(tftp, 'pxelinux.cfg'), { recursive: true });
    mkdirSync(path.join(http, 'pxelinux.cfg'), { recursive: true });
    const hyphen = victim.mac.replaceAll(':', '-');
    const planted = [
      path.join(tftp, 'pxelinux.cfg', `01-${hyphen}`),
      path.join(tftp, `grub.cfg-01-${hyphen}`),
      path.join(tftp, `${victim.mac}.conf`),
      path.join(http, 'pxelinux.cfg', hyphen),
      path.join(tftp, 'pxelinux.cfg', '01-02-00-00-00-00-01'),
    ];
    // Dangling, as a half-finished clean-up leaves them: the node directory is already gone.
    for (const file of planted) symlinkSync(`../${victim.uuid}/config`, file);
    try {
      const report = await check();
      expect([...report.violations].sort()).toEqual(
        [
          `${victim.uuid}: ${other} still has per-MAC link tftpboot/pxelinux.cfg/01-${hyphen} but the owner is ${owners.get(victim.uuid)}`,
          `${victim.uuid}: ${other} still has per-MAC link tftpboot/grub.cfg-01-${hyphen} but the owner is ${owners.get(victim.uuid)}`,
          `${victim.uuid}: ${other} still has per-MAC link tftpboot/${victim.mac}.conf but the owner is ${owners.get(victim.uuid)}`,
          `${victim.uuid}: ${other} still has per-MAC link httpboot/pxelinux.cfg/${hyphen} but the owner is ${owners.get(victim.uuid)}`,
          `${other} still has per-MAC link tftpboot/pxelinux.cfg/01-02-00-00-00-00-01, but no node that boots from the network has MAC 02:00:00:00:00:01`,
        ].sort(),
      );
    } finally {
      for (const file of planted) rmSync(file, { force: true });
    }
    expect((await check()).violations).toEqual([]);
  });
});
