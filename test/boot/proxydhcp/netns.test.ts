/**
 * The ProxyDHCP responder as a real PXE network sees it: in a network namespace of its own (root
 * only), bound to 0.0.0.0 on the real ports 67 and 4011, with one veth interface and no default
 * route, it receives a client's broadcast DHCPDISCOVER from another namespace and its broadcast
 * DHCPOFFER reaches the client on port 68 (a socket on 0.0.0.0 cannot send 255.255.255.255 there:
 * ENETUNREACH). Addresses exist only inside the namespaces the test creates.
 */
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../../helpers/cli.js';

const IP = ['/usr/sbin/ip', '/sbin/ip', '/usr/bin/ip'].find((p) => existsSync(p));
const ROOT = process.getuid?.() === 0 && IP !== undefined;

const RESPONDER = `
const { startProxyDhcp, OwnedMacs, DEFAULT_ARM64_BOOT_FILES } = await import(${JSON.stringify(path.join(REPO_ROOT, 'dist/boot/proxydhcp/index.js'))});
const { DEFAULT_BOOT_FILES } = await import(${JSON.stringify(path.join(REPO_ROOT, 'dist/boot/dhcp.js'))});
const owned = new OwnedMacs();
owned.serve({ uuid: '1be26c0b-03f2-4d2e-ae87-c02d7f33c123', bootMode: 'bios', bootInterface: 'pxe' }, ['52:54:00:12:34:56']);
const r = await startProxyDhcp({ serverAddress: '10.213.0.1', bootFiles: DEFAULT_BOOT_FILES, arm64Files: DEFAULT_ARM64_BOOT_FILES, owned });
console.log(JSON.stringify(r.address()));
process.stdin.on('data', async () => { console.log(JSON.stringify(r.stats())); await r.close(); process.exit(0); });
`;

const CLIENT = `
const { encodeDhcp, parseDhcp } = await import(${JSON.stringify(path.join(REPO_ROOT, 'dist/boot/proxydhcp/index.js'))});
const s = (await import('node:dgram')).createSocket('udp4');
await new Promise((r) => s.bind(68, '0.0.0.0', r));
s.setBroadcast(true);
const chaddr = Buffer.alloc(16); Buffer.from([0x52, 0x54, 0, 0x12, 0x34, 0x56]).copy(chaddr);
const discover = encodeDhcp({ op: 1, htype: 1, hlen: 6, hops: 0, xid: 4242, secs: 0, flags: 0x8000, ciaddr: '0.0.0.0', yiaddr: '0.0.0.0', siaddr: '0.0.0.0', giaddr: '0.0.0.0', chaddr, sname: Buffer.alloc(64), file: Buffer.alloc(128),
  options: new Map([[53, Buffer.from([1])], [60, Buffer.from('PXEClient:Arch:00000:UNDI:002001')], [93, Buffer.from([0, 0])]]) });
s.on('message', (d, from) => { const p = parseDhcp(d); if (p.xid !== 4242) return; console.log(JSON.stringify({ from: from.address, type: p.options.get(53)[0], file: p.options.get(67)?.toString(), siaddr: p.siaddr })); process.exit(0); });
const send = () => s.send(discover, 67, '255.255.255.255');
send(); setInterval(send, 500);
setTimeout(() => { console.log('null'); process.exit(0); }, 5000);
`;

describe.skipIf(!ROOT)('ProxyDHCP in network namespaces (root)', () => {
  const tag = `${process.pid % 100000}`;
  const server = `irpd-s-${tag}`;
  const client = `irpd-c-${tag}`;
  let dir: string;
  const ip = (...args: string[]) => execFileSync(IP!, args, { stdio: 'pipe' });

  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'ironring-proxydhcp-netns-'));
    writeFileSync(path.join(dir, 'responder.mjs'), RESPONDER);
    writeFileSync(path.join(dir, 'client.mjs'), CLIENT);
    ip('netns', 'add', server);
    ip('netns', 'add', client);
    ip('link', 'add', `irpd${tag}s`, 'type', 'veth', 'peer', 'name', `irpd${tag}c`);
    ip('link', 'set', `irpd${tag}s`, 'netns', server);
    ip('link', 'set', `irpd${tag}c`, 'netns', client);
    ip('-n', server, 'addr', 'add', '10.213.0.1/24', 'dev', `irpd${tag}s`);
    // The client has an address only so that the kernel lets it send; its DISCOVER says ciaddr 0.
    ip('-n', client, 'addr', 'add', '10.213.0.2/24', 'dev', `irpd${tag}c`);
    for (const [ns, dev] of [[server, `irpd${tag}s`], [client, `irpd${tag}c`]] as const) {
      ip('-n', ns, 'link', 'set', dev, 'up');
      ip('-n', ns, 'link', 'set', 'lo', 'up');
    }
    ip('-n', client, 'route', 'add', 'default', 'dev', `irpd${tag}c`);
  });
  afterAll(() => {
    for (const ns of [server, client]) {
      try {
        ip('netns', 'del', ns);
      } catch {
        // Never created.
      }
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('binds 0.0.0.0:67 and :4011 and answers a broadcast DISCOVER with a broadcast OFFER, without a default route', async () => {
    const responder = spawn(IP!, ['netns', 'exec', server, process.execPath, path.join(dir, 'responder.mjs')], { stdio: ['pipe', 'pipe', 'inherit'] });
    const lines: string[] = [];
    let wake: () => void = () => {};
    responder.stdout.on('data', (d: Buffer) => {
      lines.push(...d.toString().trim().split('\n'));
      wake();
    });
    const line = async (n: number) => {
      while (lines.length < n) await new Promise<void>((r) => (wake = r));
      return JSON.parse(lines[n - 1]!) as Record<string, unknown>;
    };
    try {
      expect(await line(1)).toEqual({ host: '0.0.0.0', dhcpPort: 67, pxePort: 4011 });
      const out = execFileSync(IP!, ['netns', 'exec', client, process.execPath, path.join(dir, 'client.mjs')], { encoding: 'utf8' });
      expect(JSON.parse(out.trim())).toEqual({ from: '10.213.0.1', type: 2, file: 'pxelinux.0', siaddr: '10.213.0.1' });
      responder.stdin.write('stop\n');
      expect(await line(2)).toMatchObject({ sendFailures: 0 });
      expect((await line(2)).offers).toBeGreaterThanOrEqual(1);
    } finally {
      responder.kill();
    }
  }, 30_000);
});
