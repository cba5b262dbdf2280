/**
 * dnsmasq files mode across a hand-off (issue #16 item 2), with real in-process conductors on one
 * SQLite database, each with its own boot environment and TFTP address (10.77.0.1, 10.77.0.2):
 *
 * - one dnsmasq over **shared** directories: after a ring change and after a graceful stop, every
 *   node's MAC has exactly one live host line, and its tag's options name the owner's TFTP server
 *   (the old owner's clean-up erased the new owner's entries before);
 * - a dnsmasq **per conductor**: a stopping conductor retires its lines (`mac,ignore`) only after
 *   the survivor wrote its own (file times), and not one is left live (they stayed before);
 * - a **dead** conductor's entries in the shared directories are retired by the survivor that takes
 *   its nodes over.
 *
 * What is live is judged from the files alone, by the checker's own parsing (any file name), the
 * way dnsmasq reads them: a host line `mac,set:<tag>…` without `ignore`, options `tag:<tag>,…`.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { renderDhcpEntries, writeDhcpEntries } from '../../src/boot/dhcp.js';
import { createLogger } from '../../src/common/logger.js';
import { loadConfig } from '../../src/config/load.js';
import { Conductor } from '../../src/conductor/conductor.js';
import { openDatabase } from '../../src/db/connect.js';
import type { Store } from '../../src/db/connect.js';
import { migrateDatabase } from '../../src/db/migrate.js';
import { testConductorEnv, waitUntil } from '../helpers/conductors.js';
import { createTestDatabase } from '../helpers/databases.js';
import type { TestDatabase } from '../helpers/databases.js';
import { seedDeployedNodes, writeTestImages } from '../helpers/takeover.js';
import type { SeededNode, TestImages } from '../helpers/takeover.js';

const ADDRESS: Record<string, string> = { 'cond-a': '10.77.0.1', 'cond-b': '10.77.0.2' };
const NODES = 16;

interface Dirs {
  hosts: string;
  opts: string;
}

/** Live answers per MAC in a pair of dnsmasq directories: the TFTP server each live host line's tag names. */
async function liveAnswers(dirs: Dirs): Promise<Map<string, string[]>> {
  const list = async (dir: string) => (await readdir(dir).catch(() => [] as string[])).filter((n) => !n.startsWith('.'));
  const servers = new Map<string, string>();
  for (const name of await list(dirs.opts)) {
    for (const line of (await readFile(path.join(dirs.opts, name), 'utf8')).split('\n')) {
      const m = /^tag:([^,]+),option:tftp-server,(.+)$/.exec(line);
      if (m) servers.set(m[1]!, m[2]!);
    }
  }
  const answers = new Map<string, string[]>();
  for (const name of await list(dirs.hosts)) {
    for (const line of (await readFile(path.join(dirs.hosts, name), 'utf8')).split('\n')) {
      const [mac, ...rest] = line.split(',');
      if (!mac || rest.length === 0 || rest.includes('ignore')) continue;
      const tag = rest.find((r) => r.startsWith('set:ir-'))?.slice(4);
      const list_ = answers.get(mac) ?? [];
      list_.push(tag === undefined ? 'no tag' : (servers.get(tag) ?? `no options for ${tag}`));
      answers.set(mac, list_);
    }
  }
  return answers;
}

describe('dnsmasq files mode across hand-offs', () => {
  let target: TestDatabase;
  let store: Store;
  let work: string;
  let images: TestImages;
  const running: Conductor[] = [];

  beforeEach(async () => {
    target = await createTestDatabase('sqlite');
    store = await openDatabase(target.url);
    await migrateDatabase(store);
    work = mkdtempSync(path.join(tmpdir(), 'ironring-dhcp-hand-off-'));
    images = writeTestImages(path.join(work, 'images'));
  });
  afterEach(async () => {
    await Promise.all(running.splice(0).map((c) => c.stop()));
    await store.close();
    await target.drop();
    rmSync(work, { recursive: true, force: true });
  });

  const start = async (host: string, dirs: Dirs): Promise<Conductor> => {
    const config = loadConfig({
      env: testConductorEnv(path.join(work, host), {
        IRONRING_HOST: host,
        IRONRING_PXE_TFTP_SERVER: ADDRESS[host]!,
        IRONRING_DNSMASQ_DHCP_HOSTSDIR: dirs.hosts,
        IRONRING_DNSMASQ_DHCP_OPTSDIR: dirs.opts,
        IRONRING_CONDUCTOR_FILE_URL_ALLOWED_PATHS: path.join(work, 'images'),
        IRONRING_CONDUCTOR_HEARTBEAT_INTERVAL: '1',
        IRONRING_CONDUCTOR_HEARTBEAT_TIMEOUT: '6',
        IRONRING_CONDUCTOR_GRACEFUL_SHUTDOWN_TIMEOUT: '10',
        IRONRING_CONDUCTOR_SYNC_LOCAL_STATE_INTERVAL: '0',
      }),
    }).config;
    const conductor = new Conductor({ store, config, logger: createLogger({ level: 'silent', pretty: false }) });
    await conductor.start();
    running.push(conductor);
    return conductor;
  };

  const stop = async (conductor: Conductor) => {
    running.splice(running.indexOf(conductor), 1);
    await conductor.stop();
  };

  const dirsIn = (name: string): Dirs => {
    const dirs = { hosts: path.join(work, name, 'hosts'), opts: path.join(work, name, 'opts') };
    mkdirSync(dirs.hosts, { recursive: true });
    mkdirSync(dirs.opts, { recursive: true });
    return dirs;
  };

  /** Each node's owner by its affinity, once every node is taken over by one of `conductors`, unlocked. */
  const converged = async (nodes: readonly SeededNode[], conductors: readonly Conductor[]): Promise<Map<string, Conductor>> => {
    const byId = new Map(conductors.map((c) => [c.id, c]));
    let owners = new Map<string, Conductor>();
    await waitUntil(
      async () => {
        const rows = await store.db.selectFrom('nodes').select(['uuid', 'conductor_affinity', 'reservation']).execute();
        owners = new Map(rows.flatMap((r) => (r.reservation === null && r.conductor_affinity !== null && byId.has(r.conductor_affinity) ? [[r.uuid, byId.get(r.conductor_affinity)!]] : [])));
        return nodes.every((n) => owners.has(n.uuid));
      },
      30_000,
      'every node taken over',
    );
    return owners;
  };

  /** Waits until every node's MAC has exactly one live answer, naming its owner's TFTP server. */
  const expectOneAnswerEach = async (dirs: Dirs, nodes: readonly SeededNode[], owners: ReadonlyMap<string, Conductor>) => {
    const want = Object.fromEntries(nodes.map((n) => [n.mac, [ADDRESS[owners.get(n.uuid)!.hostname]!]]));
    let seen: Record<string, string[]> = {};
    await waitUntil(
      async () => {
        const answers = await liveAnswers(dirs);
        seen = Object.fromEntries(nodes.map((n) => [n.mac, answers.get(n.mac) ?? []]));
        return JSON.stringify(seen) === JSON.stringify(want);
      },
      10_000,
      'one live answer per MAC, from its owner',
    ).catch(() => undefined);
    expect(seen).toEqual(want);
  };

  it("shared directories: a ring change and a graceful stop leave the new owner's entries intact", async () => {
    const shared = dirsIn('shared');
    const a = await start('cond-a', shared);
    const nodes = await seedDeployedNodes(store, NODES, images, { first: 10 });
    await expectOneAnswerEach(shared, nodes, await converged(nodes, [a]));

    // cond-b joins: the nodes it now owns move; cond-a cleans up behind it (its node directories go).
    const b = await start('cond-b', shared);
    let owners = new Map<string, Conductor>();
    const movedDirs = () => nodes.filter((n) => owners.get(n.uuid) === b).map((n) => path.join(work, 'cond-a', 'tftpboot', n.uuid));
    await waitUntil(async () => {
      owners = await converged(nodes, [a, b]);
      const moved = movedDirs();
      return moved.length > 0 && (await Promise.all(moved.map((d) => stat(d).then(() => true, () => false)))).every((present) => !present);
    }, 30_000, "cond-b owning some nodes and cond-a's clean-up of them done");
    await expectOneAnswerEach(shared, nodes, owners);

    // cond-a stops: cond-b takes over the rest, and nothing of cond-a's clean-up undoes it.
    await stop(a);
    owners = await converged(nodes, [b]);
    await expectOneAnswerEach(shared, nodes, owners);
    expect((await readdir(shared.hosts)).filter((n) => n.startsWith('ironring-cond-a-'))).toEqual([]);
  }, 90_000);

  it('a dnsmasq per conductor: the stopping conductor retires its lines right after the survivor wrote its own', async () => {
    const dirsA = dirsIn('a');
    const dirsB = dirsIn('b');
    const a = await start('cond-a', dirsA);
    const nodes = await seedDeployedNodes(store, NODES, images, { first: 30 });
    await converged(nodes, [a]);
    await expectOneAnswerEach(dirsA, nodes, new Map(nodes.map((n) => [n.uuid, a])));
    const b = await start('cond-b', dirsB);
    await b.reconciler.nextPass();

    const stopped = Date.now();
    await stop(a);
    await converged(nodes, [b]);
    // Nothing of cond-a answers any more: each of its lines is `ignore` …
    expect(await liveAnswers(dirsA)).toEqual(new Map());
    let handedOffAtStop = 0;
    for (const node of nodes) {
      const mac = node.mac.replaceAll(':', '-');
      const retired = path.join(dirsA.hosts, `ironring-cond-a-${mac}.conf`);
      const written = path.join(dirsB.hosts, `ironring-cond-b-${mac}.conf`);
      expect(await readFile(retired, 'utf8')).toBe(`${node.mac},ignore\n`);
      // … and each was retired after cond-b's line for the MAC was written, never before.
      const [retiredAt, writtenAt] = [(await stat(retired)).mtimeMs, (await stat(written)).mtimeMs];
      if (writtenAt < stopped) continue; // cond-b took this node over when it joined, before the stop
      handedOffAtStop += 1;
      expect(retiredAt).toBeGreaterThanOrEqual(writtenAt);
    }
    expect(handedOffAtStop).toBeGreaterThan(0);
    expect([...(await liveAnswers(dirsB)).values()]).toEqual(nodes.map(() => [ADDRESS['cond-b']]));
  }, 90_000);

  it("shared directories: the survivor taking a dead conductor's nodes over retires its entries", async () => {
    const shared = dirsIn('shared');
    const nodes = await seedDeployedNodes(store, NODES, images, { first: 50 });
    // A conductor that died: its row's heartbeat is long past, its entries still in the directories.
    const ghost = await store.db
      .insertInto('conductors')
      .values({ hostname: 'ghost', online: true, conductor_group: '', updated_at: new Date(Date.now() - 3_600_000) })
      .returning('id')
      .executeTakeFirstOrThrow();
    await store.db.updateTable('nodes').set({ conductor_affinity: ghost.id }).execute();
    for (const node of nodes) {
      const options = { hostsDir: shared.hosts, optsDir: shared.opts, owner: 'ghost', tftpServer: '10.77.0.9' };
      await writeDhcpEntries(renderDhcpEntries({ uuid: node.uuid, bootMode: 'bios', bootInterface: 'pxe' }, [node.mac], options), options);
    }
    expect([...(await liveAnswers(shared)).values()].flat()).toEqual(nodes.map(() => '10.77.0.9'));

    const b = await start('cond-b', shared);
    await expectOneAnswerEach(shared, nodes, await converged(nodes, [b]));
    expect([...(await readdir(shared.hosts)), ...(await readdir(shared.opts))].filter((n) => n.includes('ghost'))).toEqual([]);
  }, 90_000);
});
