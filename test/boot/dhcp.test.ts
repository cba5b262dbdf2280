import { execFile } from 'node:child_process';
import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { removeDhcpEntries, renderDhcpEntries, retireDhcpHosts, tftpHost, writeDhcpEntries } from '../../src/boot/dhcp.js';
import { dhcpOwnerToken, parseHostFileName, parseOptsFileName } from '../../src/boot/dhcp-names.js';
import { sweepDhcpEntries } from '../../src/boot/dhcp-sweep.js';
import type { DhcpOptions } from '../../src/boot/dhcp.js';
import { InvalidBootInput } from '../../src/boot/errors.js';
import { MAC_A, MAC_A2, UUID_A, UUID_B, sandbox, tree } from './helpers.js';
import type { BootSandbox } from './helpers.js';
import { findCommand, requirePeer } from '../helpers/peers.js';

const run = promisify(execFile);
const DNSMASQ = requirePeer('dnsmasq', 'dnsmasq-base') ? findCommand('dnsmasq')! : undefined;
let s: BootSandbox;
let options: DhcpOptions;

beforeEach(async () => {
  s = await sandbox();
  options = { hostsDir: s.hostsDir, optsDir: s.optsDir, owner: 'cond-1', tftpServer: '10.0.0.5:6969', httpUrl: 'http://10.0.0.5:8080' };
});
afterEach(() => s.dispose());

const node = { uuid: UUID_A, bootMode: 'bios', bootInterface: 'pxe' } as const;

describe('dnsmasq entries', () => {
  it('tags each MAC and points the tag at this conductor with the PXELINUX boot file; names and tag carry the conductor', () => {
    const entries = renderDhcpEntries(node, [MAC_A, MAC_A2], options);
    expect(entries.tag).toMatch(new RegExp(`^ir-cond-1-${UUID_A}-[0-9a-f]{8}$`));
    const t = entries.tag;
    expect(entries.hosts).toEqual([
      { mac: MAC_A, path: join(s.hostsDir, 'ironring-cond-1-52-54-00-12-34-56.conf'), content: `${MAC_A},set:${t},set:ironring\n` },
      { mac: MAC_A2, path: join(s.hostsDir, 'ironring-cond-1-52-54-00-12-34-57.conf'), content: `${MAC_A2},set:${t},set:ironring\n` },
    ]);
    expect(entries.opts.path).toBe(join(s.optsDir, `ironring-cond-1-${UUID_A}.conf`));
    expect(entries.opts.content).toBe(
      [
        `tag:${t},option:server-ip-address,10.0.0.5`,
        `tag:${t},option:tftp-server,10.0.0.5`,
        `tag:${t},150,10.0.0.5`,
        `tag:${t},option:bootfile-name,pxelinux.0`,
        `tag:${t},tag:ipxe,encap:175,176,1b`,
        '',
      ].join('\n'),
    );
  });

  it('gives iPXE clients http_url/boot.ipxe and other clients the iPXE chain loader for their firmware', () => {
    const bios = renderDhcpEntries({ ...node, bootInterface: 'ipxe' }, [MAC_A], options);
    expect(bios.opts.content).toContain(`tag:${bios.tag},tag:!ipxe,option:bootfile-name,undionly.kpxe\n`);
    expect(bios.opts.content).toContain(`tag:${bios.tag},tag:ipxe,option:bootfile-name,http://10.0.0.5:8080/boot.ipxe\n`);
    const uefi = renderDhcpEntries({ ...node, bootInterface: 'ipxe', bootMode: 'uefi' }, [MAC_A], options);
    expect(uefi.opts.content).toContain(',tag:!ipxe,option:bootfile-name,snponly.efi\n');
    const grub = renderDhcpEntries({ ...node, bootMode: 'uefi' }, [MAC_A], { ...options, bootFiles: { pxeUefi: 'grubnetx64.efi' } });
    expect(grub.opts.content).toContain(',option:bootfile-name,grubnetx64.efi\n');
  });

  it("tells iPXE clients not to wait for a ProxyDHCP offer (iPXE's no-pxedhcp, 175.176), whatever the boot interface", () => {
    // iPXE otherwise keeps discovering for its ProxyDHCP timeout (3 s measured) after this offer.
    for (const bootInterface of ['pxe', 'ipxe'] as const) {
      for (const bootMode of ['bios', 'uefi'] as const) {
        const entries = renderDhcpEntries({ ...node, bootInterface, bootMode }, [MAC_A], options);
        const lines = entries.opts.content.split('\n').filter((l) => l.includes('encap:175'));
        expect(lines, `${bootInterface} ${bootMode}`).toEqual([`tag:${entries.tag},tag:ipxe,encap:175,176,1b`]);
      }
    }
  });

  it('changes the tag whenever the options change (dnsmasq keeps old options until SIGHUP)', () => {
    const a = renderDhcpEntries(node, [MAC_A], options).tag;
    expect(renderDhcpEntries(node, [MAC_A, MAC_A2], options).tag).toBe(a);
    expect(renderDhcpEntries({ ...node, bootMode: 'uefi' }, [MAC_A], options).tag).not.toBe(a);
    expect(renderDhcpEntries(node, [MAC_A], { ...options, tftpServer: '10.0.0.6' }).tag).not.toBe(a);
  });

  it('names a TFTP server given by host name in option 66 only', () => {
    const entries = renderDhcpEntries(node, [MAC_A], { ...options, tftpServer: 'conductor-1.example.com:69' });
    expect(entries.opts.content).not.toContain('server-ip-address');
    expect(entries.opts.content).toContain(',option:tftp-server,conductor-1.example.com\n');
    expect(tftpHost('[fd00::5]:69')).toBe('fd00::5');
    expect(tftpHost('fd00::5')).toBe('fd00::5');
  });

  it('refuses values that would break a dnsmasq line', () => {
    expect(() => renderDhcpEntries(node, [MAC_A], { ...options, bootFiles: { pxeBios: 'a,b' } })).toThrow(InvalidBootInput);
    expect(() => renderDhcpEntries({ ...node, bootInterface: 'ipxe' }, [MAC_A], { ...options, httpUrl: undefined })).toThrow(InvalidBootInput);
  });

  it.skipIf(DNSMASQ === undefined)('passes dnsmasq --test as dhcp-host / dhcp-option lines', async () => {
    const ipxe = renderDhcpEntries({ ...node, bootInterface: 'ipxe', bootMode: 'uefi' }, [MAC_A, MAC_A2], options);
    const pxe = renderDhcpEntries({ uuid: UUID_B, bootMode: 'bios', bootInterface: 'pxe' }, ['52:54:00:ab:cd:ef'], { ...options, tftpServer: 'tftp.example.com' });
    // --test does not read hostsdir/optsdir files, so their lines are checked in the same syntax inline.
    const lines = [
      'port=0',
      `dhcp-hostsdir=${s.hostsDir}`,
      `dhcp-optsdir=${s.optsDir}`,
      'dhcp-match=set:ipxe,175',
      ...[...ipxe.hosts, ...pxe.hosts].map((h) => `dhcp-host=${h.content.trim()}`),
      `dhcp-host=${MAC_A},ignore`,
      ...`${ipxe.opts.content}${pxe.opts.content}`.trim().split('\n').map((l) => `dhcp-option=${l}`),
    ];
    const conf = join(s.dir, 'dnsmasq.conf');
    await writeFile(conf, `${lines.join('\n')}\n`);
    const { stderr } = await run(DNSMASQ!, ['--test', `--conf-file=${conf}`]);
    expect(stderr).toContain('syntax check OK');
  });
});

describe('writing and retiring entries', () => {
  it('writes compare-first and, on clean-up, turns host lines into ignore and removes the options', async () => {
    const entries = renderDhcpEntries(node, [MAC_A, MAC_A2], options);
    expect((await writeDhcpEntries(entries, options)).written).toHaveLength(3);
    expect(await writeDhcpEntries(entries, options)).toEqual({ written: [], removed: [] });
    expect(await removeDhcpEntries(UUID_A, [MAC_A, MAC_A2], options)).toEqual({
      written: [join(s.hostsDir, 'ironring-cond-1-52-54-00-12-34-56.conf'), join(s.hostsDir, 'ironring-cond-1-52-54-00-12-34-57.conf')],
      removed: [join(s.optsDir, `ironring-cond-1-${UUID_A}.conf`)],
    });
    expect(await readFile(join(s.hostsDir, 'ironring-cond-1-52-54-00-12-34-56.conf'), 'utf8')).toBe(`${MAC_A},ignore\n`);
    expect(await tree(s.optsDir)).toEqual([]);
    expect(await removeDhcpEntries(UUID_A, [MAC_A, MAC_A2], options)).toEqual({ written: [], removed: [] });
  });

  it("with cleanUp 'remove' deletes the host files instead", async () => {
    await writeDhcpEntries(renderDhcpEntries(node, [MAC_A], options), options);
    await removeDhcpEntries(UUID_A, [MAC_A], { ...options, cleanUp: 'remove' });
    expect(await tree(s.hostsDir)).toEqual([]);
  });

  it('leaves a MAC alone that another node has claimed since', async () => {
    await writeDhcpEntries(renderDhcpEntries(node, [MAC_A], options), options);
    const other = renderDhcpEntries({ ...node, uuid: UUID_B }, [MAC_A], options);
    await writeDhcpEntries(other, options);
    await removeDhcpEntries(UUID_A, [MAC_A], options);
    expect(await readFile(join(s.hostsDir, 'ironring-cond-1-52-54-00-12-34-56.conf'), 'utf8')).toBe(other.hosts[0]?.content);
  });

  it('prepare writes the entries and cleanUp retires them through the boot environment', async () => {
    const env = s.env({ dhcpHostsDir: s.hostsDir, dhcpOptsDir: s.optsDir, tftpServer: '10.0.0.5' });
    const images = await s.images();
    const changes = await env.prepare({ uuid: UUID_A }, [{ address: MAC_A, pxeEnabled: true }, { address: MAC_A2, pxeEnabled: false }], images);
    expect(changes.written).toContain(join(s.optsDir, `ironring-cond-1-${UUID_A}.conf`));
    expect(await tree(s.hostsDir)).toEqual(['ironring-cond-1-52-54-00-12-34-56.conf']);
    // The port stops being pxe-enabled: its host line is retired at the next prepare.
    await env.prepare({ uuid: UUID_A }, [{ address: MAC_A, pxeEnabled: false }], images);
    expect(await readFile(join(s.hostsDir, 'ironring-cond-1-52-54-00-12-34-56.conf'), 'utf8')).toBe(`${MAC_A},ignore\n`);
  });
});

describe('names carry the writing conductor', () => {
  it('uses a clean host name as is and turns any other into a distinct safe token', () => {
    expect(dhcpOwnerToken('cond-1.example.com')).toBe('cond-1.example.com');
    const upper = dhcpOwnerToken('Cond-1');
    expect(upper).toMatch(/^cond-1-[0-9a-f]{8}$/);
    expect(upper).not.toBe(dhcpOwnerToken('cond-1'));
    expect(dhcpOwnerToken('a b,c#d')).toMatch(/^a-b-c-d-[0-9a-f]{8}$/);
    expect(dhcpOwnerToken('x'.repeat(200)).length).toBeLessThanOrEqual(63);
    expect(() => dhcpOwnerToken('')).toThrow(InvalidBootInput);
    expect(() => renderDhcpEntries(node, [MAC_A], { ...options, owner: 'Not A Token' })).toThrow(/dhcpOwner/);
  });

  it('parses file names from the end, so tokens with dashes and the old unprefixed names are never confused', () => {
    expect(parseHostFileName('ironring-cond-1-52-54-00-12-34-56.conf')).toEqual({ owner: 'cond-1', mac: MAC_A });
    expect(parseHostFileName('ironring-52-54-00-12-34-56.conf')).toEqual({ owner: null, mac: MAC_A });
    expect(parseHostFileName('other-52-54-00-12-34-56.conf')).toBeNull();
    expect(parseOptsFileName(`ironring-a-b-${UUID_A}.conf`)).toEqual({ owner: 'a-b', uuid: UUID_A });
    expect(parseOptsFileName(`ironring-${UUID_A}.conf`)).toEqual({ owner: null, uuid: UUID_A });
    expect(parseOptsFileName(`ironring-${UUID_A}.conf.bak`)).toBeNull();
  });
});

describe('shared directories: the owner retires the others, nobody touches the owner', () => {
  const a = () => ({ ...options, owner: 'cond-a', tftpServer: '10.0.0.1' });
  const b = () => ({ ...options, owner: 'cond-b', tftpServer: '10.0.0.2' });
  const hostA = () => join(s.hostsDir, 'ironring-cond-a-52-54-00-12-34-56.conf');
  const hostB = () => join(s.hostsDir, 'ironring-cond-b-52-54-00-12-34-56.conf');

  it("the new owner writes its options, then its host line, then removes the old owner's host and option files", async () => {
    const old = renderDhcpEntries(node, [MAC_A], a());
    await writeDhcpEntries(old, a());
    const owner = renderDhcpEntries(node, [MAC_A], b());
    expect(owner.tag).not.toBe(old.tag);
    const changes = await writeDhcpEntries(owner, b(), ['cond-a']);
    expect(changes).toEqual({
      written: [owner.opts.path, owner.hosts[0]!.path],
      removed: [hostA(), join(s.optsDir, `ironring-cond-a-${UUID_A}.conf`)],
    });
    expect(await tree(s.hostsDir)).toEqual(['ironring-cond-b-52-54-00-12-34-56.conf']);
    expect(await tree(s.optsDir)).toEqual([`ironring-cond-b-${UUID_A}.conf`]);
  });

  it("rewrites its unchanged host line when another one is there, so dnsmasq reads the owner's last", async () => {
    const owner = renderDhcpEntries(node, [MAC_A], b());
    await writeDhcpEntries(owner, b());
    const before = await stat(hostB());
    await writeFile(hostA(), `${MAC_A},set:ir-cond-a-${UUID_A}-00000000,set:ironring\n`);
    const changes = await writeDhcpEntries(owner, b(), ['cond-a']);
    expect(changes.written).toEqual([hostB()]);
    expect((await stat(hostB())).ino).not.toBe(before.ino);
    expect(await tree(s.hostsDir)).toEqual(['ironring-cond-b-52-54-00-12-34-56.conf']);
  });

  it("the old owner's clean-up after the hand-off leaves the new owner's entries intact", async () => {
    await writeDhcpEntries(renderDhcpEntries(node, [MAC_A], a()), a());
    const owner = renderDhcpEntries(node, [MAC_A], b());
    await writeDhcpEntries(owner, b(), ['cond-a']);
    const snapshotB = [await readFile(hostB(), 'utf8'), await readFile(owner.opts.path, 'utf8')];
    expect(await removeDhcpEntries(UUID_A, [MAC_A], a(), ['cond-b'])).toEqual({ written: [], removed: [] });
    expect([await readFile(hostB(), 'utf8'), await readFile(owner.opts.path, 'utf8')]).toEqual(snapshotB);
  });

  it("a conductor retiring its line while another conductor's live line is there removes its file instead of writing ignore", async () => {
    // An `ignore` read after the owner's line would silence the node in a shared dnsmasq.
    await writeDhcpEntries(renderDhcpEntries(node, [MAC_A], a()), a());
    await writeDhcpEntries(renderDhcpEntries(node, [MAC_A], b()), b());
    expect(await retireDhcpHosts(UUID_A, [MAC_A], a(), ['cond-b'])).toEqual({ written: [], removed: [hostA()] });
    expect(await tree(s.hostsDir)).toEqual(['ironring-cond-b-52-54-00-12-34-56.conf']);
    // With only an `ignore` of the other conductor there, its own line becomes `ignore`.
    await writeFile(hostB(), `${MAC_A},ignore\n`);
    await writeDhcpEntries(renderDhcpEntries(node, [MAC_A], a()), a());
    await retireDhcpHosts(UUID_A, [MAC_A], a(), ['cond-b']);
    expect(await readFile(hostA(), 'utf8')).toBe(`${MAC_A},ignore\n`);
  });

  it('migrates files of the old unprefixed scheme: removed when the owner writes, retired into its own ignore file', async () => {
    const legacyHost = join(s.hostsDir, 'ironring-52-54-00-12-34-56.conf');
    const legacyOpts = join(s.optsDir, `ironring-${UUID_A}.conf`);
    await mkdir(s.hostsDir, { recursive: true });
    await mkdir(s.optsDir, { recursive: true });
    await writeFile(legacyHost, `${MAC_A},set:ir-${UUID_A}-0badc0de,set:ironring\n`);
    await writeFile(legacyOpts, `tag:ir-${UUID_A}-0badc0de,option:tftp-server,10.0.0.9\n`);
    const owner = renderDhcpEntries(node, [MAC_A], b());
    expect((await writeDhcpEntries(owner, b())).removed).toEqual([legacyHost, legacyOpts]);

    await rm(hostB());
    await writeFile(legacyHost, `${MAC_A},set:ir-${UUID_A}-0badc0de,set:ironring\n`);
    expect(await removeDhcpEntries(UUID_A, [MAC_A], b())).toEqual({ written: [hostB()], removed: [legacyHost, owner.opts.path] });
    expect(await readFile(hostB(), 'utf8')).toBe(`${MAC_A},ignore\n`);
  });

  it("the sweep retires only this conductor's entries of nodes without files here; the old scheme counts as its own only when nobody else writes there", async () => {
    await writeDhcpEntries(renderDhcpEntries(node, [MAC_A], a()), a());
    await writeDhcpEntries(renderDhcpEntries({ ...node, uuid: UUID_B }, ['52:54:00:ab:cd:ef'], b()), b());
    const legacyHost = join(s.hostsDir, 'ironring-52-54-00-00-00-09.conf');
    await writeFile(legacyHost, `52:54:00:00:00:09,set:ir-${UUID_B}-0badc0de,set:ironring\n`);
    // cond-a has no node here at all; cond-b's entries are not its to judge, nor the old-scheme file (cond-b writes here).
    expect(await sweepDhcpEntries(a(), async () => false)).toEqual({ retired: [UUID_A], complete: true });
    expect(await readFile(hostA(), 'utf8')).toBe(`${MAC_A},ignore\n`);
    expect(await tree(s.optsDir)).toEqual([`ironring-cond-b-${UUID_B}.conf`]);
    expect(await readFile(legacyHost, 'utf8')).toContain('set:ir-');
    // Alone in the directories, cond-b keeps its node's entries and migrates the old-scheme line.
    await rm(hostA());
    expect(await sweepDhcpEntries(b(), async () => true)).toEqual({ retired: [], complete: true });
    expect(await sweepDhcpEntries(b(), async () => false)).toEqual({ retired: [UUID_B], complete: true });
    expect(await tree(s.hostsDir)).toEqual(['ironring-cond-b-52-54-00-00-00-09.conf', 'ironring-cond-b-52-54-00-ab-cd-ef.conf']);
  });
});
