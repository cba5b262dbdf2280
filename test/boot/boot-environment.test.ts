import { readFile, readlink, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InvalidBootInput } from '../../src/boot/errors.js';
import { MAC_A, MAC_A2, MAC_B, UUID_A, UUID_B, sandbox, snapshot, tree } from './helpers.js';
import type { BootSandbox } from './helpers.js';
import type { BootImages } from '../../src/boot/types.js';
import { runIpxe } from './ipxe-sim.js';

let s: BootSandbox;
let images: Required<BootImages>;
const ports = [
  { address: MAC_A, pxeEnabled: true },
  { address: MAC_A2.toUpperCase(), pxeEnabled: true },
  { address: '52:54:00:00:00:99', pxeEnabled: false },
];

beforeEach(async () => {
  s = await sandbox();
  images = await s.images();
});
afterEach(() => s.dispose());

describe('prepare: PXELINUX layout (BIOS over TFTP)', () => {
  it('writes config, hard-linked images and relative per-MAC links for pxe-enabled ports only', async () => {
    const env = s.env();
    await env.prepare({ uuid: UUID_A }, ports, images);
    expect(await tree(s.tftpRoot)).toEqual([
      UUID_A,
      `${UUID_A}/config`,
      `${UUID_A}/deploy_kernel`,
      `${UUID_A}/deploy_ramdisk`,
      `${UUID_A}/kernel`,
      `${UUID_A}/macs`,
      `${UUID_A}/ramdisk`,
      'pxelinux.cfg',
      'pxelinux.cfg/01-52-54-00-12-34-56',
      'pxelinux.cfg/01-52-54-00-12-34-57',
    ]);
    const link = join(s.tftpRoot, 'pxelinux.cfg/01-52-54-00-12-34-56');
    expect(await readlink(link)).toBe(`../${UUID_A}/config`);
    expect(await readFile(link, 'utf8')).toBe(await readFile(join(s.tftpRoot, UUID_A, 'config'), 'utf8'));
    expect(await readFile(link, 'utf8')).toMatch(/^default deploy\n/);

    const nodeKernel = await stat(join(s.tftpRoot, UUID_A, 'deploy_kernel'));
    const master = await stat(env.cache.pathFor(images.deployKernel));
    expect(nodeKernel.ino).toBe(master.ino);
    expect(master.nlink).toBe(2);
    expect(await readFile(join(s.tftpRoot, UUID_A, 'deploy_kernel'), 'utf8')).toBe('deploy kernel bytes');
    expect(await tree(s.httpRoot)).toEqual([]);
  });

  it('leaves out the instance kernel and ramdisk when none are given, and removes them and their label later', async () => {
    const env = s.env();
    await env.prepare({ uuid: UUID_A }, ports, images);
    const changes = await env.prepare({ uuid: UUID_A }, ports, { deployKernel: images.deployKernel, deployRamdisk: images.deployRamdisk });
    expect(changes.removed.sort()).toEqual([join(s.tftpRoot, UUID_A, 'kernel'), join(s.tftpRoot, UUID_A, 'ramdisk')]);
    // The config no longer names files that are gone.
    expect(changes.written).toEqual([join(s.tftpRoot, UUID_A, 'config')]);
    const config = await readFile(join(s.tftpRoot, UUID_A, 'config'), 'utf8');
    expect(config).toContain('label deploy\n');
    expect(config).not.toContain('boot_ramdisk');
  });

  it('gives each label its own node parameters', async () => {
    const env = s.env({ deployParams: 'ipa-api-url=http://10.0.0.5:6385', ramdiskParams: 'quiet' });
    const spec = env.spec({ uuid: UUID_A, deployKernelParams: 'ipa-debug=1', instanceKernelParams: 'console=ttyS0' }, ports, images);
    const appends = spec.config.split('\n').filter((l) => l.startsWith('append '));
    expect(appends).toEqual([
      `append initrd=${UUID_A}/deploy_ramdisk nofb vga=normal ipa-api-url=http://10.0.0.5:6385 ipa-debug=1`,
      `append initrd=${UUID_A}/ramdisk root=/dev/ram0 nofb vga=normal quiet console=ttyS0`,
    ]);
  });
});

describe('prepare: GRUB layout (UEFI over TFTP)', () => {
  it('links grub.cfg-01-<mac> and <mac>.conf to the node config', async () => {
    await s.env().prepare({ uuid: UUID_A, bootMode: 'uefi' }, ports.slice(0, 1), images);
    expect(await readlink(join(s.tftpRoot, 'grub.cfg-01-52-54-00-12-34-56'))).toBe(`${UUID_A}/config`);
    expect(await readlink(join(s.tftpRoot, `${MAC_A}.conf`))).toBe(`${UUID_A}/config`);
    expect(await readFile(join(s.tftpRoot, `${MAC_A}.conf`), 'utf8')).toMatch(/^set default=deploy\n/);
  });
});

describe('prepare: iPXE layout (HTTP)', () => {
  it('writes the node under http_root with a per-MAC link and the global boot.ipxe', async () => {
    await s.env({ defaultBootInterface: undefined }).prepare({ uuid: UUID_A }, ports.slice(0, 1), images);
    expect(await tree(s.httpRoot)).toEqual([
      UUID_A,
      `${UUID_A}/config`,
      `${UUID_A}/deploy_kernel`,
      `${UUID_A}/deploy_ramdisk`,
      `${UUID_A}/kernel`,
      `${UUID_A}/macs`,
      `${UUID_A}/ramdisk`,
      'boot.ipxe',
      'pxelinux.cfg',
      'pxelinux.cfg/52-54-00-12-34-56',
    ]);
    expect(await readlink(join(s.httpRoot, 'pxelinux.cfg/52-54-00-12-34-56'))).toBe(`../${UUID_A}/config`);
    expect(await readFile(join(s.httpRoot, 'pxelinux.cfg/52-54-00-12-34-56'), 'utf8')).toContain(`http://10.0.0.5:8080/${UUID_A}/deploy_kernel`);
    expect(await tree(s.tftpRoot)).toEqual([]);
  });
});

describe('prepare is idempotent', () => {
  it('writes nothing for a node that is already current: no file, link or inode changes', async () => {
    const env = s.env({ dhcpHostsDir: s.hostsDir, dhcpOptsDir: s.optsDir });
    const first = await env.prepare({ uuid: UUID_A }, ports, images);
    expect(first.written.length).toBeGreaterThan(0);
    const before = await snapshot(s.dir);
    const second = await env.prepare({ uuid: UUID_A }, ports, images);
    expect(second).toEqual({ uuid: UUID_A, written: [], removed: [] });
    expect(await snapshot(s.dir)).toEqual(before);
    // A fresh instance (a restarted conductor) agrees that nothing needs writing.
    expect(await s.env({ dhcpHostsDir: s.hostsDir, dhcpOptsDir: s.optsDir }).prepare({ uuid: UUID_A }, ports, images)).toEqual(second);
  });

  it('switching the label rewrites the config and nothing else', async () => {
    const env = s.env();
    await env.prepare({ uuid: UUID_A }, ports, images);
    const changes = await env.prepare({ uuid: UUID_A, label: 'boot_ramdisk' }, ports, images);
    expect(changes).toEqual({ uuid: UUID_A, written: [join(s.tftpRoot, UUID_A, 'config')], removed: [] });
    expect(await readFile(join(s.tftpRoot, 'pxelinux.cfg/01-52-54-00-12-34-56'), 'utf8')).toMatch(/^default boot_ramdisk\n/);
  });

  it('removes the links of a port that is no longer pxe-enabled', async () => {
    const env = s.env();
    await env.prepare({ uuid: UUID_A }, ports, images);
    const changes = await env.prepare({ uuid: UUID_A }, [{ address: MAC_A, pxeEnabled: true }, { address: MAC_A2, pxeEnabled: false }], images);
    expect(changes.removed).toEqual([join(s.tftpRoot, 'pxelinux.cfg/01-52-54-00-12-34-57')]);
    expect(changes.written).toEqual([join(s.tftpRoot, UUID_A, 'macs')]);
  });

  it('moves the links when the boot mode changes and the directory when the interface changes', async () => {
    const env = s.env();
    await env.prepare({ uuid: UUID_A }, ports.slice(0, 1), images);
    await env.prepare({ uuid: UUID_A, bootMode: 'uefi' }, ports.slice(0, 1), images);
    expect((await tree(s.tftpRoot)).filter((p) => !p.startsWith(UUID_A))).toEqual([`${MAC_A}.conf`, 'grub.cfg-01-52-54-00-12-34-56', 'pxelinux.cfg']);
    await env.prepare({ uuid: UUID_A, bootInterface: 'ipxe' }, ports.slice(0, 1), images);
    expect(await tree(s.tftpRoot)).toEqual(['pxelinux.cfg']);
    expect(await tree(s.httpRoot)).toContain('pxelinux.cfg/52-54-00-12-34-56');
  });

  it('two concurrent prepares of one node end with one consistent layout', async () => {
    const env = s.env();
    await Promise.all([env.prepare({ uuid: UUID_A }, ports, images), env.prepare({ uuid: UUID_A, label: 'boot_ramdisk' }, ports, images)]);
    expect(await readFile(join(s.tftpRoot, UUID_A, 'config'), 'utf8')).toMatch(/^default boot_ramdisk\n/);
    expect((await tree(s.tftpRoot)).filter((p) => p.endsWith('.tmp'))).toEqual([]);
  });
});

describe('cleanUp', () => {
  it('removes every file of the node and nothing of another node; the cache keeps its masters', async () => {
    const env = s.env({ dhcpHostsDir: s.hostsDir, dhcpOptsDir: s.optsDir });
    await env.prepare({ uuid: UUID_A }, ports, images);
    await env.prepare({ uuid: UUID_B }, [{ address: MAC_B, pxeEnabled: true }], images);
    const otherBefore = (await tree(s.tftpRoot)).filter((p) => p.includes(UUID_B) || p.includes('ab-cd-ef'));

    const changes = await env.cleanUp({ uuid: UUID_A });
    expect(changes.removed).toContain(join(s.tftpRoot, UUID_A));
    expect(await tree(s.tftpRoot)).toEqual(['pxelinux.cfg', ...otherBefore].sort());
    expect(await readFile(join(s.hostsDir, 'ironring-cond-1-52-54-00-12-34-56.conf'), 'utf8')).toBe(`${MAC_A},ignore\n`);
    expect(await tree(s.optsDir)).toEqual([`ironring-cond-1-${UUID_B}.conf`]);
    expect((await stat(env.cache.pathFor(images.deployKernel))).nlink).toBe(2); // node B's link

    expect(await env.cleanUp({ uuid: UUID_A })).toEqual({ uuid: UUID_A, written: [], removed: [] });
    expect(await env.listPrepared()).toEqual([UUID_B]);
  });

  it('leaves a per-MAC link alone that now belongs to another node', async () => {
    const env = s.env();
    await env.prepare({ uuid: UUID_A }, ports.slice(0, 1), images);
    await env.prepare({ uuid: UUID_B }, ports.slice(0, 1), images); // the port moved to node B
    await env.cleanUp({ uuid: UUID_A });
    expect(await readlink(join(s.tftpRoot, 'pxelinux.cfg/01-52-54-00-12-34-56'))).toBe(`../${UUID_B}/config`);
  });
});

describe('inspect', () => {
  it('reports a node never prepared as absent and not current', async () => {
    const result = await s.env().inspect({ uuid: UUID_A }, ports, images);
    expect(result.present).toBe(false);
    expect(result.current).toBe(false);
  });

  it('reports a prepared node as current, then finds a deleted link, an edited config and a corrupted image', async () => {
    const env = s.env();
    await env.prepare({ uuid: UUID_A }, ports, images);
    expect(await env.inspect({ uuid: UUID_A }, ports, images)).toMatchObject({ present: true, current: true });

    await rm(join(s.tftpRoot, 'pxelinux.cfg/01-52-54-00-12-34-57'));
    await writeFile(join(s.tftpRoot, UUID_A, 'config'), 'default local\n');
    await writeFile(join(s.tftpRoot, UUID_A, 'ramdisk'), 'flipped bits'); // same inode as the master
    const result = await env.inspect({ uuid: UUID_A }, ports, images);
    expect(result.current).toBe(false);
    const bad = result.items.filter((i) => i.state !== 'ok').map((i) => [i.kind, i.path.slice(s.tftpRoot.length + 1), i.state]);
    expect(bad).toEqual([
      ['config', `${UUID_A}/config`, 'stale'],
      ['image', `${UUID_A}/ramdisk`, 'corrupt'],
      ['link', 'pxelinux.cfg/01-52-54-00-12-34-57', 'missing'],
    ]);
    // Without hashing, the corrupted image still looks linked and current.
    const quick = await env.inspect({ uuid: UUID_A }, ports, images, { verifyChecksums: false });
    expect(quick.items.filter((i) => i.state !== 'ok')).toHaveLength(2);
  });

  it('reports a link to another node as stale and files prepare would remove as extra', async () => {
    const env = s.env();
    await env.prepare({ uuid: UUID_A }, ports, images);
    const onlyDeploy = { deployKernel: images.deployKernel, deployRamdisk: images.deployRamdisk };
    const result = await env.inspect({ uuid: UUID_A }, ports.slice(0, 1), onlyDeploy);
    expect(result.items.filter((i) => i.state === 'extra').map((i) => i.path.slice(s.tftpRoot.length + 1))).toEqual([
      `${UUID_A}/kernel`,
      `${UUID_A}/ramdisk`,
      'pxelinux.cfg/01-52-54-00-12-34-57',
    ]);
  });
});

describe('input validation', () => {
  it('refuses iPXE kernel parameters iPXE would read as commands or comments, naming the field', () => {
    const env = s.env({ defaultBootInterface: 'ipxe' });
    const cases: Array<[string, 'deployKernelParams' | 'instanceKernelParams', string]> = [
      ['quiet || reboot', 'deployKernelParams', '||'],
      ['quiet && shell', 'instanceKernelParams', '&&'],
      ['quiet ; shell', 'instanceKernelParams', ';'],
      ['quiet #debug', 'deployKernelParams', '#'],
    ];
    for (const [value, key, token] of cases) {
      const err = (() => {
        try {
          env.spec({ uuid: UUID_A, [key]: value }, ports, images);
        } catch (e) {
          return e;
        }
        return null;
      })();
      expect(err, value).toBeInstanceOf(InvalidBootInput);
      expect((err as InvalidBootInput).field).toBe(`node.${key}`);
      expect((err as InvalidBootInput).message).toContain(token);
    }
    expect(() => s.env({ defaultBootInterface: 'ipxe', appendParams: 'nofb ; reboot' }).spec({ uuid: UUID_A }, ports, images)).toThrow(/appendParams/);
    // PXELINUX passes the rest of its append line to the kernel as it is: nothing to refuse there.
    expect(() => s.env().spec({ uuid: UUID_A, deployKernelParams: 'quiet ; x' }, ports, images)).not.toThrow();
  });

  it('passes quoted values and ${settings} through iPXE to the kernel', () => {
    const env = s.env({ defaultBootInterface: 'ipxe' });
    const spec = env.spec({ uuid: UUID_A, label: 'boot_ramdisk', instanceKernelParams: 'dyndbg="file foo.c +p" ip=${ip}' }, ports, images);
    const run = runIpxe(spec.config, { settings: { ip: '10.0.0.9' } });
    expect(run.outcome).toBe('booted');
    expect(run.kernelArgs[0]!.join(' ')).toContain('dyndbg="file foo.c +p" ip=10.0.0.9');
  });

  it('rejects a bad MAC, uuid, checksum, label or kernel parameter before writing anything', async () => {
    const env = s.env();
    const bad: [() => Promise<unknown>, string][] = [
      [() => env.prepare({ uuid: UUID_A }, [{ address: '52:54:00:12:34', pxeEnabled: true }], images), 'ports[0].address'],
      [() => env.prepare({ uuid: 'node-1' }, ports, images), 'node.uuid'],
      [() => env.prepare({ uuid: UUID_A }, ports, { ...images, kernel: { url: images.kernel.url, checksum: 'sha1:abc' } }), 'images.kernel.checksum'],
      [() => env.prepare({ uuid: UUID_A }, ports, { ...images, deployKernel: { url: images.deployKernel.url, checksum: 'sha256:abcd' } }), 'images.deployKernel.checksum'],
      [() => env.prepare({ uuid: UUID_A, label: 'boot_ramdisk' }, ports, { deployKernel: images.deployKernel, deployRamdisk: images.deployRamdisk }), 'node.label'],
      [() => env.prepare({ uuid: UUID_A, deployKernelParams: 'a\ndefault evil' }, ports, images), 'node.deployKernelParams'],
      [() => env.prepare({ uuid: UUID_A, instanceKernelParams: 'a\rshell' }, ports, images), 'node.instanceKernelParams'],
      [() => env.prepare({ uuid: UUID_A }, ports, { kernel: images.kernel, ramdisk: images.ramdisk }), 'node.label'],
      [() => env.prepare({ uuid: UUID_A }, ports, { ...images, deployRamdisk: undefined }), 'images'],
      [() => env.prepare({ uuid: UUID_A, bootMode: 'legacy' as 'bios' }, ports, images), 'node.bootMode'],
    ];
    for (const [call, field] of bad) {
      const err = await call().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(InvalidBootInput);
      expect((err as InvalidBootInput).field).toBe(field);
      expect((err as InvalidBootInput).httpStatus).toBe(400);
    }
    expect(await tree(s.dir).then((t) => t.filter((p) => !p.startsWith('images')))).toEqual([]);
  });

  it('refuses iPXE nodes when no HTTP root or URL is configured', async () => {
    const env = s.env({ httpRoot: undefined, httpUrl: undefined });
    await expect(env.prepare({ uuid: UUID_A, bootInterface: 'ipxe' }, ports, images)).rejects.toThrow(InvalidBootInput);
  });
});

describe('batch', () => {
  it('flushes the file systems once when something changed, and not at all when nothing did', async () => {
    const env = s.env({ durable: true });
    await env.batch(() => Promise.all([env.prepare({ uuid: UUID_A }, ports, images), env.prepare({ uuid: UUID_B }, [{ address: MAC_B, pxeEnabled: true }], images)]));
    expect(env.flushes).toBe(1);
    // Everything is current: a pass over the same nodes writes nothing and must not flush.
    const again = await env.batch(() => Promise.all([env.prepare({ uuid: UUID_A }, ports, images), env.prepare({ uuid: UUID_B }, [{ address: MAC_B, pxeEnabled: true }], images)]));
    expect(again.flatMap((c) => [...c.written, ...c.removed])).toEqual([]);
    expect(env.flushes).toBe(1);
    await env.batch(() => env.cleanUp({ uuid: UUID_B }));
    expect(env.flushes).toBe(2);
    await env.batch(() => env.cleanUp({ uuid: UUID_B }));
    expect(env.flushes).toBe(2);
  });
});

describe('sweep', () => {
  it('removes stale temp files and per-MAC links whose node directory is gone, and nothing current', async () => {
    const env = s.env({ dhcpHostsDir: s.hostsDir, dhcpOptsDir: s.optsDir });
    await env.prepare({ uuid: UUID_A }, ports.slice(0, 1), images);
    await env.prepare({ uuid: UUID_B }, [{ address: MAC_B, pxeEnabled: true }], images);
    await rm(join(s.tftpRoot, UUID_B), { recursive: true }); // an operator's rm -rf
    const leftover = join(s.tftpRoot, 'pxelinux.cfg', '.01-52-54-00-00-00-01.4242.0123abcd.tmp');
    await writeFile(leftover, '');
    const before = await snapshot(join(s.tftpRoot, UUID_A));

    const hostsBefore = await snapshot(s.hostsDir);

    // Node B's DHCP entries outlived its directory: its host line becomes `ignore`, its options go.
    expect(await env.sweep({ minTempAgeMs: 0 })).toEqual({ temps: [leftover], danglingLinks: [join(s.tftpRoot, 'pxelinux.cfg/01-52-54-00-ab-cd-ef')], dhcp: [UUID_B], complete: true });
    expect(await tree(join(s.tftpRoot, 'pxelinux.cfg'))).toEqual(['01-52-54-00-12-34-56']);
    expect(await snapshot(join(s.tftpRoot, UUID_A))).toEqual(before);
    expect(await readFile(join(s.hostsDir, 'ironring-cond-1-52-54-00-ab-cd-ef.conf'), 'utf8')).toBe(`${MAC_B},ignore\n`);
    expect(await tree(s.optsDir)).toEqual([`ironring-cond-1-${UUID_A}.conf`]);
    expect((await snapshot(s.hostsDir))['ironring-cond-1-52-54-00-12-34-56.conf']).toEqual(hostsBefore['ironring-cond-1-52-54-00-12-34-56.conf']);
    expect(await env.sweep()).toEqual({ temps: [], danglingLinks: [], dhcp: [], complete: true });
  });

  it('stops where it is when asked to (a take-over is waiting) and finishes on a later sweep', async () => {
    const env = s.env({ dhcpHostsDir: s.hostsDir, dhcpOptsDir: s.optsDir });
    // Enough entries that the sweep asks more than once: node directories and links of 80 nodes.
    const uuids = Array.from({ length: 80 }, (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`);
    for (const [i, uuid] of uuids.entries()) {
      await env.prepare({ uuid }, [{ address: `52:54:00:00:01:${i.toString(16).padStart(2, '0')}`, pxeEnabled: true }], images);
    }
    await rm(join(s.tftpRoot, uuids[79]!), { recursive: true });
    let asked = 0;
    const cut = await env.sweep({ minTempAgeMs: 0, shouldStop: () => ++asked >= 1 });
    expect(cut).toEqual({ temps: [], danglingLinks: [], dhcp: [], complete: false });
    expect(asked).toBe(1);
    // Nothing was removed by the cut sweep; the next one does the work.
    expect(await tree(join(s.tftpRoot, 'pxelinux.cfg'))).toHaveLength(80);
    const full = await env.sweep({ minTempAgeMs: 0, shouldStop: () => false });
    expect(full.complete).toBe(true);
    expect(full.danglingLinks).toEqual([join(s.tftpRoot, 'pxelinux.cfg/01-52-54-00-00-01-4f')]);
    expect(full.dhcp).toEqual([uuids[79]]);
  });
});

describe('options', () => {
  it('rejects a bad http_url, TFTP server or half-configured DHCP when constructed', () => {
    expect(() => s.env({ httpUrl: 'ftp://x' })).toThrow(InvalidBootInput);
    expect(() => s.env({ dhcpHostsDir: s.hostsDir })).toThrow(InvalidBootInput);
    expect(() => s.env({ dhcpHostsDir: s.hostsDir, dhcpOptsDir: s.optsDir, tftpServer: 'bad host' })).toThrow(InvalidBootInput);
    expect(() => s.env({ dhcpHostsDir: s.hostsDir, dhcpOptsDir: s.optsDir, tftpServer: undefined })).toThrow(InvalidBootInput);
  });
});

describe('a local-boot entry', () => {
  it('needs no image: a config that boots the disk, linked per MAC, and switching from the deploy ramdisk removes its images', async () => {
    const env = s.env();
    await env.prepare({ uuid: UUID_A }, ports, images);
    const changes = await env.prepare({ uuid: UUID_A, label: 'localboot' }, ports, {});
    expect(changes.written).toContain(join(s.tftpRoot, UUID_A, 'config'));
    expect(await readFile(join(s.tftpRoot, 'pxelinux.cfg/01-52-54-00-12-34-56'), 'utf8')).toBe('default localboot\n\nlabel localboot\nlocalboot 0\n');
    // No image is left in the node's directory: only its config and the record of its MACs.
    expect((await tree(join(s.tftpRoot, UUID_A))).sort()).toEqual(['config', 'macs']);
    // Current: a second prepare writes nothing.
    expect(await env.prepare({ uuid: UUID_A, label: 'localboot' }, ports, {})).toEqual({ uuid: UUID_A, written: [], removed: [] });
  });
});
