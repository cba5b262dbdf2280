/** Fixtures for the boot tests: temp roots, image files with their checksums, a counting image server. */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm, writeFile, lstat } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { BootEnvironment } from '../../src/boot/boot-environment.js';
import type { BootEnvironmentOptions } from '../../src/boot/boot-environment.js';
import type { BootImages, ImageSource } from '../../src/boot/types.js';

export const UUID_A = '1be26c0b-03f2-4d2e-ae87-c02d7f33c123';
export const UUID_B = '2be26c0b-03f2-4d2e-ae87-c02d7f33c456';
export const MAC_A = '52:54:00:12:34:56';
export const MAC_A2 = '52:54:00:12:34:57';
export const MAC_B = '52:54:00:ab:cd:ef';

export function sha256(data: Uint8Array | string): string {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`;
}

/** A temp directory with tftp/http roots, the image cache and the DHCP dirs; `dispose` removes it. */
export interface BootSandbox {
  dir: string;
  tftpRoot: string;
  httpRoot: string;
  masterPath: string;
  hostsDir: string;
  optsDir: string;
  /** Writes a file under `images/` and returns it as a file:// image source. */
  image(name: string, content: string | Uint8Array): Promise<ImageSource>;
  /** Deploy + instance images, as file:// sources. */
  images(): Promise<Required<BootImages>>;
  env(options?: Partial<BootEnvironmentOptions>): BootEnvironment;
  dispose(): Promise<void>;
}

export async function sandbox(): Promise<BootSandbox> {
  const dir = await mkdtemp(join(tmpdir(), 'ironring-boot-'));
  const s: BootSandbox = {
    dir,
    tftpRoot: join(dir, 'tftp'),
    httpRoot: join(dir, 'http'),
    masterPath: join(dir, 'master_images'),
    hostsDir: join(dir, 'dhcp-hosts'),
    optsDir: join(dir, 'dhcp-opts'),
    async image(name, content) {
      const { mkdir } = await import('node:fs/promises');
      await mkdir(join(dir, 'images'), { recursive: true });
      const path = join(dir, 'images', name);
      await writeFile(path, content);
      return { url: pathToFileURL(path).href, checksum: sha256(content) };
    },
    async images() {
      return {
        deployKernel: await s.image('deploy.kernel', 'deploy kernel bytes'),
        deployRamdisk: await s.image('deploy.initrd', 'deploy ramdisk bytes'),
        kernel: await s.image('instance.kernel', 'instance kernel bytes'),
        ramdisk: await s.image('instance.initrd', 'instance ramdisk bytes'),
      };
    },
    env(options = {}) {
      return new BootEnvironment({
        tftpRoot: s.tftpRoot,
        httpRoot: s.httpRoot,
        masterPath: s.masterPath,
        httpUrl: 'http://10.0.0.5:8080',
        tftpServer: '10.0.0.5',
        defaultBootInterface: 'pxe',
        durable: false,
        // Only used with the DHCP directories: the conductor whose name DHCP files carry.
        dhcpOwner: 'cond-1',
        ...options,
      });
    },
    // Retries: a failed prepare's other image fetch may still be finishing its file when a test ends.
    dispose: () => rm(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 }),
  };
  return s;
}

/** Every path under `root` (recursively, links not followed), relative, sorted. */
export async function tree(root: string): Promise<string[]> {
  const out: string[] = [];
  async function walk(rel: string): Promise<void> {
    let names: string[];
    try {
      names = await readdir(join(root, rel));
    } catch {
      return;
    }
    for (const name of names) {
      const path = rel === '' ? name : `${rel}/${name}`;
      out.push(path);
      if ((await lstat(join(root, path))).isDirectory()) await walk(path);
    }
  }
  await walk('');
  return out.sort();
}

/** mtime, ctime and inode of every path under `root`: equal snapshots mean nothing was written. */
export async function snapshot(root: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const path of await tree(root)) {
    const st = await lstat(join(root, path));
    out[path] = `${st.ino}:${st.mtimeMs}:${st.ctimeMs}:${st.size}`;
  }
  return out;
}

/** A local HTTP server serving fixed blobs, counting requests per path; `delayMs` holds each answer. */
export async function imageServer(files: Record<string, Uint8Array | string>, delayMs = 0) {
  const hits = new Map<string, number>();
  const server = createServer((req, res) => {
    const path = req.url ?? '/';
    hits.set(path, (hits.get(path) ?? 0) + 1);
    const body = files[path];
    setTimeout(() => {
      if (body === undefined) {
        res.writeHead(404).end('not found');
        return;
      }
      res.writeHead(200, { 'Content-Length': Buffer.byteLength(body) }).end(body);
    }, delayMs);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    hits,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

export const randomBlob = (bytes: number): Buffer => randomBytes(bytes);
