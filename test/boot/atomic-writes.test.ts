import { mkdir, readFile, readdir, readlink, writeFile } from 'node:fs/promises';
import type * as FsPromises from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { symlinkIfChanged, writeFileAtomic, writeFileIfChanged } from '../../src/boot/atomic-fs.js';
import { MAC_A, UUID_A, sandbox, tree } from './helpers.js';
import type { BootSandbox } from './helpers.js';

// Fault injection: the next rename (or file write) whose target matches fails, as a full disk or a
// crash between the steps would make it.
const faults = vi.hoisted(() => ({ rename: null as RegExp | null, write: null as RegExp | null }));
vi.mock('node:fs/promises', async (importOriginal) => {
  const real = await importOriginal<typeof FsPromises>();
  return {
    ...real,
    rename: async (from: string, to: string) => {
      if (faults.rename?.test(to)) {
        faults.rename = null;
        throw Object.assign(new Error('EIO: injected'), { code: 'EIO' });
      }
      return real.rename(from, to);
    },
    open: async (path: string, flags?: string, mode?: number) => {
      const handle = await real.open(path, flags, mode);
      if (faults.write?.test(path)) {
        faults.write = null;
        // Half of the bytes reach the temp file, then the disk is full.
        handle.writeFile = async (data: string | Uint8Array) => {
          await handle.write(String(data).slice(0, 3));
          throw Object.assign(new Error('ENOSPC: injected'), { code: 'ENOSPC' });
        };
      }
      return handle;
    },
  };
});

let s: BootSandbox;
beforeEach(async () => {
  s = await sandbox();
  await mkdir(s.tftpRoot, { recursive: true });
});
afterEach(async () => {
  faults.rename = null;
  faults.write = null;
  await s.dispose();
});

describe('atomic writes', () => {
  it('a failed rename keeps the old content and leaves no temp file', async () => {
    const path = join(s.tftpRoot, 'config');
    await writeFile(path, 'old\n');
    faults.rename = /\/config$/;
    await expect(writeFileAtomic(path, 'new content\n')).rejects.toThrow('EIO');
    expect(await readFile(path, 'utf8')).toBe('old\n');
    expect(await readdir(s.tftpRoot)).toEqual(['config']);
  });

  it('a write that fails half-way keeps the old content and leaves no temp file', async () => {
    const path = join(s.tftpRoot, 'config');
    await writeFile(path, 'old\n');
    faults.write = /\.config\..*\.tmp$/;
    await expect(writeFileIfChanged(path, 'new content\n')).rejects.toThrow('ENOSPC');
    expect(await readFile(path, 'utf8')).toBe('old\n');
    expect(await readdir(s.tftpRoot)).toEqual(['config']);
  });

  it('replaces a symlink through a temp link, never leaving the name missing', async () => {
    const path = join(s.tftpRoot, 'link');
    expect(await symlinkIfChanged(path, 'a/config')).toBe(true);
    faults.rename = /\/link$/;
    await expect(symlinkIfChanged(path, 'b/config')).rejects.toThrow('EIO');
    expect(await readlink(path)).toBe('a/config');
    expect(await symlinkIfChanged(path, 'b/config')).toBe(true);
    expect(await readlink(path)).toBe('b/config');
    expect(await symlinkIfChanged(path, 'b/config')).toBe(false);
    expect(await readdir(s.tftpRoot)).toEqual(['link']);
  });

  it('a prepare interrupted at the config publishes no per-MAC link, and the next prepare completes it', async () => {
    const env = s.env();
    const images = await s.images();
    const ports = [{ address: MAC_A, pxeEnabled: true }];
    faults.rename = new RegExp(`${UUID_A}/config$`);
    await expect(env.prepare({ uuid: UUID_A }, ports, images)).rejects.toThrow('EIO');
    const partial = await tree(s.tftpRoot);
    expect(partial.some((p) => p.startsWith('pxelinux.cfg/'))).toBe(false);
    expect(partial.some((p) => p.endsWith('.tmp'))).toBe(false);

    await env.prepare({ uuid: UUID_A }, ports, images);
    expect(await env.inspect({ uuid: UUID_A }, ports, images)).toMatchObject({ current: true });
    expect((await tree(s.dir)).filter((p) => p.endsWith('.tmp'))).toEqual([]);
  });
});
