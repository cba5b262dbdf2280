/**
 * The wire follows the ring: real conductors (in process, one SQLite database, each with its own
 * boot environment and its own ProxyDHCP responder on 127.0.0.1 high ports) answer a node's PXE
 * requests only while they own it. Each node is asked on every conductor's boot server port (4011,
 * whose replies come back unicast): only its owner answers; after the owner stops gracefully only
 * the survivor answers (the stopped one at once answers nothing); after a conductor joins, the nodes
 * it takes are answered by it alone.
 */
import { createSocket } from 'node:dgram';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { encodeDhcp, parseDhcp } from '../../../src/boot/proxydhcp/codec.js';
import { createLogger } from '../../../src/common/logger.js';
import { loadConfig } from '../../../src/config/load.js';
import { Conductor } from '../../../src/conductor/conductor.js';
import { openDatabase } from '../../../src/db/connect.js';
import type { Store } from '../../../src/db/connect.js';
import { migrateDatabase } from '../../../src/db/migrate.js';
import { testConductorEnv, waitUntil } from '../../helpers/conductors.js';
import { createTestDatabase } from '../../helpers/databases.js';
import type { TestDatabase } from '../../helpers/databases.js';
import { seedDeployedNodes, writeTestImages } from '../../helpers/takeover.js';
import type { SeededNode, TestImages } from '../../helpers/takeover.js';

type Ports = { host: string; dhcpPort: number; pxePort: number };

let xid = 1;
/** True when the responder at `ports` answers a PXE boot server request for `mac` within 300 ms. */
async function answers(ports: Ports, mac: string): Promise<boolean> {
  const socket = createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  const chaddr = Buffer.alloc(16);
  Buffer.from(mac.split(':').map((h) => parseInt(h, 16))).copy(chaddr);
  const id = (xid += 1);
  const request = encodeDhcp({
    op: 1, htype: 1, hlen: 6, hops: 0, xid: id, secs: 0, flags: 0,
    ciaddr: '127.0.0.1', yiaddr: '0.0.0.0', siaddr: '0.0.0.0', giaddr: '0.0.0.0',
    chaddr, sname: Buffer.alloc(64), file: Buffer.alloc(128),
    options: new Map([
      [53, Buffer.from([3])],
      [60, Buffer.from('PXEClient:Arch:00000:UNDI:002001')],
      [93, Buffer.from([0, 0])],
    ]),
  });
  try {
    return await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), 300);
      socket.on('message', (data) => {
        if (parseDhcp(data).xid !== id) return;
        clearTimeout(timer);
        resolve(true);
      });
      socket.send(request, ports.pxePort, '127.0.0.1');
    });
  } finally {
    socket.close();
  }
}

describe('ProxyDHCP answers follow the ring', () => {
  let target: TestDatabase;
  let store: Store;
  let dataDir: string;
  let images: TestImages;
  const running: Conductor[] = [];

  const startConductor = async (host: string): Promise<Conductor> => {
    const { config } = loadConfig({
      env: testConductorEnv(path.join(dataDir, host), {
        IRONRING_HOST: host,
        IRONRING_CONDUCTOR_FILE_URL_ALLOWED_PATHS: path.join(dataDir, 'images'),
        IRONRING_DHCP_PROXY_ENABLED: 'true',
        IRONRING_DHCP_PROXY_ADDRESS: '127.0.0.1',
        IRONRING_DHCP_PROXY_PORT: '0',
        IRONRING_DHCP_PROXY_PXE_PORT: '0',
      }),
    });
    const conductor = new Conductor({ store, config, logger: createLogger({ level: 'silent', pretty: false }) });
    await conductor.start();
    running.push(conductor);
    return conductor;
  };

  beforeEach(async () => {
    target = await createTestDatabase('sqlite');
    store = await openDatabase(target.url);
    await migrateDatabase(store);
    dataDir = mkdtempSync(path.join(tmpdir(), 'ironring-proxydhcp-'));
    images = writeTestImages(path.join(dataDir, 'images'));
  });
  afterEach(async () => {
    await Promise.all(running.splice(0).map((c) => c.stop()));
    await store.close();
    await target.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** Each node's owner on the ring as `conductor` sees it. */
  const ownerOf = (conductor: Conductor, node: SeededNode): string => conductor.view.ring('')!.lookup(node.uuid)[0]!;

  /** Waits until every node is answered by exactly the conductor `expected` names (of those in `asked`). */
  const settle = async (nodes: readonly SeededNode[], asked: ReadonlyArray<[string, Ports]>, expected: (node: SeededNode) => string, what: string) => {
    await waitUntil(
      async () => {
        const checks = nodes.flatMap((node) => asked.map(async ([host, ports]) => (await answers(ports, node.mac)) === (host === expected(node))));
        return (await Promise.all(checks)).every(Boolean);
      },
      60_000,
      what,
    );
  };

  it('only the owner answers; after a graceful stop only the survivor; after a join the new owner alone', async () => {
    const nodes = await seedDeployedNodes(store, 16, images, { state: 'active', first: 700 });
    const a = await startConductor('cond-a');
    const b = await startConductor('cond-b');
    const portsA = a.proxyDhcpAddress!;
    const portsB = b.proxyDhcpAddress!;
    // Each row publishes where its responder listens (the dashboard's conductors page reads it).
    const rows = await store.db.selectFrom('conductors').select(['hostname', 'proxydhcp_address']).where('hostname', 'in', ['cond-a', 'cond-b']).orderBy('hostname').execute();
    expect(rows).toEqual([
      { hostname: 'cond-a', proxydhcp_address: `${portsA.host}:${portsA.dhcpPort}+${portsA.pxePort}` },
      { hostname: 'cond-b', proxydhcp_address: `${portsB.host}:${portsB.dhcpPort}+${portsB.pxePort}` },
    ]);
    // Both views agree on every node's owner, and the ring splits the nodes between them.
    await waitUntil(
      () => a.view.ring('')?.hosts.length === 2 && b.view.ring('')?.hosts.length === 2 && nodes.every((n) => ownerOf(a, n) === ownerOf(b, n)),
      20_000,
      'both conductors on both rings',
    );
    expect(new Set(nodes.map((n) => ownerOf(a, n)))).toEqual(new Set(['cond-a', 'cond-b']));
    await settle(nodes, [['cond-a', portsA], ['cond-b', portsB]], (n) => ownerOf(a, n), 'each node answered by its owner only');

    // Its answers are on the conductor's /metrics.
    const acks = (text: string) => Number(/^ironring_proxydhcp_answers_total\{kind="ack"[^}]*\} (\d+)$/m.exec(text)?.[1]);
    expect(acks(await b.metrics.registry.metrics())).toBeGreaterThan(0);
    expect(await b.metrics.registry.metrics()).toMatch(/^ironring_proxydhcp_ignored_total\{[^}]*\} [1-9]/m);

    // Graceful stop of cond-a: it answers nothing from then on, and cond-b answers every node.
    await a.stop();
    expect(await Promise.all(nodes.map((node) => answers(portsA, node.mac)))).toEqual(nodes.map(() => false));
    await settle(nodes, [['cond-a', portsA], ['cond-b', portsB]], () => 'cond-b', 'the survivor answering every node');

    // cond-c joins: the nodes the ring gives it are answered by cond-c alone, the rest by cond-b alone.
    const c = await startConductor('cond-c');
    const portsC = c.proxyDhcpAddress!;
    await waitUntil(
      () => b.view.ring('')?.hosts.length === 2 && c.view.ring('')?.hosts.length === 2 && nodes.every((n) => ownerOf(b, n) === ownerOf(c, n)),
      20_000,
      'cond-c on the rings',
    );
    const moved = nodes.filter((n) => ownerOf(b, n) === 'cond-c');
    expect(moved.length).toBeGreaterThan(0);
    await settle(nodes, [['cond-b', portsB], ['cond-c', portsC]], (n) => ownerOf(b, n), 'each node answered by its new owner only');
  });
});
