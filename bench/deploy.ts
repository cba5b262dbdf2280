/**
 * `npm run bench:deploy [-- --json] [-- --mib N] [-- --runs N] [-- --cpus N] [-- --algo sha512,sha256] [-- --fast-track-runs N]` (root, the real-node lab's
 * packages): the direct deploy in the real-node lab's VM (qemu TCG, test/realnode/), the figure
 * issue #17 holds the agent to — its image write against busybox's `wget URL | dd of=/dev/vda`
 * of the same image from the same server inside the same VM, and the time from `deploy` to the
 * disk-booted marker.
 *
 * Each run enrolls a fresh VM with a blank disk and deploys an N MiB image (the marker disk image
 * of the real-node tests: boot code, a partition table, a pattern) with `ironring.bench_url=` on
 * the deploy ramdisk's command line, so that /init first writes the image with wget | dd (and
 * prints how long it took, from /proc/uptime), then starts the agent, which writes it again as
 * the deploy asks (its result says how long its write took: download, sha256, fsync). MB is
 * 10^6 bytes.
 *
 * Then `--fast-track-runs` (default 1) runs of Ironic's fast track: the conductor restarted with
 * automated cleaning and `[deploy] fast_track` on, a fresh VM is provided (cleaning boots the
 * agent, which stays up), and the time from `deploy` to the disk-booted marker is taken with fast
 * track (the agent writes at once), then again after an undeploy and a power-off (the deploy boots
 * the agent first): the same image, the same VM, no wget | dd on the ramdisk's command line.
 * With `--json` the last line is one JSON object with every figure.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, openSync, readFileSync, ftruncateSync, writeFileSync } from 'node:fs';
import { createHash, randomBytes } from 'node:crypto';
import path from 'node:path';
import { api, enrollMachine, makeAvailable, nodeStates, provision, waitForProvisionState } from '../test/realnode/api.js';
import { deployRamdiskAsset, DISK_MARKER, markerDiskImage } from '../test/realnode/assets.js';
import { openLab } from '../test/realnode/lab.js';
import { realNodeAvailable } from '../test/realnode/requirements.js';
import { waitForMarker } from '../test/realnode/vm.js';
import { benchArgs, median, round } from './bench-args.js';

const { asJson, option, say } = benchArgs();
const MIB = Number(option('--mib') ?? 256);
const RUNS = Number(option('--runs') ?? 2);
/** The VM's virtual CPUs: the agent's receive and hash+write threads run in parallel only with 2 (the default; a server has more). */
const CPUS = Number(option('--cpus') ?? 2);
/**
 * The images' digest algorithms (`image_os_hash_algo`), each deployed `--runs` times: sha512
 * (Glance's default `hashing_algorithm`, so what Ironic's users' images carry) and sha256. The
 * VM's emulated CPU (TCG, no SHA extensions) hashes sha256 at a 20th of a server's speed (61–81 MiB/s
 * under qemu-user against 1.3 GiB/s with SHA-NI, and about half that in the VM), below wget | dd's
 * own rate there, so sha256's ratio measures the emulated digest more than the agent; sha512 runs
 * 2.2× faster under emulation.
 */
const ALGOS = (option('--algo') ?? 'sha512,sha256').split(',');
const FAST_RUNS = Number(option('--fast-track-runs') ?? 1);
if (!Number.isInteger(FAST_RUNS) || FAST_RUNS < 0 || FAST_RUNS > 10) throw new Error('--fast-track-runs: a whole number from 0 to 10');
if (ALGOS.length === 0 || ALGOS.some((a) => a !== 'sha256' && a !== 'sha512')) throw new Error('--algo: sha256, sha512 or both (comma-separated)');
if (!Number.isInteger(CPUS) || CPUS < 1 || CPUS > 4) throw new Error('--cpus: a whole number from 1 to 4');
if (!Number.isInteger(MIB) || MIB < 8 || MIB > 4096) throw new Error('--mib: a whole number from 8 to 4096');
if (!Number.isInteger(RUNS) || RUNS < 1 || RUNS > 10) throw new Error('--runs: a whole number from 1 to 10');
if (!realNodeAvailable()) {
  console.error('bench:deploy needs what the real-node tests need (root, namespaces, the Debian packages): see docs/testing.md');
  process.exit(2);
}

// The ramdisk holds the compiled agent (dist/): build it first, as the test suite's set-up does.
const build = spawnSync('npm', ['run', '-s', 'build'], { stdio: 'inherit' });
if (build.status !== 0) throw new Error('npm run build failed');
const ramdisk = deployRamdiskAsset();
const lab = await openLab();
/** A fresh VM `name` with a blank disk room for the image, enrolled as a direct node; `params` go on the ramdisk's command line. */
async function benchMachine(name: string, params: string) {
  const disk = path.join(lab.network.slot.dir, `${name}.disk`);
  const fd = openSync(disk, 'w');
  ftruncateSync(fd, (MIB + 128) * 1024 * 1024);
  closeSync(fd);
  const machine = await lab.addMachine(name, 'bios', { disks: [disk], memoryMiB: 1024, cpus: CPUS });
  const uuid = await enrollMachine(lab.app, machine, lab.network.hostAddress, lab.assets, {
    bootInterface: 'ipxe',
    bootMode: 'bios',
    deployInterface: 'direct',
    deployImages: { kernel: ramdisk.kernel, ramdisk: ramdisk.initramfs },
    deployKernelParams: `console=ttyS0 panic=-1${params === '' ? '' : ` ${params}`}`,
  });
  return { machine, uuid };
}
const fastRows: Array<{ fast: number; slow: number; provide: number; undeploy: number }> = [];
const rows: Array<{ algo: string; dd: number; agent: number; active: number; marker: number; hash: number; write: number; wait: number; seconds: number }> = [];
try {
  // Without automated cleaning: provide would boot the agent once more before each deploy.
  await lab.addConductor('c1', 11, { env: { IRONRING_CONDUCTOR_AUTOMATED_CLEAN: 'false' } });
  for (let n = 0; n < RUNS * ALGOS.length; n++) {
    const run = n + 1;
    const ALGO = ALGOS[n % ALGOS.length]!;
    const token = randomBytes(6).toString('hex');
    const image = markerDiskImage(token, MIB * 1024 * 1024);
    const imageFile = path.join(lab.network.slot.dir, `bench-${token}.raw`);
    writeFileSync(imageFile, image);
    // Read once so that both writers are served from the page cache.
    readFileSync(imageFile);
    const url = lab.serveFile(imageFile);
    const { machine, uuid } = await benchMachine(`bench${run}`, `ironring.bench_url=${url}`);
    await makeAvailable(lab.app, uuid, 120_000);
    const patched = await api(lab.app, 'PATCH', `/v1/nodes/${uuid}`, [
      { op: 'add', path: '/instance_info/image_source', value: url },
      { op: 'add', path: '/instance_info/image_os_hash_algo', value: ALGO },
      { op: 'add', path: '/instance_info/image_os_hash_value', value: createHash(ALGO).update(image).digest('hex') },
      { op: 'add', path: '/instance_info/root_device', value: { name: '/dev/vda' } },
    ]);
    if (patched.status !== 200) throw new Error(`instance_info: HTTP ${patched.status} ${patched.body}`);
    machine.vm.clearLog();
    const started = Date.now();
    // Both lines come from the ramdisk's boot, whose console log the disk boot's qemu truncates:
    // watched while they happen.
    const ddLine = waitForMarker(machine.vm.serialLog, /IRONRING-BENCH-DD start=([\d.]+) end=([\d.]+)/, 1_800_000);
    const agentLine = waitForMarker(machine.vm.serialLog, /written to device \S+ root_uuid=\S* \((\d+) bytes, \w+ verified, ([\d.]+) s.*?hashing ([\d.]+) s, device writes ([\d.]+) s, receive waited ([\d.]+) s/, 1_800_000);
    await provision(lab.app, uuid, 'active');
    const [{ match: dd }, { match: agent }] = await Promise.all([ddLine, agentLine]);
    await waitForProvisionState(lab.app, uuid, 'active', 1_800_000);
    const active = (Date.now() - started) / 1000;
    const marker = (await waitForMarker(machine.vm.serialLog, new RegExp(`${DISK_MARKER} ${token}`), 300_000)).ms / 1000 + active;
    const mb = image.length / 1e6;
    const row = { algo: ALGO, dd: mb / (Number(dd[2]) - Number(dd[1])), agent: mb / Number(agent[2]), active, marker, seconds: Number(agent[2]), hash: Number(agent[3]), write: Number(agent[4]), wait: Number(agent[5]) };
    rows.push(row);
    say(`run ${run} (${ALGO}): wget | dd ${round(row.dd, 1)} MB/s, agent ${round(row.agent, 1)} MB/s (ratio ${round(row.agent / row.dd)}; of its ${round(row.seconds, 1)} s: hashing ${round(row.hash, 1)} s, device writes ${round(row.write, 1)} s, receive waited ${round(row.wait, 1)} s); active ${round(active, 1)} s after deploy, disk marker at ${round(marker, 1)} s`);
    await machine.bmc.stop();
  }
  if (FAST_RUNS > 0) {
    const c1 = lab.conductors[0]!;
    await lab.stopConductor(c1);
    c1.env = { ...c1.env, IRONRING_CONDUCTOR_AUTOMATED_CLEAN: 'true', IRONRING_DEPLOY_FAST_TRACK: 'true' };
    await lab.startConductor(c1);
  }
  for (let n = 0; n < FAST_RUNS; n++) {
    const run = n + 1;
    const token = randomBytes(6).toString('hex');
    const image = markerDiskImage(token, MIB * 1024 * 1024);
    const imageFile = path.join(lab.network.slot.dir, `fast-${token}.raw`);
    writeFileSync(imageFile, image);
    readFileSync(imageFile);
    const { machine, uuid } = await benchMachine(`fast${run}`, '');
    let started = Date.now();
    await makeAvailable(lab.app, uuid, 600_000);
    const provideS = (Date.now() - started) / 1000;
    /** From `deploy` to the disk-booted marker, in seconds (the image set first: undeploy clears instance_info). */
    const deployToMarker = async (): Promise<number> => {
      const patched = await api(lab.app, 'PATCH', `/v1/nodes/${uuid}`, [
        { op: 'add', path: '/instance_info/image_source', value: lab.serveFile(imageFile) },
        { op: 'add', path: '/instance_info/image_os_hash_algo', value: 'sha512' },
        { op: 'add', path: '/instance_info/image_os_hash_value', value: createHash('sha512').update(image).digest('hex') },
        { op: 'add', path: '/instance_info/root_device', value: { name: '/dev/vda' } },
      ]);
      if (patched.status !== 200) throw new Error(`instance_info: HTTP ${patched.status} ${patched.body}`);
      machine.vm.clearLog();
      const t0 = Date.now();
      await provision(lab.app, uuid, 'active');
      await waitForProvisionState(lab.app, uuid, 'active', 1_800_000);
      await waitForMarker(machine.vm.serialLog, new RegExp(`${DISK_MARKER} ${token}`), 300_000);
      return (Date.now() - t0) / 1000;
    };
    const fast = await deployToMarker();
    started = Date.now();
    await provision(lab.app, uuid, 'deleted');
    await waitForProvisionState(lab.app, uuid, 'available', 600_000);
    const undeployS = (Date.now() - started) / 1000;
    const off = await api(lab.app, 'PUT', `/v1/nodes/${uuid}/states/power`, { target: 'power off' });
    if (off.status !== 202) throw new Error(`power off: HTTP ${off.status} ${off.body}`);
    for (let i = 0; (await nodeStates(lab.app, uuid)).power_state !== 'power off'; i++) {
      if (i > 600) throw new Error('the node did not power off');
      await new Promise((r) => setTimeout(r, 100));
    }
    const slow = await deployToMarker();
    fastRows.push({ fast, slow, provide: provideS, undeploy: undeployS });
    say(`fast track run ${run}: deploy → disk marker ${round(fast, 1)} s with fast track, ${round(slow, 1)} s booting the agent first; provide (clean) ${round(provideS, 1)} s, undeploy (clean) ${round(undeployS, 1)} s`);
    await machine.bmc.stop();
  }
} finally {
  await lab.close();
}

const byAlgo = Object.fromEntries(
  ALGOS.map((algo) => {
    const mine = rows.filter((r) => r.algo === algo);
    return [
      algo,
      {
        dd_mb_per_s: mine.map((r) => round(r.dd, 1)),
        agent_mb_per_s: mine.map((r) => round(r.agent, 1)),
        ratio_median: round(median(mine.map((r) => r.agent / r.dd))),
        agent_hash_s: mine.map((r) => round(r.hash, 1)),
        agent_write_s: mine.map((r) => round(r.write, 1)),
        agent_wait_s: mine.map((r) => round(r.wait, 1)),
      },
    ];
  }),
);
const result = {
  bench: 'deploy',
  mib: MIB,
  runs: RUNS,
  cpus: CPUS,
  algos: byAlgo,
  deploy_to_active_s: rows.map((r) => round(r.active, 1)),
  deploy_to_disk_marker_s: rows.map((r) => round(r.marker, 1)),
  fast_track: {
    deploy_to_disk_marker_s: fastRows.map((r) => round(r.fast, 1)),
    without_fast_track_s: fastRows.map((r) => round(r.slow, 1)),
    speedup_median: fastRows.length > 0 ? round(median(fastRows.map((r) => r.slow / r.fast))) : null,
    provide_with_clean_s: fastRows.map((r) => round(r.provide, 1)),
    undeploy_with_clean_s: fastRows.map((r) => round(r.undeploy, 1)),
  },
};
if (asJson) console.log(JSON.stringify(result));
else console.log(result);
