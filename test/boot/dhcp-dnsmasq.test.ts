/**
 * ironring's DHCP files read by a real dnsmasq (2.90) over shared directories, answering a real DHCP
 * client (busybox udhcpc) across a veth pair between two network namespaces this test creates
 * (addresses 10.77.x.x only inside them). It proves what `dhcp.ts` relies on and what a hand-off
 * must give: the host line dnsmasq read last for a MAC is the one it answers with, and after a
 * hand-off the new owner's options are what the client gets — also after a restart, when dnsmasq
 * reads the directories afresh. (A restart, not SIGHUP: dnsmasq 2.90 as in Debian 12 aborts on
 * SIGHUP with dhcp-hostsdir in use once it has answered a client — seen while writing this test,
 * without any of ironring's files changing; docs/boot.md says so.)
 *
 * Needs root, `ip`, dnsmasq and busybox (Debian busybox-static); skips with one line otherwise.
 */
import { execFile, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { removeDhcpEntries, renderDhcpEntries, writeDhcpEntries } from '../../src/boot/dhcp.js';
import type { DhcpOptions } from '../../src/boot/dhcp.js';
import { findCommand, requirePeer } from '../helpers/peers.js';

const run = promisify(execFile);
const peers = [requirePeer('dnsmasq', 'dnsmasq-base'), requirePeer('busybox', 'busybox-static')].every(Boolean);
const DNSMASQ = findCommand('dnsmasq');
const BUSYBOX = findCommand('busybox');
const IP = findCommand('ip');
const missing = [
  ...(peers ? [] : ['dnsmasq or busybox']),
  ...(process.getuid?.() === 0 ? [] : ['root (network namespaces)']),
  ...(IP ? [] : ['ip (iproute2)']),
];
if (missing.length > 0) console.log(`skipping the real dnsmasq test: missing ${missing.join(', ')}`);

const UUID = '3be26c0b-03f2-4d2e-ae87-c02d7f33c789';
const MAC = '52:54:00:77:00:01';
// Distinct per run, so parallel runs on one machine never share names or subnets.
const id = process.pid % 200;
const NS_SERVER = `irdhcp-s${process.pid}`;
const NS_CLIENT = `irdhcp-c${process.pid}`;
const VETH = { server: `irds${process.pid % 100000}`, client: `irdc${process.pid % 100000}` };
const NET = `10.77.${id + 20}`;

describe.skipIf(missing.length > 0)('a real dnsmasq over shared directories', () => {
  let dir: string;
  let dnsmasq: ChildProcess | undefined;
  let dirs: { hostsDir: string; optsDir: string };
  const logPath = () => join(dir, 'dnsmasq.log');

  const conductor = (owner: string, last: number): DhcpOptions => ({ ...dirs, owner, tftpServer: `${NET}.${last}` });
  const node = { uuid: UUID, bootMode: 'bios', bootInterface: 'pxe' } as const;

  /** Waits until dnsmasq's log says it read `path` (at least `times` times in all). */
  const readBy = async (path: string, times = 1) => {
    const started = Date.now();
    for (;;) {
      const log = await readFile(logPath(), 'utf8').catch(() => '');
      if (log.split('\n').filter((l) => l.endsWith(`read ${path}`)).length >= times) return;
      if (Date.now() - started > 10_000) throw new Error(`dnsmasq did not read ${path}:\n${log.slice(-2000)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  /** One DHCP exchange from the client namespace: the TFTP server (option 66) offered, or null for no answer. */
  const offeredTftp = async (): Promise<string | null> => {
    const out = join(dir, 'lease.txt');
    await rm(out, { force: true });
    await run(IP!, ['netns', 'exec', NS_CLIENT, BUSYBOX!, 'udhcpc', '-i', VETH.client, '-n', '-q', '-f', '-t', '3', '-T', '1', '-O', 'tftp', '-O', 'bootfile', '-s', join(dir, 'udhcpc.sh')], { timeout: 20_000 }).catch(() => undefined);
    const lease = await readFile(out, 'utf8').catch(() => null);
    return lease === null ? null : (/tftp=(\S*)/.exec(lease)?.[1] ?? '');
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'ironring-dnsmasq-'));
    dirs = { hostsDir: join(dir, 'hosts'), optsDir: join(dir, 'opts') };
    await mkdir(dirs.hostsDir);
    await mkdir(dirs.optsDir);
    await writeFile(join(dir, 'udhcpc.sh'), `#!/bin/sh\n[ "$1" = bound ] && echo "ip=$ip tftp=$tftp bootfile=$bootfile" > ${join(dir, 'lease.txt')}\nexit 0\n`);
    await chmod(join(dir, 'udhcpc.sh'), 0o755);
    const sh = async (...args: string[]) => run(IP!, args);
    await sh('netns', 'add', NS_SERVER);
    await sh('netns', 'add', NS_CLIENT);
    await sh('link', 'add', VETH.server, 'type', 'veth', 'peer', 'name', VETH.client);
    await sh('link', 'set', VETH.server, 'netns', NS_SERVER);
    await sh('link', 'set', VETH.client, 'netns', NS_CLIENT);
    await sh('-n', NS_SERVER, 'addr', 'add', `${NET}.1/24`, 'dev', VETH.server);
    await sh('-n', NS_SERVER, 'link', 'set', VETH.server, 'up');
    await sh('-n', NS_CLIENT, 'link', 'set', VETH.client, 'address', MAC);
    await sh('-n', NS_CLIENT, 'link', 'set', VETH.client, 'up');
    const conf = [
      'port=0',
      `interface=${VETH.server}`,
      'bind-interfaces',
      `dhcp-range=${NET}.100,${NET}.200,255.255.255.0,2m`,
      `dhcp-hostsdir=${dirs.hostsDir}`,
      `dhcp-optsdir=${dirs.optsDir}`,
      'dhcp-match=set:ipxe,175',
      'dhcp-ignore=tag:!known',
      `dhcp-leasefile=${join(dir, 'leases')}`,
      // No ICMP check of a new address before offering it (up to 3 s): answers come at once.
      'no-ping',
      'log-dhcp',
      `log-facility=${logPath()}`,
      `pid-file=${join(dir, 'dnsmasq.pid')}`,
      'user=root',
    ];
    await writeFile(join(dir, 'dnsmasq.conf'), `${conf.join('\n')}\n`);
    await startDnsmasq();
  }, 30_000);

  const startDnsmasq = async () => {
    const before = (await readFile(logPath(), 'utf8').catch(() => '')).split('DHCP, IP range').length;
    dnsmasq = spawn(IP!, ['netns', 'exec', NS_SERVER, DNSMASQ!, '--keep-in-foreground', `--conf-file=${join(dir, 'dnsmasq.conf')}`], { stdio: 'inherit' });
    const started = Date.now();
    while ((await readFile(logPath(), 'utf8').catch(() => '')).split('DHCP, IP range').length <= before) {
      if (Date.now() - started > 10_000 || dnsmasq.exitCode !== null) throw new Error('dnsmasq did not start');
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  const stopDnsmasq = async () => {
    const child = dnsmasq;
    dnsmasq = undefined;
    if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  };

  afterAll(async () => {
    await stopDnsmasq();
    // Deleting a namespace removes its end of the veth pair, and with it the other end.
    await run(IP!, ['netns', 'del', NS_CLIENT]).catch(() => undefined);
    await run(IP!, ['netns', 'del', NS_SERVER]).catch(() => undefined);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("after a hand-off the client gets the new owner's options, also after the old owner's clean-up and a restart", async () => {
    const a = conductor('cond-a', 11);
    const b = conductor('cond-b', 12);
    const old = renderDhcpEntries(node, [MAC], a);
    await writeDhcpEntries(old, a);
    await readBy(old.hosts[0]!.path);
    expect(await offeredTftp()).toBe(`${NET}.11`);

    // cond-b owns the node now: its options, its host line, then cond-a's files go.
    const owner = renderDhcpEntries(node, [MAC], b);
    await writeDhcpEntries(owner, b, ['cond-a']);
    await readBy(owner.hosts[0]!.path);
    expect(await offeredTftp()).toBe(`${NET}.12`);

    // cond-a's clean-up as the former owner touches nothing of cond-b's.
    expect(await removeDhcpEntries(UUID, [MAC], a, ['cond-b'])).toEqual({ written: [], removed: [] });
    expect(await offeredTftp()).toBe(`${NET}.12`);

    // A restarted dnsmasq reads the directories afresh: only cond-b's files are there.
    const reads = (await readFile(logPath(), 'utf8')).split('\n').filter((l) => l.endsWith(`read ${owner.hosts[0]!.path}`)).length;
    await stopDnsmasq();
    await startDnsmasq();
    await readBy(owner.hosts[0]!.path, reads + 1);
    expect(await offeredTftp()).toBe(`${NET}.12`);

    // The owner retires its line (the node stops booting from the network): nobody answers.
    await removeDhcpEntries(UUID, [MAC], b, ['cond-a']);
    await readBy(owner.hosts[0]!.path, reads + 2);
    expect(await offeredTftp()).toBeNull();
  }, 120_000);

  it("an `ignore` line read after the owner's silences the MAC: why others' files are removed, never rewritten", async () => {
    const a = conductor('cond-c', 13);
    const b = conductor('cond-d', 14);
    const owner = renderDhcpEntries(node, [MAC], b);
    await writeDhcpEntries(renderDhcpEntries(node, [MAC], a), a);
    await writeDhcpEntries(owner, b);
    await readBy(owner.hosts[0]!.path);
    expect(await offeredTftp()).toBe(`${NET}.14`);
    const other = join(dirs.hostsDir, `ironring-cond-c-${MAC.replaceAll(':', '-')}.conf`);
    await writeFile(other, `${MAC},ignore\n`);
    await readBy(other, 2);
    expect(await offeredTftp()).toBeNull();
    // The owner's line written again is read last, and answers again.
    await writeDhcpEntries(owner, b, ['cond-c']);
    await readBy(owner.hosts[0]!.path, 2);
    expect(await offeredTftp()).toBe(`${NET}.14`);
  }, 120_000);
});
