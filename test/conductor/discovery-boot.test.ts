/**
 * A conductor's part in auto-discovery's PXE side, on real databases and real boot roots: with the
 * settings it needs it prepares the discovery entries and answers a MAC only when the default
 * group's ring assigns it here and no port has it; without them it removes leftover entries and
 * says, naming the setting, why it does not answer.
 */
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DISCOVERY_UUIDS, DiscoveryAnswers } from '../../src/boot/discovery.js';
import type { ProxyDhcpResponder } from '../../src/boot/proxydhcp/index.js';
import { createLogger } from '../../src/common/logger.js';
import { loadConfig } from '../../src/config/load.js';
import { DiscoveryBoot, discoveryOffReason } from '../../src/conductor/discovery-boot.js';
import { createNode } from '../../src/nodes/node-store.js';
import { createPort } from '../../src/nodes/port-store.js';
import { sandbox } from '../boot/helpers.js';
import type { BootSandbox } from '../boot/helpers.js';
import { testEngines, useMigratedDatabase } from '../helpers/databases.js';

const engines = await testEngines();
const UNKNOWN = '52:54:00:de:ad:01';
const KNOWN = '52:54:00:de:ad:02';
const logger = createLogger({ level: 'silent', pretty: false });
const exists = (path: string) => access(path).then(() => true, () => false);

function config(s: BootSandbox, env: Record<string, string>, kernel: { url: string; checksum: string }, ramdisk: { url: string; checksum: string }) {
  return loadConfig({
    env: {
      IRONRING_JSON_RPC_AUTH_STRATEGY: 'noauth',
      IRONRING_PXE_TFTP_ROOT: s.tftpRoot,
      IRONRING_DHCP_PROXY_ENABLED: 'true',
      IRONRING_AUTO_DISCOVERY_ENABLED: 'true',
      IRONRING_AUTO_DISCOVERY_DEPLOY_KERNEL: kernel.url,
      IRONRING_AUTO_DISCOVERY_DEPLOY_KERNEL_CHECKSUM: kernel.checksum,
      IRONRING_AUTO_DISCOVERY_DEPLOY_RAMDISK: ramdisk.url,
      IRONRING_AUTO_DISCOVERY_DEPLOY_RAMDISK_CHECKSUM: ramdisk.checksum,
      IRONRING_DEPLOY_AGENT_API_URL: 'http://10.0.0.5:6385',
      ...env,
    },
  }).config;
}

describe.each(engines)('auto-discovery boot on a conductor (%s)', (engine) => {
  const db = useMigratedDatabase(engine);
  let s: BootSandbox;
  let owner: string;
  const running: DiscoveryBoot[] = [];

  beforeEach(async () => {
    s = await sandbox();
    owner = 'c1';
  });
  afterEach(async () => {
    for (const d of running.splice(0)) d.stop();
    await s.dispose();
  });

  async function start(env: Record<string, string> = {}, proxy = true) {
    const { deployKernel, deployRamdisk } = await s.images();
    const answers = new DiscoveryAnswers();
    const d = new DiscoveryBoot({
      config: config(s, env, deployKernel, deployRamdisk),
      store: db.store,
      boot: { environment: s.env(), httpUrl: 'http://10.0.0.5:8080', proxyDhcp: proxy ? ({} as ProxyDhcpResponder) : null, discovery: answers },
      hostname: 'c1',
      ringOwner: (group, key) => (group === '' && key.startsWith('52:54:00:de:ad') ? owner : undefined),
      log: logger,
    });
    running.push(d);
    await d.start();
    return answers;
  }

  it('prepares the entries and answers unknown MACs the ring assigns here, never a port\'s MAC', async () => {
    const answers = await start();
    expect(answers.armed).toBe(true);
    expect(await exists(join(s.tftpRoot, 'pxelinux.cfg', 'default'))).toBe(true);
    expect(await exists(join(s.httpRoot, DISCOVERY_UUIDS.ipxe, 'config'))).toBe(true);
    const node = await createNode(db.store, { driver: 'fake-hardware', provision_state: 'enroll' });
    await createPort(db.store, { address: KNOWN, nodeId: node.id, pxeEnabled: true });
    // iPXE, the default boot interface where there is an HTTP boot URL.
    expect(await answers.lookup(UNKNOWN)).toMatchObject({ uuid: DISCOVERY_UUIDS.ipxe, bootInterface: 'ipxe' });
    expect(await answers.lookup(KNOWN)).toBeUndefined();
    // The ring gives the MAC to another conductor: after the change, not answered here.
    owner = 'c2';
    answers.forget();
    expect(await answers.lookup(UNKNOWN)).toBeUndefined();
  });

  it('without the ProxyDHCP responder or the ramdisk settings it does not answer, says why, and removes entries left from before', async () => {
    await start();
    running.splice(0).forEach((d) => d.stop());
    const off = await start({}, false);
    expect(off.armed).toBe(false);
    expect(await exists(join(s.tftpRoot, 'pxelinux.cfg', 'default'))).toBe(false);
    expect(await exists(join(s.tftpRoot, DISCOVERY_UUIDS.pxelinux))).toBe(false);
    const base = config(s, {}, { url: 'file:///k', checksum: 'sha256:00' }, { url: 'file:///r', checksum: 'sha256:00' });
    expect(discoveryOffReason(base, true)).toBeNull();
    expect(discoveryOffReason(base, false)).toMatch(/^the ProxyDHCP responder does not run here/);
    expect(discoveryOffReason({ ...base, auto_discovery: { ...base.auto_discovery, deploy_ramdisk: '', deploy_kernel_checksum: '' } }, true)).toBe('[auto_discovery] deploy_kernel_checksum, deploy_ramdisk not set');
    expect(discoveryOffReason({ ...base, auto_discovery: { ...base.auto_discovery, enabled: false } }, true)).toBe('[auto_discovery] enabled is false');
  });

  it('an image that cannot be fetched leaves it unarmed (and retrying), not crashed', async () => {
    const answers = await start({ IRONRING_AUTO_DISCOVERY_DEPLOY_KERNEL: 'file:///nonexistent/kernel' });
    expect(answers.armed).toBe(false);
    expect(await exists(join(s.tftpRoot, 'pxelinux.cfg', 'default'))).toBe(false);
  });
});
