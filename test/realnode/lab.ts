/**
 * A real-node lab: the wire (network.ts), a SQLite database, the REST API in this process, any
 * number of real `ironring conductor` processes each in its own namespace with its own dnsmasq
 * (files mode), and machines — a qemu VM behind a pyghmi virtual BMC. `openLab()` builds it,
 * `lab.close()` removes every process, namespace, link and file it made (and a crashed run's
 * leftovers are removed by the next run that claims its slot).
 *
 * Addresses on 10.77.<slot>.0/24: .1 the host (API, BMCs), .2–.99 conductors (and the site DHCP
 * server), .100–.199 leases of the conductors' dnsmasqs, .200–.249 the site DHCP server's.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, createReadStream, mkdirSync, readFileSync, statSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildApi } from '../../src/api/server.js';
import { ensureSecret } from '../../src/auth/hmac.js';
import { createLogger } from '../../src/common/logger.js';
import { loadConfig } from '../../src/config/load.js';
import { openDatabase } from '../../src/db/connect.js';
import type { Store } from '../../src/db/connect.js';
import { migrateDatabase } from '../../src/db/migrate.js';
import { startBmcSimulator } from '../drivers/bmc-simulator.js';
import type { BmcSimulator } from '../drivers/bmc-simulator.js';
import { startConductor, TEST_HEARTBEAT_TIMEOUT } from '../helpers/conductors.js';
import type { RunningConductor } from '../helpers/conductors.js';
import { createTestDatabase } from '../helpers/databases.js';
import type { TestDatabase } from '../helpers/databases.js';
import { bootAssets } from './assets.js';
import type { BootAssets } from './assets.js';
import { startDnsmasq } from './dnsmasq.js';
import type { Dnsmasq } from './dnsmasq.js';
import { claimSlot, createLabNetwork } from './network.js';
import type { LabNetwork, Namespace } from './network.js';
import { defineVm } from './vm.js';
import type { Firmware, Vm, VmSpec } from './vm.js';

/** Network boot programs every conductor's tftp_root gets, from the Debian packages that ship them. */
export const TFTP_BOOT_FILES: Readonly<Record<string, string>> = {
  'pxelinux.0': '/usr/lib/PXELINUX/pxelinux.0',
  'ldlinux.c32': '/usr/lib/syslinux/modules/bios/ldlinux.c32',
  'snponly.efi': '/usr/lib/ipxe/snponly.efi',
  'undionly.kpxe': '/usr/lib/ipxe/undionly.kpxe',
};

export const HTTP_BOOT_PORT = 8080;

/** A conductor of the lab: its namespace, files and dnsmasq, and its process while it runs. */
export interface LabConductor {
  /** Its ring name (`<prefix>-<name>`). */
  host: string;
  ns: Namespace;
  dataDir: string;
  hostsDir: string;
  optsDir: string;
  /** Its own dnsmasq, or null when started without one (options.dnsmasq false). */
  dnsmasq: Dnsmasq | null;
  /** Extra environment of its process (IRONRING_* options), kept across restarts. */
  env: Record<string, string>;
  /** The process, or null while stopped. */
  proc: RunningConductor | null;
}

/** How addConductor sets a conductor up; the defaults give it its own DHCP files and dnsmasq. */
export interface LabConductorOptions {
  /**
   * dnsmasq directories to write into instead of its own (`<slot>/<name>/dhcp-hosts`, `dhcp-opts`):
   * give several conductors the same ones for the shared-directories layout.
   */
  dhcpDirs?: { hostsDir: string; optsDir: string };
  /** Whether to start a dnsmasq in its namespace over its DHCP directories. Default true. */
  dnsmasq?: boolean;
  /** Extra IRONRING_* settings of its process (a ProxyDHCP switch, a DHCP clean-up mode…). */
  env?: Record<string, string>;
}

/** A machine: the VM and the BMC that powers it. */
export interface LabMachine {
  name: string;
  mac: string;
  vm: Vm;
  bmc: BmcSimulator;
}

export interface Lab {
  network: LabNetwork;
  assets: BootAssets;
  store: Store;
  /** The REST API (in this process; it reaches the conductors' RPC over the bridge). */
  app: FastifyInstance;
  databaseUrl: string;
  /** The API's URL on the lab network (`http://<net>.1:<port>`): what a deploy agent in a VM reaches. */
  apiUrl: string;
  /**
   * Serves `file` over HTTP on the lab network (as an operator's image server would) and returns
   * its URL; the same path again gives the same URL.
   */
  serveFile(file: string, options?: { bytesPerSecond?: number }): string;
  conductors: LabConductor[];
  machines: LabMachine[];
  /**
   * Adds a conductor in namespace `<prefix>-<name>` at `<net>.<host>`: its tftp_root with the boot
   * programs, its dnsmasq (leasing `<net>.<100 + 10·k>`…+9 for the k-th conductor) and its process.
   */
  addConductor(name: string, host: number, options?: LabConductorOptions): Promise<LabConductor>;
  /**
   * Adds a DHCP server in a namespace of its own, `<prefix>-<name>` at `<net>.<host>`, leasing
   * `<net>.200–249`. Without `dhcpDirs`: the site's server of the ProxyDHCP layout, addresses for any
   * client and no boot options. With `dhcpDirs`: the one dnsmasq of the shared-directories layout,
   * in files mode over the directories every conductor writes (give those conductors the same
   * `dhcpDirs` and `dnsmasq: false`) — in its own namespace, so stopping or killing a conductor
   * leaves it running, as a site's dnsmasq would.
   */
  addSiteDhcp(name: string, host: number, dhcpDirs?: { hostsDir: string; optsDir: string }): Promise<Dnsmasq>;
  /** Starts a stopped conductor again, in its namespace with its data directory. */
  startConductor(c: LabConductor): Promise<RunningConductor>;
  /** SIGTERM (graceful: waits for its exit) or SIGKILL. */
  stopConductor(c: LabConductor, signal?: 'SIGTERM' | 'SIGKILL'): Promise<void>;
  /** Defines a VM on the lab's tap and starts its BMC; one machine at a time (they share the tap): the previous BMCs stop. */
  addMachine(name: string, firmware: Firmware, options?: Pick<VmSpec, 'memoryMiB' | 'cpus' | 'rebootTimeoutMs' | 'disks' | 'extraNics'>): Promise<LabMachine>;
  /**
   * Powers a machine `on` or `off` (or reads `status`) through its BMC with ipmitool, as an operator
   * would, bypassing ironring: a reboot loop powers on, waits for the marker, and the ramdisk powers
   * itself off. Resolves to ipmitool's output; throws when it fails.
   */
  power(machine: LabMachine, action: 'on' | 'off' | 'status'): string;
  /** Runs `ipmitool <args>` against a machine's BMC (e.g. `chassis bootdev pxe`); its output, or throws. */
  ipmitool(machine: LabMachine, args: readonly string[]): string;
  /** The last lines of every conductor's output, dnsmasq log and serial console: what to print when a scenario fails. */
  diagnostics(): string;
  close(): Promise<void>;
}

function tail(text: string, lines = 25): string {
  // eslint-disable-next-line no-control-regex -- the serial console's escape sequences
  return text.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '').split(/\r?\n/).slice(-lines).join('\n');
}

function readOrEmpty(file: string): string {
  try {
    return readFileSync(file, 'latin1');
  } catch {
    return '';
  }
}

/** How `openLab` sets the lab up. */
export interface LabOptions {
  /** Extra environment (IRONRING_* options) of the lab's API, e.g. auto-discovery. */
  apiEnv?: Record<string, string>;
}

export async function openLab(options: LabOptions = {}): Promise<Lab> {
  const assets = bootAssets();
  const slot = claimSlot();
  const cleanups: (() => Promise<void> | void)[] = [() => slot.release()];
  const close = async () => {
    for (const fn of cleanups.splice(0).reverse()) {
      try {
        await fn();
      } catch (err) {
        console.warn(`real-node lab clean-up: ${(err as Error).message}`);
      }
    }
  };
  try {
    const network = createLabNetwork(slot);
    const target: TestDatabase = await createTestDatabase('sqlite');
    cleanups.push(() => target.drop());
    const store = await openDatabase(target.url);
    cleanups.push(() => store.close());
    await migrateDatabase(store);
    const secretFile = path.join(slot.dir, 'rpc-secret');
    ensureSecret(secretFile);
    const config = loadConfig({ env: { IRONRING_CONDUCTOR_HEARTBEAT_TIMEOUT: String(TEST_HEARTBEAT_TIMEOUT), IRONRING_JSON_RPC_SECRET_FILE: secretFile, ...options.apiEnv } }).config;
    const app = buildApi({ store, config, logger: createLogger({ level: 'silent', pretty: false }) });
    cleanups.push(() => app.close());
    // Listening on the bridge too: deploy agents in the VMs look up and heartbeat here.
    const apiUrl = await app.listen({ host: network.hostAddress, port: 0 });
    const served = new Map<string, { file: string; bytesPerSecond?: number }>();
    const files = http.createServer((req, res) => {
      const entry = served.get(decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname));
      if (entry === undefined || (req.method !== 'GET' && req.method !== 'HEAD')) {
        res.writeHead(404).end();
        return;
      }
      const size = statSync(entry.file).size;
      res.writeHead(200, { 'content-length': size, 'content-type': 'application/octet-stream' });
      // HEAD: what Ironic's conductor asks before a deploy (it validates the image URL).
      if (req.method === 'HEAD') {
        res.end();
        return;
      }
      if (entry.bytesPerSecond === undefined) {
        createReadStream(entry.file).pipe(res);
        return;
      }
      // A slow image server: 64 KiB at a time at the given rate (a scenario that needs the write to last).
      const rate = entry.bytesPerSecond;
      void (async () => {
        const started = Date.now();
        let sent = 0;
        for await (const chunk of createReadStream(entry.file, { highWaterMark: 64 * 1024 }) as AsyncIterable<Buffer>) {
          if (res.destroyed) return;
          if (!res.write(chunk)) await new Promise((r) => res.once('drain', r));
          sent += chunk.length;
          const ahead = (sent / rate) * 1000 - (Date.now() - started);
          if (ahead > 0) await new Promise((r) => setTimeout(r, ahead));
        }
        res.end();
      })().catch(() => res.destroy());
    });
    await new Promise<void>((resolve) => files.listen(0, network.hostAddress, resolve));
    cleanups.push(() => new Promise<void>((resolve) => files.close(() => resolve())));
    const filesBase = `http://${network.hostAddress}:${(files.address() as { port: number }).port}`;

    const conductors: LabConductor[] = [];
    const machines: LabMachine[] = [];

    const startProcess = async (c: LabConductor): Promise<RunningConductor> => {
      c.proc = await startConductor(target.url, c.host, {
        dataDir: c.dataDir,
        netns: c.ns.name,
        addresses: { rpc: `${c.ns.address}:0`, tftp: `${c.ns.address}:69`, http: `${c.ns.address}:${HTTP_BOOT_PORT}` },
        env: {
          IRONRING_LOG_LEVEL: 'info',
          IRONRING_JSON_RPC_SECRET_FILE: secretFile,
          IRONRING_CONDUCTOR_FILE_URL_ALLOWED_PATHS: assets.cacheRoot,
          IRONRING_DNSMASQ_DHCP_HOSTSDIR: c.hostsDir,
          IRONRING_DNSMASQ_DHCP_OPTSDIR: c.optsDir,
          // dnsmasq files mode: the embedded ProxyDHCP responder would be a second DHCP server on
          // the wire (it binds 0.0.0.0:67 in the namespace). A ProxyDHCP scenario turns it on in env.
          IRONRING_DHCP_PROXY_ENABLED: 'false',
          IRONRING_DEPLOY_AGENT_API_URL: apiUrl,
          ...c.env,
        },
      });
      return c.proc;
    };
    const stopProcess = async (c: LabConductor, signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM') => {
      const proc = c.proc;
      if (proc === null) return;
      c.proc = null;
      if (proc.proc.child.exitCode === null && proc.proc.child.signalCode === null) proc.proc.child.kill(signal);
      await proc.proc.exited;
    };

    const lab: Lab = {
      network,
      assets,
      store,
      app,
      databaseUrl: target.url,
      apiUrl,
      serveFile(file, options = {}) {
        for (const [k, e] of served) if (e.file === file && e.bytesPerSecond === options.bytesPerSecond) return `${filesBase}${k}`;
        const key = `/files/${served.size}/${path.basename(file)}`;
        served.set(key, { file, ...(options.bytesPerSecond !== undefined ? { bytesPerSecond: options.bytesPerSecond } : {}) });
        return `${filesBase}${key}`;
      },
      conductors,
      machines,
      async addConductor(name, host, options = {}) {
        const ns = network.addNamespace(name, host);
        cleanups.push(() => network.removeNamespace(ns));
        const base = path.join(slot.dir, name);
        const dataDir = path.join(base, 'data');
        const tftpRoot = path.join(dataDir, 'tftpboot');
        mkdirSync(tftpRoot, { recursive: true });
        for (const [file, source] of Object.entries(TFTP_BOOT_FILES)) copyFileSync(source, path.join(tftpRoot, file));
        const { hostsDir, optsDir } = options.dhcpDirs ?? { hostsDir: path.join(base, 'dhcp-hosts'), optsDir: path.join(base, 'dhcp-opts') };
        mkdirSync(hostsDir, { recursive: true });
        mkdirSync(optsDir, { recursive: true });
        let dnsmasq: Dnsmasq | null = null;
        if (options.dnsmasq ?? true) {
          const first = 100 + 10 * conductors.length;
          if (first + 9 > 199) throw new Error('at most 10 conductors with their own dnsmasq (leases .100–.199)');
          const started = await startDnsmasq({ ns, range: [`${slot.net}.${first}`, `${slot.net}.${first + 9}`], hostsDir, optsDir, dir: slot.dir });
          cleanups.push(() => started.stop());
          dnsmasq = started;
        }
        const c: LabConductor = { host: `${slot.prefix}-${name}`, ns, dataDir, hostsDir, optsDir, dnsmasq, env: { ...options.env }, proc: null };
        conductors.push(c);
        cleanups.push(() => stopProcess(c, 'SIGKILL'));
        await startProcess(c);
        return c;
      },
      async addSiteDhcp(name, host, dhcpDirs) {
        const ns = network.addNamespace(name, host);
        cleanups.push(() => network.removeNamespace(ns));
        const dnsmasq = await startDnsmasq({ ns, range: [`${slot.net}.200`, `${slot.net}.249`], dir: slot.dir, ...dhcpDirs });
        cleanups.push(() => dnsmasq.stop());
        return dnsmasq;
      },
      startConductor: startProcess,
      stopConductor: stopProcess,
      async addMachine(name, firmware, options = {}) {
        // The machines share the tap device: the previous one's BMC goes, and its VM with it.
        for (const m of machines) await m.bmc.stop();
        const index = machines.length + 1;
        const mac = `52:54:00:77:${slot.slot.toString(16).padStart(2, '0')}:${index.toString(16).padStart(2, '0')}`;
        const vm = defineVm({ name, dir: slot.dir, tap: network.tap, mac, firmware, ...options });
        const bmc = await startBmcSimulator('admin', 'password', { address: network.hostAddress, machine: vm.command });
        // The BMC takes its VM with it (PR_SET_PDEATHSIG); the pid file catches a VM that outlived it.
        cleanups.push(() => bmc.stop());
        const machine = { name, mac, vm, bmc };
        machines.push(machine);
        return machine;
      },
      power(machine, action) {
        return lab.ipmitool(machine, ['power', action]);
      },
      ipmitool(machine, args) {
        const res = spawnSync('ipmitool', ['-I', 'lanplus', '-H', network.hostAddress, '-p', String(machine.bmc.port), '-U', machine.bmc.user, '-P', machine.bmc.password, ...args], { encoding: 'utf8', timeout: 60_000 });
        if (res.status !== 0) throw new Error(`ipmitool ${args.join(' ')} for ${machine.name} exited ${res.status}: ${res.stderr.trim()}`);
        return res.stdout.trim();
      },
      diagnostics() {
        const parts: string[] = [];
        for (const c of conductors) {
          if (c.proc !== null) parts.push(`--- conductor ${c.host} output\n${tail(c.proc.proc.stdout() + c.proc.proc.stderr())}`);
          if (c.dnsmasq !== null) parts.push(`--- dnsmasq of ${c.host}\n${tail(c.dnsmasq.log())}`);
        }
        for (const m of machines) parts.push(`--- BMC ${m.name}: ${m.bmc.events.join(', ')}\n--- serial console of ${m.name}\n${tail(readOrEmpty(m.vm.serialLog))}`);
        return parts.join('\n');
      },
      close,
    };
    return lab;
  } catch (err) {
    await close();
    throw err;
  }
}
