/**
 * Confinement to the TFTP root: traversal, absolute paths and symlinks leading out of the root
 * get an error and never a byte; symlinks inside the root work.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONFIG, MAC_LINK, SECRET, fetchRaw, runClient, startFixture } from './helpers.js';
import type { Fixture } from './helpers.js';
import { requirePeer } from '../../helpers/peers.js';

const CURL = requirePeer('curl', 'curl');
const TFTP_HPA = requirePeer('tftp', 'tftp-hpa');

let fx: Fixture;
const passwd = readFileSync('/etc/passwd');

beforeAll(async () => {
  fx = await startFixture();
  symlinkSync('nowhere', path.join(fx.root, 'dangling'));
});
afterAll(async () => {
  await fx.cleanup();
});

describe('requests that try to leave the root', () => {
  it.each([
    '../../etc/passwd',
    '../outside/secret',
    'pxelinux.cfg/../../outside/secret',
    '/../outside/secret',
    'escape',
    'outdir/secret',
    './outdir/../escape',
  ])('%s is refused with access violation and no data', async (name) => {
    const res = await fetchRaw(fx.port, name);
    expect(res.error?.code).toBe(2);
    expect(res.data.length).toBe(0);
  });

  it('maps an absolute path inside the root', async () => {
    const res = await fetchRaw(fx.port, '/etc/passwd');
    expect(res.error).toBeUndefined();
    expect(res.data.toString()).toBe('inside-the-root\n');
    expect(res.data.equals(passwd)).toBe(false);
  });

  it.skipIf(!CURL)('refuses with curl (--path-as-is) and leaks nothing', async () => {
    for (const name of ['../../etc/passwd', 'escape', 'outdir/secret']) {
      const res = await runClient('curl', ['-sS', '--path-as-is', `tftp://127.0.0.1:${fx.port}/${name}`]);
      expect(res.code).not.toBe(0);
      expect(res.stdout.length).toBe(0);
    }
  });

  it.skipIf(!TFTP_HPA)('refuses with the tftp-hpa client and leaks nothing', async () => {
    for (const [i, name] of ['../../etc/passwd', 'escape', 'outdir/secret'].entries()) {
      const dest = path.join(fx.dir, `leak-${i}`);
      const res = await runClient('tftp', ['127.0.0.1', String(fx.port), '-m', 'binary', '-c', 'get', name, dest]);
      expect(res.stdout.toString() + res.stderr).toMatch(/Error code 2/);
      const got = existsSync(dest) ? readFileSync(dest) : Buffer.alloc(0);
      expect(got.length).toBe(0);
      expect(got.toString()).not.toContain(SECRET);
    }
  });
});

describe('files that cannot be served', () => {
  it.each([
    ['missing.bin', 1],
    ['dangling', 1],
    ['pxelinux.cfg', 1],
    ['/', 2],
  ])('%s is answered with error %i', async (name, code) => {
    const res = await fetchRaw(fx.port, name);
    expect(res.error?.code).toBe(code);
    expect(res.data.length).toBe(0);
  });

  it('does not hang on a FIFO in the root', async () => {
    expect(spawnSync('mkfifo', [path.join(fx.root, 'fifo')]).status).toBe(0);
    const res = await fetchRaw(fx.port, 'fifo');
    expect(res.error?.code).toBe(1);
  });
});

describe('links inside the root', () => {
  it('follows the per-MAC link to the node config', async () => {
    const res = await fetchRaw(fx.port, MAC_LINK);
    expect(res.data.toString()).toBe(CONFIG);
  });

  it('follows an absolute link that resolves inside the root', async () => {
    symlinkSync(path.join(fx.root, 'small.bin'), path.join(fx.root, 'abs-link'));
    const res = await fetchRaw(fx.port, 'abs-link');
    expect(res.data.equals(fx.files['small.bin']!)).toBe(true);
  });
});
