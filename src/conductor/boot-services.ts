/**
 * A conductor's boot services (DESIGN §6): the boot environment (per-node files, image cache, DHCP
 * entries), the embedded TFTP and HTTP boot servers and the ProxyDHCP responder, built from
 * configuration. The addresses nodes should use are derived here and published in the conductor's
 * row. The responder answers for the MACs the boot environment reports as served, so it is wired to
 * the environment here.
 */
import { mkdir } from 'node:fs/promises';
import { isIPv4 } from 'node:net';
import { networkInterfaces } from 'node:os';
import { sep } from 'node:path';
import { BootEnvironment, startHttpBootServer } from '../boot/index.js';
import type { HttpBootServer, HttpBootStats } from '../boot/index.js';
import { tftpHost } from '../boot/dhcp.js';
import { combinedActivity, lingerWhileBusy } from '../boot/linger.js';
import type { LingerReport } from '../boot/linger.js';
import { DiscoveryAnswers } from '../boot/discovery.js';
import { OwnedMacs, startProxyDhcp } from '../boot/proxydhcp/index.js';
import type { ProxyDhcpResponder, ProxyDhcpStats } from '../boot/proxydhcp/index.js';
import { startTftpServer } from '../boot/tftp/index.js';
import type { TftpServer, TftpStats } from '../boot/tftp/index.js';
import { InstanceImages } from '../boot/instance-images.js';
import { ListenError } from '../common/errors.js';
import { splitAddress } from '../common/listen.js';
import type { Logger } from '../common/logger.js';
import { splitList } from '../config/load.js';
import type { Config } from '../config/options.js';

export interface BootServices {
  environment: BootEnvironment;
  /** `host:port` nodes use for TFTP, or null when no TFTP server runs here. */
  tftpAddress: string | null;
  /** Base URL nodes use for HTTP boot, or null. */
  httpUrl: string | null;
  /** Converts qcow2 instance images and serves them under `http_root`; null without an HTTP boot URL. */
  instanceImages: InstanceImages | null;
  /** The embedded TFTP server's counters, or null when it does not run here. */
  tftpStats(): TftpStats | null;
  /** The embedded HTTP boot server's counters, or null when it does not run here. */
  httpBootStats(): HttpBootStats | null;
  /** The ProxyDHCP responder, or null when it is off or could not bind. */
  proxyDhcp: ProxyDhcpResponder | null;
  /** The ProxyDHCP responder's counters, or null when it does not run here. */
  proxyDhcpStats(): ProxyDhcpStats | null;
  /** The ProxyDHCP responder's answers for unknown machines: armed by the conductor (`discovery-boot.ts`). */
  discovery: DiscoveryAnswers;
  /**
   * Keeps the HTTP and TFTP servers serving while a transfer is in flight or a machine asked (or
   * was answered) recently, up to `BOOT_LINGER.maxMs`: a stopping conductor's last act before
   * `close()`, so a boot that met the hand-off finishes here instead of being cut (`boot/linger.ts`).
   */
  linger(): Promise<LingerReport>;
  /** Closes the ProxyDHCP responder first (no answer from here from then on), then the servers. */
  close(): Promise<void>;
}

/**
 * How long a stopping conductor's boot servers serve on (ms). Quiet: iPXE asks for the next file
 * within moments of the last (`boot.ipxe`, its config, kernel, initrd), and a DHCP answer is
 * followed by the first fetch within a second or two on a healthy network. Max: a 13 MB kernel on
 * a loaded link, and no more — a client gone silent must not hold a stop up.
 */
export const BOOT_LINGER = { quietMs: 2_000, maxMs: 10_000 } as const;

/** The address other machines reach this host by: the bind host, or the first external IPv4 address. */
export function reachableHost(bindHost: string): string {
  if (bindHost !== '0.0.0.0' && bindHost !== '::' && bindHost !== '') return bindHost;
  for (const addresses of Object.values(networkInterfaces())) {
    for (const a of addresses ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return '127.0.0.1';
}

/**
 * Which servers may be skipped (with a warning) when their address cannot be bound: `ironring up`
 * on its default addresses, so a first run as an ordinary user (no port 69) still comes up.
 */
export interface OptionalServers {
  tftp?: boolean;
  http?: boolean;
}

async function optional<T>(enabled: boolean | undefined, start: () => Promise<T>, logger: Logger): Promise<T | undefined> {
  try {
    return await start();
  } catch (err) {
    if (!enabled || !(err instanceof ListenError)) throw err;
    logger.warn(`${err.message}; continuing without it`);
    return undefined;
  }
}

/**
 * The IPv4 address the ProxyDHCP responder names itself by (option 54): `[dhcp]
 * proxy_server_address`, else the TFTP host nodes use when it is IPv4, else the bind address, else
 * this host's first IPv4 address.
 */
export function proxyServerAddress(config: Config, tftpAddress: string | null): string {
  if (config.dhcp.proxy_server_address) return config.dhcp.proxy_server_address;
  const tftp = tftpAddress ? tftpHost(tftpAddress) : '';
  if (isIPv4(tftp)) return tftp;
  return reachableHost(config.dhcp.proxy_address);
}

export async function startBootServices(config: Config, logger: Logger, optionalServers: OptionalServers = {}): Promise<BootServices> {
  const { pxe, deploy, dnsmasq } = config;
  const fileUrlAllowedPaths = splitList(config.conductor.file_url_allowed_paths);
  // The image directories under data_dir (the default `<data_dir>/images`) exist from the start, so
  // an operator sees where file:// images go; directories elsewhere are the operator's to create.
  const ownImageDirs = fileUrlAllowedPaths.filter((dir) => dir.startsWith(config.DEFAULT.data_dir + sep));
  await Promise.all(
    [pxe.tftp_root, deploy.http_root, pxe.tftp_master_path, ...ownImageDirs].map((dir) => mkdir(dir, { recursive: true })),
  );
  let tftp: TftpServer | undefined;
  let http: HttpBootServer | undefined;
  let proxyDhcp: ProxyDhcpResponder | undefined;
  const close = async () => {
    await proxyDhcp?.close();
    await Promise.all([tftp?.close(), http?.close()]);
  };
  try {
    let tftpAddress: string | null = null;
    if (pxe.tftp_server_enabled) {
      tftp = await optional(optionalServers.tftp, () => startTftpServer({
          root: pxe.tftp_root,
          address: pxe.tftp_address,
          busyPollUs: pxe.tftp_busy_poll_us,
          engine: pxe.tftp_engine,
          maxTransfers: pxe.tftp_max_transfers,
          maxTransfersPerClient: pxe.tftp_max_transfers_per_client,
          maxIdleMs: pxe.tftp_max_idle * 1000,
          logger: logger.child({ component: 'tftp' }),
        }), logger);
      if (tftp) {
        const bound = tftp.address();
        tftpAddress = `${pxe.tftp_server || reachableHost(bound.host)}:${bound.port}`;
      }
    } else if (pxe.tftp_server) {
      tftpAddress = pxe.tftp_server;
    }
    let httpUrl: string | null = deploy.http_url || null;
    if (deploy.http_server_enabled) {
      http = await optional(optionalServers.http, () => startHttpBootServer({ root: deploy.http_root, address: deploy.http_address, logger: logger.child({ component: 'http-boot' }) }), logger);
      if (http && !httpUrl) {
        const port = new URL(http.url).port;
        httpUrl = `http://${reachableHost(splitAddress(deploy.http_address).host)}:${port}`;
      }
    }
    const owned = new OwnedMacs();
    const discovery = new DiscoveryAnswers();
    const bootFiles = { pxeBios: pxe.pxe_bootfile_name, pxeUefi: pxe.uefi_pxe_bootfile_name, ipxeBios: pxe.ipxe_bootfile_name, ipxeUefi: pxe.uefi_ipxe_bootfile_name };
    const environment = new BootEnvironment({
      tftpRoot: pxe.tftp_root,
      masterPath: pxe.tftp_master_path,
      httpRoot: deploy.http_root,
      ...(httpUrl ? { httpUrl } : {}),
      ...(tftpAddress ? { tftpServer: tftpAddress } : {}),
      // DHCP file names and tags carry the conductor's host name: conductors sharing the directories never mix entries.
      ...(dnsmasq.dhcp_hostsdir && dnsmasq.dhcp_optsdir ? { dhcpHostsDir: dnsmasq.dhcp_hostsdir, dhcpOptsDir: dnsmasq.dhcp_optsdir, dhcpOwner: config.DEFAULT.host } : {}),
      dhcpCleanUp: dnsmasq.dhcp_cleanup,
      bootFiles,
      defaultBootInterface: httpUrl ? pxe.default_boot_interface : 'pxe',
      appendParams: pxe.pxe_append_params,
      imageCache: {
        ttlMs: pxe.image_cache_ttl * 60_000,
        maxBytes: pxe.image_cache_size * 1024 * 1024,
        // Every file:// source a deploy names (API nodes and compute servers alike) is checked here.
        fileUrlAllowedPaths,
      },
      logger: logger.child({ component: 'boot' }),
      ...(config.dhcp.proxy_enabled ? { served: owned } : {}),
    });
    if (config.dhcp.proxy_enabled) {
      const { dhcp } = config;
      const serverAddress = proxyServerAddress(config, tftpAddress);
      proxyDhcp = await optional(true, () => startProxyDhcp({
          address: dhcp.proxy_address,
          dhcpPort: dhcp.proxy_port,
          pxePort: dhcp.proxy_pxe_port,
          serverAddress,
          tftpHost: tftpAddress ? tftpHost(tftpAddress) : serverAddress,
          ...(httpUrl ? { httpUrl } : {}),
          bootFiles,
          arm64Files: { pxe: dhcp.uefi_arm64_pxe_bootfile_name, ipxe: dhcp.uefi_arm64_ipxe_bootfile_name },
          owned,
          unknown: discovery,
          logger: logger.child({ component: 'proxydhcp' }),
        }), logger);
      if (proxyDhcp) logger.info({ ...proxyDhcp.address(), server: serverAddress }, 'ProxyDHCP responder listening');
    }
    const responder = proxyDhcp ?? null;
    return {
      environment,
      tftpAddress,
      httpUrl,
      instanceImages: httpUrl ? new InstanceImages({ cache: environment.cache, httpRoot: deploy.http_root, httpUrl, logger: logger.child({ component: 'instance-images' }) }) : null,
      tftpStats: () => tftp?.stats() ?? null,
      httpBootStats: () => http?.stats() ?? null,
      proxyDhcp: responder,
      proxyDhcpStats: () => responder?.stats() ?? null,
      discovery,
      linger: () =>
        lingerWhileBusy(
          () =>
            combinedActivity([
              { inFlight: 0, lastActivityAt: responder?.stats().lastAnswerAt ?? null },
              ...(http ? [{ inFlight: http.activity().inFlight, lastActivityAt: http.activity().lastRequestAt }] : []),
              ...(tftp ? [{ inFlight: tftp.stats().active, lastActivityAt: tftp.lastRequestAt() }] : []),
            ]),
          BOOT_LINGER,
        ),
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}
