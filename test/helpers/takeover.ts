/**
 * Take-over scenarios (issue #7): deployed ramdisk nodes seeded straight into the database, and the
 * invariant checker every scenario and the take-over benchmark use (DESIGN §1 invariants 2, 3, 5).
 */
import { spawn } from 'node:child_process';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Store } from '../../src/db/connect.js';
import { BOOTS_INSTANCE, judgeRing, liveConductorsBySql, NEEDS_BOOT_FILES } from './take-over-judge.js';
import type { JudgeHost, JudgeRing, JudgeRingMode } from './take-over-judge.js';

export interface TestImage {
  url: string;
  checksum: string;
  /** Master file name in an image cache (`sha256-<hex>`). */
  master: string;
  size: number;
}

export interface TestImages {
  deployKernel: TestImage;
  deployRamdisk: TestImage;
  kernel: TestImage;
  ramdisk: TestImage;
  /** The user image (`instance_info.image_source`): must never be cached by anyone. */
  user: TestImage;
}

/** Writes five small images of distinct sizes under `dir` (file:// URLs with sha256 checksums). */
export function writeTestImages(dir: string): TestImages {
  mkdirSync(dir, { recursive: true });
  const make = (name: string, size: number): TestImage => {
    const data = randomBytes(size);
    const file = path.join(dir, name);
    writeFileSync(file, data);
    const hex = createHash('sha256').update(data).digest('hex');
    return { url: `file://${file}`, checksum: `sha256:${hex}`, master: `sha256-${hex}`, size };
  };
  return {
    deployKernel: make('deploy.kernel', 40_001),
    deployRamdisk: make('deploy.initramfs', 60_002),
    kernel: make('vmlinuz', 50_003),
    ramdisk: make('initrd.img', 70_004),
    user: make('user.qcow2', 90_005),
  };
}

/** A MAC address derived from a node index (unique up to 2**24 nodes). */
export function testMac(i: number): string {
  const b = [0x52, 0x54, 0x00, (i >> 16) & 0xff, (i >> 8) & 0xff, i & 0xff];
  return b.map((x) => x.toString(16).padStart(2, '0')).join(':');
}

export interface SeededNode {
  uuid: string;
  mac: string;
}

/**
 * Inserts `count` fake-hardware nodes as a ramdisk deploy leaves them — `active`, pxe boot, ramdisk
 * deploy, instance kernel/ramdisk and a user image in instance_info — each with one pxe-enabled port.
 */
export async function seedDeployedNodes(
  store: Store,
  count: number,
  images: TestImages,
  options: { first?: number; state?: string; group?: string; /** Column values for every row, in the same INSERT (a lock, a target…). */ columns?: Record<string, unknown> } = {},
): Promise<SeededNode[]> {
  const first = options.first ?? 0;
  const seeded: SeededNode[] = [];
  for (let start = 0; start < count; start += 500) {
    const rows = Array.from({ length: Math.min(500, count - start) }, (_, k) => {
      const i = first + start + k;
      return {
        uuid: randomUUID(),
        name: `node-${i}`,
        driver: 'fake-hardware',
        boot_interface: 'pxe',
        deploy_interface: 'ramdisk',
        provision_state: options.state ?? 'active',
        power_state: 'power on',
        conductor_group: options.group ?? '',
        instance_uuid: randomUUID(),
        driver_info: JSON.stringify({
          deploy_kernel: images.deployKernel.url,
          deploy_kernel_checksum: images.deployKernel.checksum,
          deploy_ramdisk: images.deployRamdisk.url,
          deploy_ramdisk_checksum: images.deployRamdisk.checksum,
        }),
        instance_info: JSON.stringify({
          kernel: images.kernel.url,
          kernel_checksum: images.kernel.checksum,
          ramdisk: images.ramdisk.url,
          ramdisk_checksum: images.ramdisk.checksum,
          image_source: images.user.url,
          image_checksum: images.user.checksum,
        }),
        ...options.columns,
        mac: testMac(i),
      };
    });
    const inserted = await store.db
      .insertInto('nodes')
      .values(rows.map(({ mac: _mac, ...r }) => r))
      .returning(['id', 'uuid'])
      .execute();
    const byUuid = new Map(inserted.map((r) => [r.uuid, r.id]));
    await store.db
      .insertInto('ports')
      .values(rows.map((r) => ({ uuid: randomUUID(), address: r.mac, node_id: byUuid.get(r.uuid)!, pxe_enabled: true })))
      .execute();
    seeded.push(...rows.map((r) => ({ uuid: r.uuid, mac: r.mac })));
  }
  return seeded;
}

/** A conductor's directories as the checker reads them. */
export interface ConductorDisk {
  hostname: string;
  dataDir: string;
}

export interface InvariantOptions {
  heartbeatTimeout: number;
  replicas: number;
  /** The placement the conductors were started with (default balanced), judged by take-over-judge.ts. */
  ring?: JudgeRingMode;
  /** The images the nodes were seeded with (for the replica-cache and user-image checks). */
  images?: TestImages;
}

export interface InvariantReport {
  /** Every violation, one line each; empty when all invariants hold. */
  violations: string[];
  /** Nodes that need boot state, and how many of them are fully current on their owner. */
  nodes: number;
  current: number;
  /** Live conductors by the database clock. */
  live: string[];
}

async function exists(p: string): Promise<boolean> {
  return (await stat(p).catch(() => null)) !== null;
}

/** Judge rings by mode and membership: a balanced one takes a moment to build, and the checker polls. */
const judgeRings = new Map<string, JudgeRing>();

function ringOf(hosts: readonly JudgeHost[], mode: JudgeRingMode): JudgeRing {
  const key = JSON.stringify([mode, [...hosts].sort((a, b) => (a.name < b.name ? -1 : 1))]);
  let ring = judgeRings.get(key);
  if (!ring) {
    if (judgeRings.size > 64) judgeRings.clear();
    judgeRings.set(key, (ring = judgeRing(hosts, mode)));
  }
  return ring;
}

/** A per-MAC link as found on a conductor's disk: where, and for which MAC (lower case, colons). */
interface FoundLink {
  file: string;
  mac: string;
}

const HEX_PAIRS = /^[0-9a-f]{2}(?:-[0-9a-f]{2}){5}$/;

/**
 * Every per-MAC link a conductor has, whatever boot loader it is for (src/boot/layout.ts spells
 * them out): PXELINUX `tftpboot/pxelinux.cfg/01-aa-…`, GRUB `tftpboot/grub.cfg-01-aa-…` and
 * `tftpboot/aa:…:ff.conf`, iPXE `httpboot/pxelinux.cfg/aa-…`.
 */
async function perMacLinks(dataDir: string): Promise<FoundLink[]> {
  const list = (dir: string) => readdir(dir).catch(() => [] as string[]);
  const found: FoundLink[] = [];
  const tftp = path.join(dataDir, 'tftpboot');
  const http = path.join(dataDir, 'httpboot');
  for (const name of await list(path.join(tftp, 'pxelinux.cfg'))) {
    if (name.startsWith('01-') && HEX_PAIRS.test(name.slice(3))) found.push({ file: `tftpboot/pxelinux.cfg/${name}`, mac: name.slice(3).replaceAll('-', ':') });
  }
  for (const name of await list(tftp)) {
    if (name.startsWith('grub.cfg-01-') && HEX_PAIRS.test(name.slice(12))) found.push({ file: `tftpboot/${name}`, mac: name.slice(12).replaceAll('-', ':') });
    const conf = /^([0-9a-f]{2}(?::[0-9a-f]{2}){5})\.conf$/.exec(name);
    if (conf) found.push({ file: `tftpboot/${name}`, mac: conf[1]! });
  }
  for (const name of await list(path.join(http, 'pxelinux.cfg'))) {
    if (HEX_PAIRS.test(name)) found.push({ file: `httpboot/pxelinux.cfg/${name}`, mac: name.replaceAll('-', ':') });
  }
  return found;
}

/**
 * The invariants after convergence, judged from the database (live conductors by the database
 * clock, nodes, ports, reservations) and every conductor's disk — with the checker's own SQL and
 * ring (take-over-judge.ts), never ironring's membership or ring code:
 * 1. each node that boots from the network has exactly one live owner, `conductor_affinity` = that
 *    owner, and current state there: config, per-MAC link resolving to it, kernel/ramdisk present;
 * 2. no other live conductor has files for it — neither its directory nor a per-MAC link of any
 *    boot loader for one of its MACs — except image-cache entries of its replicas, which hold its
 *    deploy and instance kernel/ramdisk; nobody ever caches the user image; and no live conductor
 *    keeps a per-MAC link for a MAC of no node that boots from the network;
 * 3. no reservation is held by a conductor that is not live.
 */
export async function checkInvariants(store: Store, disks: readonly ConductorDisk[], options: InvariantOptions): Promise<InvariantReport> {
  const violations: string[] = [];
  const live = await liveConductorsBySql(store, options.heartbeatTimeout);
  const idOf = new Map(live.map((c) => [c.hostname, c.id]));
  const groups = new Map<string, JudgeHost[]>();
  for (const c of live) groups.set(c.group, [...(groups.get(c.group) ?? []), { name: c.hostname, weight: c.weight }]);
  const mode = options.ring ?? { mode: 'balanced' };
  const rings = new Map<string, JudgeRing>();
  for (const [group, members] of groups) rings.set(group, ringOf(members, mode));
  const nodes = await store.db.selectFrom('nodes').select(['id', 'uuid', 'conductor_group', 'provision_state', 'conductor_affinity', 'reservation']).execute();
  const ports = await store.db.selectFrom('ports').select(['node_id', 'address']).where('pxe_enabled', '=', true).execute();
  const macs = new Map<number, string[]>();
  for (const p of ports) macs.set(p.node_id, [...(macs.get(p.node_id) ?? []), p.address.toLowerCase()]);
  const liveDisks = disks.filter((d) => idOf.has(d.hostname));
  const dirs = new Map<string, Set<string>>();
  const masters = new Map<string, Set<string>>();
  const links = new Map<string, FoundLink[]>();
  for (const d of liveDisks) {
    dirs.set(d.hostname, new Set(await readdir(path.join(d.dataDir, 'tftpboot')).catch(() => [])));
    masters.set(d.hostname, new Set(await readdir(path.join(d.dataDir, 'master_images')).catch(() => [])));
    links.set(d.hostname, await perMacLinks(d.dataDir));
  }
  let needing = 0;
  let current = 0;
  const liveNames = new Set(idOf.keys());
  /** Owner of each MAC of a node that boots from the network, for the per-MAC link check. */
  const macOwner = new Map<string, { uuid: string; owner: string }>();
  for (const node of nodes) {
    if (node.reservation !== null && !liveNames.has(node.reservation)) violations.push(`${node.uuid}: reservation held by ${node.reservation}, which is not live`);
    if (!NEEDS_BOOT_FILES.has(node.provision_state)) continue;
    needing += 1;
    const ring = rings.get(node.conductor_group);
    if (!ring) {
      violations.push(`${node.uuid}: no live conductor in group "${node.conductor_group}"`);
      continue;
    }
    const [owner, ...replicas] = ring.lookup(node.uuid, options.replicas);
    for (const mac of macs.get(node.id) ?? []) macOwner.set(mac, { uuid: node.uuid, owner: owner! });
    if (node.conductor_affinity !== idOf.get(owner!)) {
      violations.push(`${node.uuid}: conductor_affinity ${node.conductor_affinity} is not its owner ${owner} (#${idOf.get(owner!)})`);
    }
    const disk = liveDisks.find((d) => d.hostname === owner);
    if (disk) {
      const root = path.join(disk.dataDir, 'tftpboot');
      const config = await readFile(path.join(root, node.uuid, 'config'), 'utf8').catch(() => null);
      let ok = config !== null;
      if (config === null) violations.push(`${node.uuid}: no config on its owner ${owner}`);
      for (const mac of macs.get(node.id) ?? []) {
        const link = path.join(root, 'pxelinux.cfg', `01-${mac.replaceAll(':', '-')}`);
        const viaLink = await readFile(link, 'utf8').catch(() => null);
        if (viaLink === null || viaLink !== config) {
          ok = false;
          violations.push(`${node.uuid}: per-MAC link ${path.basename(link)} on ${owner} does not resolve to its config`);
        }
      }
      // What the node boots in its state: the instance, or the deploy ramdisk (whose ramdisk calls
      // back, cleans, inspects or rescues) — and, where the config names a default, that label.
      const instance = BOOTS_INSTANCE.has(node.provision_state);
      const label = config === null ? undefined : /^default (\S+)$/m.exec(config)?.[1];
      const wanted = instance ? 'boot_ramdisk' : 'deploy';
      if (label !== undefined && label !== wanted) {
        ok = false;
        violations.push(`${node.uuid}: config on ${owner} boots ${label} by default, not ${wanted} ("${node.provision_state}")`);
      }
      for (const file of instance ? ['kernel', 'ramdisk'] : ['deploy_kernel', 'deploy_ramdisk']) {
        if (!(await exists(path.join(root, node.uuid, file)))) {
          ok = false;
          violations.push(`${node.uuid}: ${file} missing on its owner ${owner}`);
        } else if (config !== null && !config.includes(`${node.uuid}/${file}`)) {
          ok = false;
          violations.push(`${node.uuid}: config on ${owner} does not boot ${file}`);
        }
      }
      if (ok) current += 1;
    }
    for (const d of liveDisks) {
      if (d.hostname === owner) continue;
      if (dirs.get(d.hostname)!.has(node.uuid)) violations.push(`${node.uuid}: ${d.hostname} still has boot files but the owner is ${owner}`);
    }
    if (options.images) {
      for (const replica of replicas) {
        const cache = masters.get(replica);
        if (!cache) continue;
        for (const role of ['deployKernel', 'deployRamdisk', 'kernel', 'ramdisk'] as const) {
          if (!cache.has(options.images[role].master)) violations.push(`${node.uuid}: replica ${replica} lacks the ${role} in its image cache`);
        }
      }
    }
  }
  // Leftover per-MAC links: a boot loader asking a non-owner for a MAC must find nothing there.
  for (const [host, found] of links) {
    for (const link of found) {
      const of = macOwner.get(link.mac);
      if (of === undefined) violations.push(`${host} still has per-MAC link ${link.file}, but no node that boots from the network has MAC ${link.mac}`);
      else if (of.owner !== host) violations.push(`${of.uuid}: ${host} still has per-MAC link ${link.file} but the owner is ${of.owner}`);
    }
  }
  if (options.images) {
    for (const [host, cache] of masters) if (cache.has(options.images.user.master)) violations.push(`${host} cached the user image`);
  }
  return { violations, nodes: needing, current, live: [...liveNames].sort() };
}

/** Fetches `file` from a TFTP server with curl; null when it is not served. */
export function tftpGet(address: string, file: string, timeoutMs = 3000): Promise<string | null> {
  return new Promise((resolve) => {
    const child = spawn('curl', ['-sS', '--max-time', String(Math.ceil(timeoutMs / 1000)), `tftp://${address}/${file}`], { stdio: ['ignore', 'pipe', 'ignore'] });
    const chunks: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => chunks.push(c));
    child.on('close', (code) => resolve(code === 0 ? Buffer.concat(chunks).toString('utf8') : null));
    child.on('error', () => resolve(null));
  });
}

/** The per-MAC PXELINUX config path of a MAC. */
export function pxelinuxPath(mac: string): string {
  return `pxelinux.cfg/01-${mac.toLowerCase().replaceAll(':', '-')}`;
}

/** What a conductor must do with a node its previous conductor left behind (issue #14 item 13). */
export interface StrandedCase {
  /** What the case is about, for failure messages. */
  name: string;
  /** The state the node was left in, and its target then. */
  state: string;
  target: string | null;
  /** In maintenance: not to be resumed, only failed. */
  maintenance?: boolean;
  /** A previous conductor had already resumed this state and died too (a history entry says so). */
  resumedBefore?: boolean;
  /** `instance_info` left empty (a node being cleaned, inspected or rescued needs none: issue #15). */
  noInstanceInfo?: boolean;
  /** `driver_info` without deploy images: its boot files cannot be built anywhere. */
  noDeployImages?: boolean;
  /** The state it must end in, and whether `last_error` must say why it was failed (a regular expression). */
  expect: string;
  lastError?: RegExp;
  /** An action the API must then accept (202); `deleted` is the spelling of `undeploy` before API 1.73. */
  then: string;
}

/** Every working state resumed (where safe) or failed (maintenance, interrupted twice); waiting states taken over or failed. */
export function strandedCases(): StrandedCase[] {
  const resumed: Array<[string, string, string, string]> = [
    // state, target, where resuming it ends, an action then offered
    ['verifying', 'manageable', 'manageable', 'provide'],
    ['inspecting', 'manageable', 'manageable', 'provide'],
    ['cleaning', 'available', 'available', 'manage'],
    ['deploying', 'active', 'active', 'deleted'],
    ['deleting', 'available', 'available', 'manage'],
    ['rescuing', 'rescue', 'rescue', 'unrescue'],
    ['unrescuing', 'active', 'active', 'deleted'],
    ['adopting', 'active', 'active', 'deleted'],
  ];
  // Ironic's conductor on start: the `fail` event of each state it cannot resume.
  const failed: Record<string, [string, string]> = {
    verifying: ['enroll', 'manage'],
    inspecting: ['inspect failed', 'manage'],
    cleaning: ['clean failed', 'manage'],
    deploying: ['deploy failed', 'deleted'],
    deleting: ['error', 'deleted'],
    rescuing: ['rescue failed', 'unrescue'],
    unrescuing: ['unrescue failed', 'deleted'],
    adopting: ['adopt failed', 'manage'],
  };
  const cases: StrandedCase[] = [];
  for (const [state, target, end, then] of resumed) {
    cases.push({ name: `${state} resumed`, state, target, expect: end, then });
    const [to, action] = failed[state]!;
    const error = new RegExp(`^"${state}" was interrupted .* cannot resume it: the node is in maintenance; moved to "${to}"$`);
    cases.push({ name: `${state} in maintenance failed`, state, target, maintenance: true, expect: to, lastError: error, then: action });
    const again = new RegExp(`^"${state}" was interrupted .* cannot resume it: conductor c9 had already resumed it, and was interrupted too before it moved on; moved to "${to}"$`);
    cases.push({ name: `${state} interrupted again failed`, state, target, resumedBefore: true, expect: to, lastError: again, then: action });
  }
  // Waiting states need their boot files on the new owner; those of the deploy ramdisk need no instance images.
  cases.push({ name: 'clean wait without instance images taken over', state: 'clean wait', target: 'available', noInstanceInfo: true, expect: 'clean wait', then: 'abort' });
  cases.push({ name: 'inspect wait without instance images taken over', state: 'inspect wait', target: 'manageable', noInstanceInfo: true, expect: 'inspect wait', then: 'abort' });
  cases.push({ name: 'rescue wait without instance images taken over', state: 'rescue wait', target: 'rescue', noInstanceInfo: true, expect: 'rescue wait', then: 'abort' });
  cases.push({ name: 'rescue without instance images taken over', state: 'rescue', target: null, noInstanceInfo: true, expect: 'rescue', then: 'unrescue' });
  // A waiting node that cannot boot from its new owner would wait forever: failed after a few tries.
  const cannotBoot = (to: string) => new RegExp(`could not rebuild its boot files after \\d+ tries, so the node cannot boot from it: .*deploy_kernel.*; moved to "${to}"$`);
  cases.push({ name: 'clean wait that cannot boot failed', state: 'clean wait', target: 'available', noDeployImages: true, expect: 'clean failed', lastError: cannotBoot('clean failed'), then: 'manage' });
  cases.push({ name: 'wait call-back that cannot boot failed', state: 'wait call-back', target: 'active', noDeployImages: true, expect: 'deploy failed', lastError: cannotBoot('deploy failed'), then: 'deleted' });
  return cases;
}

/**
 * Stages `cases` as a conductor doing their work leaves them when it dies: one seeded node per case
 * (fake hardware, pxe boot, ramdisk deploy, fake inspect and rescue, one port), in the case's state and target, locked by
 * `holder`. Returns the node uuid of each case, in order.
 */
export async function stageStrandedNodes(store: Store, cases: readonly StrandedCase[], images: TestImages, holder: string, first = 50_000): Promise<string[]> {
  const uuids: string[] = [];
  for (const [i, c] of cases.entries()) {
    // One INSERT with the lock in it: a live conductor must never see the node unlocked mid-staging.
    const columns = {
      name: `stranded-${first + i}`,
      // Interfaces that can inspect and rescue: resumed work runs them for real.
      inspect_interface: 'fake',
      rescue_interface: 'fake',
      target_provision_state: c.target,
      maintenance: c.maintenance ?? false,
      ...(c.maintenance ? { maintenance_reason: 'test' } : {}),
      ...(c.noInstanceInfo ? { instance_info: '{}' } : {}),
      ...(c.noDeployImages ? { driver_info: '{}' } : {}),
      reservation: holder,
    };
    const [node] = await seedDeployedNodes(store, 1, images, { state: c.state, first: first + i, columns });
    const uuid = node!.uuid;
    uuids.push(uuid);
    if (c.resumedBefore) {
      const { id } = await store.db.selectFrom('nodes').select('id').where('uuid', '=', uuid).executeTakeFirstOrThrow();
      await store.db
        .insertInto('node_history')
        .values({ uuid: randomUUID(), node_id: id, conductor: 'c9', event_type: 'provisioning', severity: 'WARNING', event: `resuming "${c.state}" on conductor c9: the conductor doing it went away` })
        .execute();
    }
  }
  return uuids;
}
