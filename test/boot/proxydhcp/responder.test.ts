/**
 * The ProxyDHCP responder over real UDP sockets on 127.0.0.1 (high ports; replies that would be
 * broadcast go to the test's client socket): it answers the MACs a real BootEnvironment reports as
 * served, with PXE boot information only, by client architecture and iPXE-ness; it is silent for
 * other MACs, after clean-up and after close; port 4011 requests get a DHCPACK where they came from.
 */
import { createSocket } from 'node:dgram';
import type { Socket } from 'node:dgram';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_BOOT_FILES } from '../../../src/boot/dhcp.js';
import { DEFAULT_ARM64_BOOT_FILES } from '../../../src/boot/proxydhcp/answer.js';
import { clientMac, encodeDhcp, parseDhcp } from '../../../src/boot/proxydhcp/codec.js';
import type { DhcpPacket } from '../../../src/boot/proxydhcp/codec.js';
import { DISCOVERY_UUIDS, DiscoveryAnswers } from '../../../src/boot/discovery.js';
import { OwnedMacs } from '../../../src/boot/proxydhcp/owned-macs.js';
import { startProxyDhcp } from '../../../src/boot/proxydhcp/responder.js';
import type { ProxyDhcpOptions, ProxyDhcpResponder } from '../../../src/boot/proxydhcp/responder.js';
import type { BootEnvironment } from '../../../src/boot/boot-environment.js';
import type { BootImages } from '../../../src/boot/types.js';
import { MAC_A, MAC_B, UUID_A, UUID_B, sandbox } from '../helpers.js';
import type { BootSandbox } from '../helpers.js';

const SERVER = '127.0.0.1';
const UNOWNED = '52:54:00:99:99:99';

/** A UDP socket standing in for PXE clients (and relays): replies arrive in order. */
interface Client {
  socket: Socket;
  port: number;
  send(packet: Buffer, port: number): Promise<void>;
  /** The next datagram, or null when none comes within `ms`. */
  next(ms?: number): Promise<DhcpPacket | null>;
  close(): void;
}

async function client(): Promise<Client> {
  const socket = createSocket('udp4');
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  const queue: Buffer[] = [];
  let waiter: ((b: Buffer) => void) | null = null;
  socket.on('message', (data) => {
    if (waiter) {
      const w = waiter;
      waiter = null;
      w(data);
    } else queue.push(data);
  });
  return {
    socket,
    port: socket.address().port,
    send: (packet, port) => new Promise((resolve, reject) => socket.send(packet, port, '127.0.0.1', (err) => (err ? reject(err) : resolve()))),
    next(ms = 2000) {
      const queued = queue.shift();
      if (queued) return Promise.resolve(parseDhcp(queued));
      return new Promise((resolve) => {
        const timer = setTimeout(() => {
          waiter = null;
          resolve(null);
        }, ms);
        waiter = (b) => {
          clearTimeout(timer);
          resolve(parseDhcp(b));
        };
      });
    },
    close: () => socket.close(),
  };
}

let xid = 1000;
/** A PXE client's request, as a ROM sends it. */
function request(mac: string, o: { type?: number; arch?: number; ipxe?: 'user-class' | '175'; vendor?: string | null; ciaddr?: string; giaddr?: string; serverId?: string; uuid?: Buffer } = {}): DhcpPacket {
  const chaddr = Buffer.alloc(16);
  Buffer.from(mac.split(':').map((h) => parseInt(h, 16))).copy(chaddr);
  const options = new Map<number, Buffer>([[53, Buffer.from([o.type ?? 1])]]);
  if (o.serverId) options.set(54, Buffer.from(o.serverId.split('.').map(Number)));
  if (o.vendor !== null) options.set(60, Buffer.from(o.vendor ?? `PXEClient:Arch:${String(o.arch ?? 0).padStart(5, '0')}:UNDI:002001`));
  if (o.arch !== undefined) options.set(93, Buffer.from([o.arch >> 8, o.arch & 0xff]));
  if (o.uuid) options.set(97, o.uuid);
  if (o.ipxe === 'user-class') options.set(77, Buffer.from('iPXE'));
  if (o.ipxe === '175') options.set(175, Buffer.from([177, 5, 1, 0x80, 0x86, 0x10, 0x0e]));
  xid += 1;
  return {
    op: 1, htype: 1, hlen: 6, hops: 0, xid, secs: 0, flags: 0x8000,
    ciaddr: o.ciaddr ?? '0.0.0.0', yiaddr: '0.0.0.0', siaddr: '0.0.0.0', giaddr: o.giaddr ?? '0.0.0.0',
    chaddr, sname: Buffer.alloc(64), file: Buffer.alloc(128), options,
  };
}

const text = (b: Buffer | undefined) => b?.toString('latin1');
const fileField = (p: DhcpPacket) => p.file.subarray(0, p.file.indexOf(0)).toString();

let s: BootSandbox;
let env: BootEnvironment;
let owned: OwnedMacs;
let responder: ProxyDhcpResponder | undefined;
let c: Client;
let images: Required<BootImages>;

async function start(extra: Partial<ProxyDhcpOptions> = {}): Promise<ProxyDhcpResponder> {
  responder = await startProxyDhcp({
    address: '127.0.0.1',
    dhcpPort: 0,
    pxePort: 0,
    serverAddress: SERVER,
    tftpHost: '10.0.0.5',
    httpUrl: 'http://10.0.0.5:8080',
    bootFiles: DEFAULT_BOOT_FILES,
    arm64Files: DEFAULT_ARM64_BOOT_FILES,
    broadcastAddress: '127.0.0.1',
    clientPort: c.port,
    owned,
    ...extra,
  });
  return responder;
}

/** Sends `packet` to port 67 (or 4011) and returns the next reply, or null. */
async function ask(packet: DhcpPacket, port: 'dhcp' | 'pxe' = 'dhcp', ms?: number): Promise<DhcpPacket | null> {
  const a = responder!.address();
  await c.send(encodeDhcp(packet), port === 'dhcp' ? a.dhcpPort : a.pxePort);
  return c.next(ms);
}

/** Asserts `packet` gets no answer: a served request sent right after it is the next reply. */
async function silentFor(packet: DhcpPacket): Promise<void> {
  const before = responder!.stats().ignored;
  const probe = request(MAC_A, { arch: 0 });
  const a = responder!.address();
  await c.send(encodeDhcp(packet), a.dhcpPort);
  await c.send(encodeDhcp(probe), a.dhcpPort);
  const reply = await c.next();
  expect(reply?.xid).toBe(probe.xid);
  expect(responder!.stats().ignored).toBe(before + 1);
}

beforeEach(async () => {
  s = await sandbox();
  images = await s.images();
  owned = new OwnedMacs();
  env = s.env({ served: owned });
  c = await client();
  await env.prepare({ uuid: UUID_A, bootMode: 'bios', bootInterface: 'pxe' }, [{ address: MAC_A, pxeEnabled: true }], images);
  await env.prepare({ uuid: UUID_B, bootMode: 'uefi', bootInterface: 'ipxe' }, [{ address: MAC_B.toUpperCase(), pxeEnabled: true }], images);
});
afterEach(async () => {
  await responder?.close();
  responder = undefined;
  c.close();
  await s.dispose();
});

describe('ProxyDHCP responder', () => {
  it('offers boot information only to a served PXE client: next-server, boot file, PXE options, no address', async () => {
    await start();
    const uuid = Buffer.from([0, ...Array.from({ length: 16 }, (_, i) => i)]);
    const req = request(MAC_A, { arch: 0, uuid });
    const reply = await ask(req);
    expect(reply).not.toBeNull();
    const r = reply!;
    expect(r).toMatchObject({ op: 2, xid: req.xid, flags: 0x8000, yiaddr: '0.0.0.0', ciaddr: '0.0.0.0', siaddr: '10.0.0.5', htype: 1, hlen: 6 });
    expect(clientMac(r)).toBe(MAC_A);
    expect([...r.options.get(53)!]).toEqual([2]);
    expect([...r.options.get(54)!].join('.')).toBe(SERVER);
    expect(text(r.options.get(60))).toBe('PXEClient');
    expect(r.options.get(97)).toEqual(uuid);
    expect([...r.options.get(43)!]).toEqual([6, 1, 8, 255]);
    expect(text(r.options.get(66))).toBe('10.0.0.5');
    expect(text(r.options.get(67))).toBe('pxelinux.0');
    expect(fileField(r)).toBe('pxelinux.0');
    // No lease: no lease time, subnet mask, router or DNS.
    for (const code of [1, 3, 6, 51, 58, 59]) expect(r.options.has(code), `option ${code}`).toBe(false);
    expect(responder!.stats()).toMatchObject({ offers: 1, acks: 0 });
  });

  it('is silent for a MAC it does not serve, for non-PXE clients and for a DHCPREQUEST to another server', async () => {
    await start();
    await silentFor(request(UNOWNED, { arch: 0 }));
    await silentFor(request(MAC_A, { vendor: null }));
    await silentFor(request(MAC_A, { vendor: 'MSFT 5.0' }));
    await silentFor(request(MAC_A, { type: 3, serverId: '10.9.9.9', arch: 0 }));
    await silentFor(request(MAC_A, { type: 8, arch: 0 }));
  });

  it('answers a DHCPREQUEST on port 67 that names it with a DHCPACK', async () => {
    await start();
    const reply = await ask(request(MAC_A, { type: 3, serverId: SERVER, arch: 0 }));
    expect([...reply!.options.get(53)!]).toEqual([5]);
    expect(text(reply!.options.get(67))).toBe('pxelinux.0');
  });

  it('picks the boot file by client architecture and boot interface', async () => {
    await start();
    const cases: Array<[string, number, string]> = [
      [MAC_A, 0, 'pxelinux.0'],
      [MAC_A, 7, 'bootx64.efi'],
      [MAC_A, 9, 'bootx64.efi'],
      [MAC_A, 6, 'bootx64.efi'],
      [MAC_A, 11, 'grubaa64.efi'],
      [MAC_B, 0, 'undionly.kpxe'],
      [MAC_B, 7, 'snponly.efi'],
      [MAC_B, 11, 'snponly-arm64.efi'],
    ];
    for (const [mac, arch, file] of cases) {
      const reply = await ask(request(mac, { arch }));
      expect(text(reply?.options.get(67)), `${mac} arch ${arch}`).toBe(file);
    }
    // An architecture it has no boot file for (10: ARM 32-bit EFI) gets no answer.
    await silentFor(request(MAC_A, { arch: 10 }));
  });

  it("gives iPXE itself (user class 'iPXE' or option 175) boot.ipxe over HTTP, for iPXE nodes only", async () => {
    await start();
    for (const ipxe of ['user-class', '175'] as const) {
      const reply = await ask(request(MAC_B, { arch: 7, ipxe }));
      expect(text(reply?.options.get(67)), ipxe).toBe('http://10.0.0.5:8080/boot.ipxe');
      expect(fileField(reply!)).toBe('http://10.0.0.5:8080/boot.ipxe');
    }
    // A PXE node booted by an iPXE ROM still gets PXELINUX over TFTP.
    const reply = await ask(request(MAC_A, { arch: 0, ipxe: 'user-class' }));
    expect(text(reply?.options.get(67))).toBe('pxelinux.0');
  });

  it('answers a boot server request on port 4011 with a DHCPACK to where it came from', async () => {
    await start({ clientPort: 9 });
    const reply = await ask(request(MAC_B, { type: 3, arch: 7, ciaddr: '127.0.0.1' }), 'pxe');
    expect(reply).not.toBeNull();
    expect([...reply!.options.get(53)!]).toEqual([5]);
    expect(reply!.ciaddr).toBe('127.0.0.1');
    expect(text(reply!.options.get(67))).toBe('snponly.efi');
    expect(responder!.stats()).toMatchObject({ offers: 0, acks: 1 });
  });

  it('sends replies through a relay back to giaddr on the relay port', async () => {
    await start({ clientPort: 9, relayPort: c.port });
    const reply = await ask(request(MAC_A, { arch: 0, giaddr: '127.0.0.1' }));
    expect(reply?.giaddr).toBe('127.0.0.1');
    expect(text(reply?.options.get(67))).toBe('pxelinux.0');
  });

  it('stops answering a node once its files are cleaned up, and answers the MAC for the node that has it now', async () => {
    await start();
    expect(await ask(request(MAC_A, { arch: 0 }))).not.toBeNull();
    await env.cleanUp({ uuid: UUID_A });
    expect(owned.lookup(MAC_A)).toBeUndefined();
    const a = responder!.address();
    const gone = request(MAC_A, { arch: 0 });
    const probe = request(MAC_B, { arch: 7 });
    await c.send(encodeDhcp(gone), a.dhcpPort);
    await c.send(encodeDhcp(probe), a.dhcpPort);
    expect((await c.next())?.xid).toBe(probe.xid);
    // The MAC re-enrolled on node B: B's boot information.
    await env.prepare({ uuid: UUID_B, bootMode: 'uefi', bootInterface: 'ipxe' }, [{ address: MAC_A, pxeEnabled: true }], images);
    expect(text((await ask(request(MAC_A, { arch: 7 })))?.options.get(67))).toBe('snponly.efi');
    expect(owned.lookup(MAC_B)).toBeUndefined();
  });

  it('answers a node whose prepare found it current (a restart: the index starts empty)', async () => {
    const fresh = new OwnedMacs();
    const again = s.env({ served: fresh });
    const changes = await again.prepare({ uuid: UUID_A, bootMode: 'bios', bootInterface: 'pxe' }, [{ address: MAC_A, pxeEnabled: true }], images);
    expect(changes.written).toEqual([]);
    expect(fresh.lookup(MAC_A)).toMatchObject({ uuid: UUID_A, bootMode: 'bios', bootInterface: 'pxe' });
  });

  it('is silent after close, and its index is empty', async () => {
    await start();
    await responder!.close();
    expect(owned.size).toBe(0);
    await c.send(encodeDhcp(request(MAC_A, { arch: 0 })), responder!.address().dhcpPort);
    expect(await c.next(300)).toBeNull();
  });

  it('drops malformed datagrams, counts them, and keeps answering', async () => {
    await start({ logIntervalMs: 60_000 });
    const a = responder!.address();
    await c.send(Buffer.from('not dhcp at all'), a.dhcpPort);
    const truncated = encodeDhcp(request(MAC_A, { arch: 0 }));
    truncated[241] = 200; // option 53's length runs past the end
    await c.send(truncated.subarray(0, 260), a.pxePort);
    const reply = await ask(request(MAC_A, { arch: 0 }));
    expect(reply).not.toBeNull();
    expect(responder!.stats()).toMatchObject({ malformed: 2, offers: 1 });
  });

  it('refuses a bind address or server address that is not IPv4, naming the field', async () => {
    await expect(start({ address: '::1' })).rejects.toThrow(/^address: "::1" is not an IPv4 address/);
    await expect(start({ serverAddress: 'boot.example.org' })).rejects.toThrow(/^serverAddress: /);
  });

  describe('unknown machines (auto-discovery)', () => {
    it('answers a PXE client no node has only when armed and the resolver says so, with the discovery entry: PXELINUX for a PXE ROM, the discovery script for iPXE', async () => {
      const asked: string[] = [];
      const discovery = new DiscoveryAnswers();
      await start({ unknown: discovery });
      // Unarmed: silent, and nobody is asked.
      expect(await ask(request(UNOWNED, { arch: 0 }), 'dhcp', 300)).toBeNull();
      discovery.arm(async (mac) => {
        asked.push(mac);
        return mac === UNOWNED;
      }, 'ipxe');
      const rom = await ask(request(UNOWNED, { arch: 0 }));
      expect(rom).not.toBeNull();
      expect(text(rom!.options.get(67))).toBe('undionly.kpxe');
      const ipxe = await ask(request(UNOWNED, { arch: 7, ipxe: '175' }));
      expect(text(ipxe!.options.get(67))).toBe(`http://10.0.0.5:8080/${DISCOVERY_UUIDS.ipxe}/config`);
      // The second request of the same MAC within the decision's lifetime asks nobody again.
      expect(asked).toEqual([UNOWNED]);
      // A MAC the resolver refuses (another conductor's by the ring, or a known port) gets nothing.
      expect(await ask(request('52:54:00:77:77:77', { arch: 0 }), 'dhcp', 300)).toBeNull();
      // Not a PXE client: the resolver is not even asked.
      expect(await ask(request('52:54:00:66:66:66', { vendor: 'MSFT 5.0' }), 'dhcp', 300)).toBeNull();
      expect(asked).toEqual([UNOWNED, '52:54:00:77:77:77']);
      // A node's MAC is answered for the node, never as an unknown machine.
      expect(text((await ask(request(MAC_A, { arch: 0 })))!.options.get(67))).toBe('pxelinux.0');
      expect(asked).not.toContain(MAC_A);
    });

    it('a PXE-interface discovery answer gives the firmware its PXE boot file (PXELINUX, or GRUB for UEFI), which falls back to the discovery config', async () => {
      const discovery = new DiscoveryAnswers();
      discovery.arm(async () => true, 'pxe');
      await start({ unknown: discovery });
      expect(text((await ask(request(UNOWNED, { arch: 0 })))!.options.get(67))).toBe('pxelinux.0');
      expect(text((await ask(request(UNOWNED, { arch: 7 })))!.options.get(67))).toBe('bootx64.efi');
    });

    it('a resolver that fails (the database is down) answers nothing and counts the request as ignored', async () => {
      const discovery = new DiscoveryAnswers();
      discovery.arm(async () => {
        throw new Error('connection refused');
      }, 'pxe');
      await start({ unknown: discovery });
      expect(await ask(request(UNOWNED, { arch: 0 }), 'dhcp', 300)).toBeNull();
      expect(responder!.stats()).toMatchObject({ offers: 0, ignored: 1 });
    });
  });
});
