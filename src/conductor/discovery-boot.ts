/**
 * A conductor's part in auto-discovery's PXE side (`boot/discovery.ts`): with `[auto_discovery]
 * enabled`, `[dhcp] proxy_enabled` and the discovery ramdisk configured (`[auto_discovery]
 * deploy_kernel`, `deploy_ramdisk` and their checksums), it prepares the discovery entries in its
 * boot roots and arms its ProxyDHCP responder to answer the unknown machines the default group's
 * ring assigns to it. Otherwise it removes entries an earlier run left, and says why it does not
 * answer. An image that cannot be fetched now is tried again every minute.
 */
import type { DiscoveryAnswers} from '../boot/discovery.js';
import { prepareDiscoveryBoot, removeDiscoveryBoot } from '../boot/discovery.js';
import type { ConfigFormat } from '../boot/types.js';
import type { Logger } from '../common/logger.js';
import type { Config } from '../config/options.js';
import type { Store } from '../db/connect.js';
import { agentRamdiskParams, kernelParamWords } from '../drivers/direct/agent-ramdisk.js';
import type { BootServices } from './boot-services.js';

/** The conductor group whose ring assigns unknown machines: the one discovered nodes are enrolled in. */
export const DISCOVERY_GROUP = '';

/** Seconds between tries to prepare the entries when an image could not be fetched. */
const RETRY_MS = 60_000;

export interface DiscoveryBootDeps {
  config: Config;
  store: Store;
  boot: Pick<BootServices, 'environment' | 'httpUrl' | 'proxyDhcp' | 'discovery'>;
  hostname: string;
  /** The conductor group's ring as this conductor sees it now. */
  ringOwner(group: string, key: string): string | undefined;
  log: Logger;
}

/** Why a conductor does not answer unknown machines, or null when it should. */
export function discoveryOffReason(config: Config, proxyRunning: boolean): string | null {
  const d = config.auto_discovery;
  if (!d.enabled) return '[auto_discovery] enabled is false';
  if (!config.dhcp.proxy_enabled || !proxyRunning) return 'the ProxyDHCP responder does not run here ([dhcp] proxy_enabled): point the site DHCP server\'s default boot entry at this conductor (docs/lifecycle.md)';
  const missing = ['deploy_kernel', 'deploy_kernel_checksum', 'deploy_ramdisk', 'deploy_ramdisk_checksum'].filter((k) => d[k as keyof typeof d] === '');
  if (missing.length > 0) return `[auto_discovery] ${missing.join(', ')} not set`;
  if ((config.deploy.agent_api_url || config.api.public_endpoint) === '') return '[deploy] agent_api_url is not set and cannot be derived ([api] public_endpoint is empty)';
  return null;
}

/** Prepares (or removes) the discovery entries and arms (or not) the responder; `stop()` ends the retries. */
export class DiscoveryBoot {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(private readonly deps: DiscoveryBootDeps) {}

  get answers(): DiscoveryAnswers {
    return this.deps.boot.discovery;
  }

  async start(): Promise<void> {
    const { config, boot, log } = this.deps;
    const tftpRoot = config.pxe.tftp_root;
    const off = discoveryOffReason(config, boot.proxyDhcp !== null);
    if (off !== null) {
      boot.discovery.disarm();
      await removeDiscoveryBoot(boot.environment, tftpRoot).catch((err: Error) => log.warn({ err: err.message }, 'could not remove the discovery boot entries'));
      if (config.auto_discovery.enabled) log.warn({ reason: off }, 'auto-discovery: unknown machines that PXE-boot are not answered from here');
      return;
    }
    await this.prepare();
  }

  /** Forgets cached decisions (the ring changed). */
  ringChanged(): void {
    this.answers.forget();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.answers.disarm();
  }

  private async prepare(): Promise<void> {
    const { config, boot, log } = this.deps;
    const d = config.auto_discovery;
    const apiUrl = config.deploy.agent_api_url || config.api.public_endpoint;
    const formats: ConfigFormat[] = ['pxelinux', 'grub', ...(boot.httpUrl ? (['ipxe'] as const) : [])];
    const kernelParams = Object.entries(agentRamdiskParams(apiUrl, 'inspect wait', kernelParamWords(config.inspector.extra_kernel_params))).map(([k, v]) => `${k}=${v}`).join(' ');
    try {
      await prepareDiscoveryBoot(boot.environment, config.pxe.tftp_root, {
        images: { deployKernel: { url: d.deploy_kernel, checksum: d.deploy_kernel_checksum }, deployRamdisk: { url: d.deploy_ramdisk, checksum: d.deploy_ramdisk_checksum } },
        kernelParams,
        formats,
      });
    } catch (err) {
      log.warn({ err: (err as Error).message, retry_in_s: RETRY_MS / 1000 }, 'auto-discovery: could not prepare the discovery boot entries');
      if (!this.stopped) this.timer = setTimeout(() => void this.prepare(), RETRY_MS);
      return;
    }
    if (this.stopped) return;
    const iface = formats.includes('ipxe') && config.pxe.default_boot_interface === 'ipxe' ? 'ipxe' : 'pxe';
    boot.discovery.arm((mac) => this.answersFor(mac), iface);
    log.info({ formats, boot_interface: iface, group: DISCOVERY_GROUP }, 'auto-discovery: answering unknown machines the ring assigns to this conductor');
  }

  /** True when `mac` is this conductor's to answer as an unknown machine. */
  private async answersFor(mac: string): Promise<boolean> {
    if (this.deps.ringOwner(DISCOVERY_GROUP, mac) !== this.deps.hostname) return false;
    const known = await this.deps.store.db.selectFrom('ports').select('id').where('address', '=', mac).limit(1).execute();
    return known.length === 0;
  }
}
