/**
 * `npm run bench:agent-write [-- --json] [-- --runs N] [-- --mib N]`: the agent's image writer
 * against `curl URL | dd of=FILE bs=4M oflag=direct` (issue #17, DESIGN §8's write-throughput row).
 *
 * One random image (256 MiB by default) is served by a separate Node process (a plain static
 * server, so neither side shares an event loop with it) and written to a file on the same file
 * system by both: `writeImage` (8 MiB writes through the page cache, sha256 while writing, fsync,
 * verify) and the shell pipeline (`iflag=fullblock` added: without it dd hands O_DIRECT the pipe's
 * short, unaligned reads and fails with EINVAL or writes small blocks). The cases alternate run by
 * run so both see the same background load, and which goes first alternates; each figure is the
 * median. dd computes no digest, so
 * the ratio charges the writer for its hashing.
 *
 * This is the local-file proxy of the real-VM figure (`bench:deploy`, ≥ 0.9 × `curl | dd` inside
 * the VM); MB is 10^6 bytes. With `--json` the last line is one JSON object with every figure.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeImage } from '../src/agent/disk/image-writer.js';
import { benchArgs, median, round } from './bench-args.js';

const { asJson, option, say } = benchArgs();
const RUNS = Number(option('--runs') ?? 5);
const MIB = Number(option('--mib') ?? 256);


/** A static file server in its own process; resolves with its URL once it listens. */
async function startServer(file: string): Promise<{ url: string; stop: () => void }> {
  const script = `
    const http = require('node:http'); const fs = require('node:fs');
    const file = process.argv[1]; const size = fs.statSync(file).size;
    http.createServer((req, res) => {
      res.writeHead(200, { 'content-length': size, 'accept-ranges': 'bytes' });
      fs.createReadStream(file, { highWaterMark: 1 << 20 }).pipe(res);
    }).listen(0, '127.0.0.1', function () { console.log(this.address().port); });`;
  const child = spawn(process.execPath, ['-e', script, file], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout.once('data', (d: Buffer) => resolve(Number(d.toString().trim())));
    child.once('exit', (code) => reject(new Error(`image server exited with ${code}`)));
  });
  return { url: `http://127.0.0.1:${port}/image.raw`, stop: () => child.kill() };
}

async function main(): Promise<void> {
  if (spawnSync('curl', ['--version']).status !== 0) throw new Error('curl is not installed');
  const dir = mkdtempSync(join(tmpdir(), 'ironring-bench-agent-write-'));
  const bytes = MIB * 1024 * 1024;
  const imagePath = join(dir, 'image.raw');
  const devicePath = join(dir, 'device');
  const image = randomBytes(bytes);
  const digest = createHash('sha256').update(image).digest('hex');
  writeFileSync(imagePath, image);
  // The "device": as large as the image plus 16 MiB, preallocated like a disk.
  writeFileSync(devicePath, Buffer.alloc(bytes + 16 * 1024 * 1024));
  const server = await startServer(imagePath);
  const ours: number[] = [];
  const pipeline: number[] = [];
  let direct = false;
  try {
    // One warm-up of each: the page cache holds the image for both, and the JIT is warm.
    for (let run = -1; run < RUNS; run++) {
      // Which case goes first alternates: the write right after the other tool's is measurably
      // slower here (write-back and cache state left behind), and neither should always pay it.
      const oursFirst = run % 2 === 0;
      let oursSeconds = 0;
      let ddSeconds = 0;
      for (const which of oursFirst ? ['ours', 'dd'] : ['dd', 'ours']) {
        const t0 = performance.now();
        if (which === 'ours') {
          const result = await writeImage({ url: server.url, checksum: { algo: 'sha256', value: digest }, device: devicePath });
          oursSeconds = (performance.now() - t0) / 1000;
          if (result.bytes !== bytes) throw new Error(`writer wrote ${result.bytes} bytes`);
          direct = result.direct;
        } else {
          const dd = spawnSync(
            'sh',
            ['-c', `curl -sf "$0" | dd of="$1" bs=4M oflag=direct iflag=fullblock conv=notrunc status=none`, server.url, devicePath],
            { stdio: ['ignore', 'ignore', 'pipe'] },
          );
          ddSeconds = (performance.now() - t0) / 1000;
          if (dd.status !== 0) throw new Error(`curl | dd failed: ${dd.stderr.toString()}`);
        }
      }
      if (run < 0) continue;
      ours.push(bytes / 1e6 / oursSeconds);
      pipeline.push(bytes / 1e6 / ddSeconds);
      say(`run ${run + 1}/${RUNS}: writeImage ${round(ours.at(-1)!)} MB/s, curl | dd ${round(pipeline.at(-1)!)} MB/s`);
    }
  } finally {
    server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  const report = {
    bench: 'agent-write',
    image_mib: MIB,
    runs: RUNS,
    writeimage_o_direct: direct,
    writeimage_mb_s: round(median(ours)),
    curl_dd_mb_s: round(median(pipeline)),
    ratio_vs_curl_dd: round(median(ours) / median(pipeline), 3),
    writeimage_runs_mb_s: ours.map((x) => round(x)),
    curl_dd_runs_mb_s: pipeline.map((x) => round(x)),
  };
  say(`writeImage ${report.writeimage_mb_s} MB/s, curl | dd ${report.curl_dd_mb_s} MB/s: ratio ${report.ratio_vs_curl_dd}`);
  if (asJson) console.log(JSON.stringify(report));
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
