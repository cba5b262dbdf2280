import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { removeDhcpEntries, renderDhcpEntries, tftpHost, writeDhcpEntries } from '../../src/boot/dhcp.js';
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
  options = { hostsDir: s.hostsDir, optsDir: s.optsDir, tftpServer: '10.0.0.5:6969', httpUrl: 'http://10.0.0.5:8080' };
});
afterEach(() => s.dispose());

const node = { uuid: UUID_A, bootMode: 'bios', bootInterface: 'pxe' } as const;

describe('dnsmasq entries', () => {
  it('tags each MAC and points the tag at this conductor with the PXELINUX boot file', () => {
    const entries = renderDhcpEntries(node, [MAC_A, MAC_A2], options);
    expect(entries.tag).toMatch(new RegExp(`^ir-${UUID_A}-[0-9a-f]{8}$`));
    const t = entries.tag;
    expect(entries.hosts).toEqual([
      { mac: MAC_A, path: join(s.hostsDir, 'ironring-52-54-00-12-34-56.conf'), content: `${MAC_A},set:${t},set:ironring\n` },
      { mac: MAC_A2, path: join(s.hostsDir, 'ironring-52-54-00-12-34-57.conf'), content: `${MAC_A2},set:${t},set:ironring\n` },
    ]);
    expect(entries.opts.path).toBe(join(s.optsDir, `ironring-${UUID_A}.conf`));
    expect(entries.opts.content).toBe(
      [
        `tag:${t},option:server-ip-address,10.0.0.5`,
        `tag:${t},option:tftp-server,10.0.0.5`,
        `tag:${t},150,10.0.0.5`,
        `tag:${t},option:bootfile-name,pxelinux.0`,
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
    expect(await writeDhcpEntries(entries)).toHaveLength(3);
    expect(await writeDhcpEntries(entries)).toEqual([]);
    expect(await removeDhcpEntries(UUID_A, [MAC_A, MAC_A2], options)).toHaveLength(3);
    expect(await readFile(join(s.hostsDir, 'ironring-52-54-00-12-34-56.conf'), 'utf8')).toBe(`${MAC_A},ignore\n`);
    expect(await tree(s.optsDir)).toEqual([]);
    expect(await removeDhcpEntries(UUID_A, [MAC_A, MAC_A2], options)).toEqual([]);
  });

  it("with cleanUp 'remove' deletes the host files instead", async () => {
    await writeDhcpEntries(renderDhcpEntries(node, [MAC_A], options));
    await removeDhcpEntries(UUID_A, [MAC_A], { ...options, cleanUp: 'remove' });
    expect(await tree(s.hostsDir)).toEqual([]);
  });

  it('leaves a MAC alone that another node has claimed since', async () => {
    await writeDhcpEntries(renderDhcpEntries(node, [MAC_A], options));
    const other = renderDhcpEntries({ ...node, uuid: UUID_B }, [MAC_A], options);
    await writeDhcpEntries(other);
    await removeDhcpEntries(UUID_A, [MAC_A], options);
    expect(await readFile(join(s.hostsDir, 'ironring-52-54-00-12-34-56.conf'), 'utf8')).toBe(other.hosts[0]?.content);
  });

  it('prepare writes the entries and cleanUp retires them through the boot environment', async () => {
    const env = s.env({ dhcpHostsDir: s.hostsDir, dhcpOptsDir: s.optsDir, tftpServer: '10.0.0.5' });
    const images = await s.images();
    const changes = await env.prepare({ uuid: UUID_A }, [{ address: MAC_A, pxeEnabled: true }, { address: MAC_A2, pxeEnabled: false }], images);
    expect(changes.written).toContain(join(s.optsDir, `ironring-${UUID_A}.conf`));
    expect(await tree(s.hostsDir)).toEqual(['ironring-52-54-00-12-34-56.conf']);
    // The port stops being pxe-enabled: its host line is retired at the next prepare.
    await env.prepare({ uuid: UUID_A }, [{ address: MAC_A, pxeEnabled: false }], images);
    expect(await readFile(join(s.hostsDir, 'ironring-52-54-00-12-34-56.conf'), 'utf8')).toBe(`${MAC_A},ignore\n`);
  });
});
