/**
 * `npm run bench:tftp [-- --json] [-- --runs N] [-- --mib N]`: the embedded TFTP server against
 * tftpd-hpa on loopback (DESIGN §8/§9, issue #5).
 *
 * The same 64 MiB file is fetched from both servers by the same Debian clients at blksize 1468:
 * curl and atftp, lock-step (equal options), and from ironring by atftp with windowsize 16
 * (tftpd-hpa 5.2 has no windowsize). Cases are interleaved run by run so both servers see the same
 * background load; each figure is the median of the runs. Then 100 concurrent 1 MiB fetches by curl
 * from ironring: total time, and every file compared byte for byte.
 *
 * ironring runs with its default busy polling (`tftp_busy_poll_us` 100: a transfer running alone
 * spins briefly for each ACK instead of sleeping); atftp lock-step is also fetched from a second
 * ironring server with busy polling off, reported as `ratio_no_busy_poll_vs_tftpd_hpa` for the
 * record (the target applies to the default).
 *
 * `ratio_vs_tftpd_hpa` is the lower of the two clients' ratios (ironring MB/s over tftpd-hpa MB/s);
 * `ratio_windowsize_vs_tftpd_hpa` is atftp with windowsize 16 from ironring over atftp from
 * tftpd-hpa. MB is 10^6 bytes. With `--json` the last line is one JSON object with every figure.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTftpServer } from '../src/boot/tftp/index.js';
import { fetchCommand, run, startTftpdHpa, tftpdHpaPath, timedFetch } from './tftp-peers.js';
import type { Fetch } from './tftp-peers.js';
import { benchArgs, median, round } from './bench-args.js';

const { asJson, option, say } = benchArgs();
const RUNS = Number(option('--runs') ?? 5);
const MIB = Number(option('--mib') ?? 64);
const CONCURRENT = 100;
const BLKSIZE = 1468;
const WINDOWSIZE = 16;


interface Case {
  id: string;
  server: 'ironring' | 'ironring-no-bp' | 'tftpd-hpa';
  fetch: Fetch;
  seconds: number[];
}

async function main(): Promise<void> {
  const hpa = tftpdHpaPath();
  if (!hpa) throw new Error('tftpd-hpa is not installed (apt-get install tftpd-hpa)');
  const dir = mkdtempSync(join(tmpdir(), 'ironring-bench-tftp-'));
  const root = join(dir, 'root');
  mkdirSync(root);
  // tftpd-hpa drops privileges to nobody after chroot: the root must be world-readable.
  chmodSync(dir, 0o755);
  const big = randomBytes(MIB * 1024 * 1024);
  const small = randomBytes(1024 * 1024);
  writeFileSync(join(root, 'big.bin'), big, { mode: 0o644 });
  writeFileSync(join(root, 'small.bin'), small, { mode: 0o644 });
  const ours = await startTftpServer({ root, address: '127.0.0.1:0' });
  const sleeper = await startTftpServer({ root, address: '127.0.0.1:0', busyPollUs: 0 });
  const reference = await startTftpdHpa(hpa, root);
  const ports = { ironring: ours.address().port, 'ironring-no-bp': sleeper.address().port, 'tftpd-hpa': reference.port };
  const portOf = (server: Case['server']): number => ports[server];
  try {
    const cases: Case[] = [
      { id: 'tftpd_hpa_atftp', server: 'tftpd-hpa', fetch: { client: 'atftp', blksize: BLKSIZE }, seconds: [] },
      { id: 'ironring_atftp', server: 'ironring', fetch: { client: 'atftp', blksize: BLKSIZE }, seconds: [] },
      { id: 'ironring_atftp_no_busy_poll', server: 'ironring-no-bp', fetch: { client: 'atftp', blksize: BLKSIZE }, seconds: [] },
      { id: 'ironring_atftp_windowsize', server: 'ironring', fetch: { client: 'atftp', blksize: BLKSIZE, windowsize: WINDOWSIZE }, seconds: [] },
      { id: 'tftpd_hpa_curl', server: 'tftpd-hpa', fetch: { client: 'curl', blksize: BLKSIZE }, seconds: [] },
      { id: 'ironring_curl', server: 'ironring', fetch: { client: 'curl', blksize: BLKSIZE }, seconds: [] },
    ];
    // Warm-up: page cache, client binaries, the server's first-request paths.
    for (const c of cases) await run(...fetchCommand(c.fetch, portOf(c.server), 'small.bin', join(dir, 'warm')));
    say(`${MIB} MiB at blksize ${BLKSIZE}, ${RUNS} interleaved runs`);
    for (let r = 0; r < RUNS; r += 1) {
      for (const c of cases) {
        const out = join(dir, `${c.id}.out`);
        c.seconds.push(await timedFetch(c.fetch, portOf(c.server), 'big.bin', out));
        if (r === 0 && !readFileSync(out).equals(big)) throw new Error(`${c.id}: fetched file differs from the original`);
        rmSync(out, { force: true });
      }
    }
    const mbps: Record<string, number> = {};
    for (const c of cases) {
      mbps[c.id] = round(big.length / 1e6 / median(c.seconds));
      const how = c.fetch.windowsize ? `windowsize ${c.fetch.windowsize}` : 'lock-step    ';
      const times = c.seconds.map((s) => s.toFixed(2)).join(', ');
      say(`  ${c.server.padEnd(14)} ${c.fetch.client.padEnd(5)} ${how}  ${mbps[c.id]!.toFixed(1).padStart(6)} MB/s  (${times} s)`);
    }
    const ratioAtftp = mbps.ironring_atftp! / mbps.tftpd_hpa_atftp!;
    const ratioCurl = mbps.ironring_curl! / mbps.tftpd_hpa_curl!;
    const ratioWindow = mbps.ironring_atftp_windowsize! / mbps.tftpd_hpa_atftp!;
    const ratioNoBusyPoll = mbps.ironring_atftp_no_busy_poll! / mbps.tftpd_hpa_atftp!;
    const polled = ours.stats().busyPolled;
    say(`  ratio vs tftpd-hpa (equal options): atftp ${ratioAtftp.toFixed(2)}x, curl ${ratioCurl.toFixed(2)}x (target >= 1.0)`);
    say(`  with busy polling off: atftp ${ratioNoBusyPoll.toFixed(2)}x (for the record)`);
    say(`  ratio windowsize ${WINDOWSIZE} vs tftpd-hpa: ${ratioWindow.toFixed(2)}x (target >= 3.0)`);

    const concurrent = await concurrentFetches(ours.address().port, dir, small);
    say(`  ${CONCURRENT} concurrent 1 MiB fetches (curl): ${concurrent.seconds.toFixed(2)} s, ${concurrent.failures} failures`);
    const stats = ours.stats();
    const result = {
      bench: 'tftp',
      file_mib: MIB,
      blksize: BLKSIZE,
      windowsize: WINDOWSIZE,
      runs: RUNS,
      mbps,
      ratio_vs_tftpd_hpa: round(Math.min(ratioAtftp, ratioCurl)),
      ratio_vs_tftpd_hpa_atftp: round(ratioAtftp),
      ratio_vs_tftpd_hpa_curl: round(ratioCurl),
      ratio_windowsize_vs_tftpd_hpa: round(ratioWindow),
      ratio_no_busy_poll_vs_tftpd_hpa: round(ratioNoBusyPoll),
      busy_polled_datagrams: polled,
      concurrent_transfers: CONCURRENT,
      concurrent_seconds: round(concurrent.seconds),
      concurrent_failures: concurrent.failures,
      server_failed_transfers: stats.failed,
      targets: { ratio_vs_tftpd_hpa: 1.0, ratio_windowsize_vs_tftpd_hpa: 3.0, concurrent_failures: 0 },
      met: Math.min(ratioAtftp, ratioCurl) >= 1.0 && ratioWindow >= 3.0 && concurrent.failures === 0 && stats.failed === 0,
    };
    if (asJson) console.log(JSON.stringify(result));
  } finally {
    await ours.close();
    await sleeper.close();
    await reference.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** 100 curl processes at once, each file checked against the original. */
async function concurrentFetches(port: number, dir: string, original: Buffer): Promise<{ seconds: number; failures: number }> {
  const fetch: Fetch = { client: 'curl', blksize: BLKSIZE };
  const t0 = process.hrtime.bigint();
  const results = await Promise.allSettled(
    Array.from({ length: CONCURRENT }, (_, i) => run(...fetchCommand(fetch, port, 'small.bin', join(dir, `c${i}.out`)))),
  );
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  let failures = 0;
  results.forEach((r, i) => {
    const out = join(dir, `c${i}.out`);
    if (r.status === 'rejected' || !sameFile(out, original)) failures += 1;
    rmSync(out, { force: true });
  });
  return { seconds, failures };
}

function sameFile(path: string, original: Buffer): boolean {
  try {
    return readFileSync(path).equals(original);
  } catch {
    return false;
  }
}

await main();
