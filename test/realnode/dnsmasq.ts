/**
 * dnsmasq on the lab's wire, in one of two roles. Files mode (one per conductor namespace): it hands
 * out addresses only to MACs with a host entry in its conductor's `dhcp_hostsdir`
 * (`dhcp-ignore=tag:!known`), with the boot options of `dhcp_optsdir` — the files ironring writes.
 * Site DHCP (no directories): addresses for any client and no boot options, the site server beside
 * which the conductors' ProxyDHCP responders answer. `--log-dhcp` to a file shows who answered.
 *
 * Router advertisements: every lab dnsmasq also advertises the lab's IPv6 /64 (`ra-only`, router
 * lifetime 0: a prefix, no default route). iPXE configures a NIC with DHCP and IPv6 router discovery
 * at once and prints "Configuring … ok" only when both are done; on a wire with no IPv6 router its
 * router solicitations back off (0.25, 0.5, 1, 2, 4, 8 s) until it gives up, about 16 s after it
 * started — measured here as 16–17 s of every ~21 s quiet boot (issue #16). A site's provisioning
 * network with an IPv6 router answers at once; one without pays those 16 s on every iPXE boot, with
 * any DHCP server (not ironring's doing, see docs/testing.md).
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { findCommand } from '../helpers/peers.js';
import type { Namespace } from './network.js';

export interface DnsmasqSpec {
  ns: Namespace;
  /** First and last address it leases (inside the lab's /24). */
  range: [string, string];
  /** Files mode: the conductor's directories. Both absent: site DHCP (addresses only). */
  hostsDir?: string;
  optsDir?: string;
  /** Its log (`--log-dhcp`), lease and pid files go here, named `dnsmasq-<ns>.*`. */
  dir: string;
}

export interface Dnsmasq {
  log(): string;
  stop(): Promise<void>;
}

export async function startDnsmasq(spec: DnsmasqSpec): Promise<Dnsmasq> {
  const binary = findCommand('dnsmasq');
  if (binary === null) throw new Error('dnsmasq not found (Debian package dnsmasq-base)');
  if ((spec.hostsDir === undefined) !== (spec.optsDir === undefined)) throw new Error('dnsmasq: hostsDir and optsDir go together');
  const base = path.join(spec.dir, `dnsmasq-${spec.ns.name}`);
  const logFile = `${base}.log`;
  const args = [
    '--keep-in-foreground',
    '--conf-file=/dev/null',
    '--port=0', // no DNS
    `--interface=${spec.ns.iface}`,
    '--bind-interfaces',
    // As root it would switch to `nobody`, who may not read the hosts and option files.
    '--user=root',
    `--dhcp-range=${spec.range[0]},${spec.range[1]},255.255.255.0,10m`,
    // No router: nothing on the lab's wire routes anywhere.
    '--dhcp-option=3',
    // IPv6 router advertisements, so that iPXE's router discovery ends at its first solicitation.
    '--enable-ra',
    `--dhcp-range=${spec.ns.ipv6Prefix},ra-only,64`,
    `--ra-param=${spec.ns.iface},0,0`,
    `--dhcp-leasefile=${base}.leases`,
    `--pid-file=${base}.pid`,
    '--log-dhcp',
    `--log-facility=${logFile}`,
  ];
  if (spec.hostsDir !== undefined && spec.optsDir !== undefined) {
    mkdirSync(spec.hostsDir, { recursive: true });
    mkdirSync(spec.optsDir, { recursive: true });
    args.push(
      `--dhcp-hostsdir=${spec.hostsDir}`,
      `--dhcp-optsdir=${spec.optsDir}`,
      '--dhcp-ignore=tag:!known',
      // iPXE sends option 175: ironring's option files give it boot.ipxe over HTTP (tag:ipxe).
      '--dhcp-match=set:ipxe,175',
    );
  }
  const child: ChildProcess = spawn('ip', ['netns', 'exec', spec.ns.name, binary, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const log = () => {
    try {
      return readFileSync(logFile, 'utf8');
    } catch {
      return '';
    }
  };
  // Ready once it logs that DHCP is on; a bad option makes it exit at once.
  const started = Date.now();
  while (!/DHCP, IP range/.test(log())) {
    if (child.exitCode !== null) throw new Error(`dnsmasq in ${spec.ns.name} exited ${child.exitCode}: ${stderr.trim()} ${log().trim()}`);
    if (Date.now() - started > 15_000) throw new Error(`dnsmasq in ${spec.ns.name} did not start within 15 s: ${stderr.trim()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  let stopped = false;
  return {
    log,
    async stop() {
      if (stopped) return;
      stopped = true;
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}
