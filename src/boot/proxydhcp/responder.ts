/**
 * The embedded ProxyDHCP responder of a conductor (DESIGN §6, "the wire follows the ring"): two UDP
 * sockets, the DHCP server port (67) and the PXE boot server port (4011), answering PXE clients with
 * what `answer` decides for the MACs in this conductor's `OwnedMacs`. A bad datagram is dropped and
 * counted, never thrown; ignored and malformed datagrams are logged at most once a minute.
 *
 * Binding a unicast address on Linux receives no broadcasts: bind `0.0.0.0` (the default) on a host
 * whose PXE clients broadcast their DHCPDISCOVER on the same segment. Broadcast replies leave by
 * every interface (`InterfaceBroadcaster`): without IP_PKTINFO, Node cannot tell which one the
 * request came in on.
 */
import { createSocket } from 'node:dgram';
import type { RemoteInfo, Socket } from 'node:dgram';
import { isIPv4 } from 'node:net';
import { listenError } from '../../common/listen.js';
import { InvalidBootInput } from '../errors.js';
import type { BootLogger } from '../types.js';
import { answer, NOT_SERVED, replyDestination } from './answer.js';
import { InterfaceBroadcaster } from './broadcast.js';
import type { AnswerSettings, Decision, RequestPort } from './answer.js';
import { clientMac, DhcpDecodeError, encodeDhcp, parseDhcp } from './codec.js';
import type { DhcpPacket } from './codec.js';
import type { DiscoveryAnswers } from '../discovery.js';
import type { OwnedMacs } from './owned-macs.js';

const LIMITED_BROADCAST = '255.255.255.255';

export interface ProxyDhcpOptions extends AnswerSettings {
  /** IPv4 address to bind both sockets to. Default `0.0.0.0` (needed to receive broadcasts). */
  address?: string;
  /** DHCP server port. Default 67; 0 picks a free one (tests). */
  dhcpPort?: number;
  /** PXE boot server port. Default 4011; 0 picks a free one (tests). */
  pxePort?: number;
  /** Where broadcast replies go. Default `255.255.255.255`. */
  broadcastAddress?: string;
  /** The DHCP client port replies to clients go to. Default 68. */
  clientPort?: number;
  /** The port replies through a relay (giaddr) go to. Default 67. */
  relayPort?: number;
  /** The MACs answered for, and how each boots. */
  owned: OwnedMacs;
  /** Unknown machines (auto-discovery): asked, when armed, about PXE clients `owned` has no node for. */
  unknown?: Pick<DiscoveryAnswers, 'armed' | 'lookup'>;
  logger?: BootLogger;
  /** Least time between two log lines about dropped datagrams (ms). Default 60 000. */
  logIntervalMs?: number;
}

/** Counters since start. */
export interface ProxyDhcpStats {
  /** Replies sent, by kind. */
  offers: number;
  acks: number;
  /** Well-formed datagrams not answered (not PXE, not served here, not ours…). */
  ignored: number;
  /** Datagrams that were not DHCP packets. */
  malformed: number;
  /** Replies the socket failed to send. */
  sendFailures: number;
  /** When the last reply went out, ms since the epoch (null: none yet): a machine told to boot from here may be about to ask. */
  lastAnswerAt: number | null;
}

export interface ProxyDhcpResponder {
  /** The bound addresses (real ports when 0 was asked for). */
  address(): { host: string; dhcpPort: number; pxePort: number };
  stats(): ProxyDhcpStats;
  /** Closes both sockets and empties the MAC index; idempotent. */
  close(): Promise<void>;
}

function bindUdp(host: string, port: number, option: string): Promise<Socket> {
  const socket = createSocket({ type: 'udp4' });
  return new Promise((resolve, reject) => {
    const onError = (err: Error): void => {
      try {
        socket.close();
      } catch {
        // Never bound.
      }
      reject(listenError(err, `${host}:${port}`, 'ProxyDHCP responder', option));
    };
    socket.once('error', onError);
    socket.bind({ address: host, port, exclusive: true }, () => {
      socket.off('error', onError);
      socket.setBroadcast(true);
      resolve(socket);
    });
  });
}

function closeSocket(socket: Socket): Promise<void> {
  return new Promise((resolve) => {
    try {
      socket.close(() => resolve());
    } catch {
      resolve();
    }
  });
}

/** Binds both ports and starts answering. Throws `ListenError` when a port cannot be bound. */
export async function startProxyDhcp(options: ProxyDhcpOptions): Promise<ProxyDhcpResponder> {
  const host = options.address ?? '0.0.0.0';
  if (!isIPv4(host)) throw new InvalidBootInput('address', `${JSON.stringify(host)} is not an IPv4 address`);
  if (!isIPv4(options.serverAddress)) throw new InvalidBootInput('serverAddress', `${JSON.stringify(options.serverAddress)} is not an IPv4 address`);
  const dhcp = await bindUdp(host, options.dhcpPort ?? 67, '[dhcp] proxy_port');
  let pxe: Socket;
  try {
    pxe = await bindUdp(host, options.pxePort ?? 4011, '[dhcp] proxy_pxe_port');
  } catch (err) {
    await closeSocket(dhcp);
    throw err;
  }
  const broadcaster = new InterfaceBroadcaster(host);
  const stats: ProxyDhcpStats = { offers: 0, acks: 0, ignored: 0, malformed: 0, sendFailures: 0, lastAnswerAt: null };
  const ports = { broadcast: options.broadcastAddress ?? '255.255.255.255', client: options.clientPort ?? 68, relay: options.relayPort ?? 67 };
  const logInterval = options.logIntervalMs ?? 60_000;
  let lastLog = -Infinity;
  let unlogged = 0;
  const dropped = (what: string, detail: string, from: RemoteInfo): void => {
    unlogged += 1;
    const now = Date.now();
    if (now - lastLog < logInterval) return;
    options.logger?.warn({ from: `${from.address}:${from.port}`, detail, dropped: unlogged }, `ProxyDHCP dropped a ${what} datagram (logged at most once a minute)`);
    lastLog = now;
    unlogged = 0;
  };
  let closed = false;
  const receive = (socket: Socket, port: RequestPort) => (data: Buffer, from: RemoteInfo) => {
    if (closed) return;
    let request;
    try {
      request = parseDhcp(data);
    } catch (err) {
      if (!(err instanceof DhcpDecodeError)) throw err;
      stats.malformed += 1;
      dropped('malformed', err.message, from);
      return;
    }
    const first = answer(request, port, (mac) => options.owned.lookup(mac), options);
    if (first.kind === 'ignored' && first.reason === NOT_SERVED && options.unknown?.armed === true) {
      // A PXE client no node here has: maybe an unknown machine this conductor answers (discovery).
      const unknown = options.unknown;
      const mac = clientMac(request);
      if (mac !== null) {
        void unknown.lookup(mac).then(
          (boot) => respond(socket, port, request, from, boot === undefined ? first : answer(request, port, () => boot, options)),
          (err: unknown) => {
            stats.ignored += 1;
            dropped('discovery', err instanceof Error ? err.message : String(err), from);
          },
        );
        return;
      }
    }
    respond(socket, port, request, from, first);
  };
  const respond = (socket: Socket, port: RequestPort, request: DhcpPacket, from: RemoteInfo, decision: Decision): void => {
    if (closed) return;
    if (decision.kind === 'ignored') {
      stats.ignored += 1;
      options.logger?.debug({ from: `${from.address}:${from.port}`, port, reason: decision.reason }, 'ProxyDHCP ignored a request');
      return;
    }
    const to = replyDestination(request, port, from, ports);
    const sent = (err: Error | null): void => {
      if (err) {
        stats.sendFailures += 1;
        dropped('reply', err.message, from);
        return;
      }
      if (decision.kind === 'offer') stats.offers += 1;
      else stats.acks += 1;
      stats.lastAnswerAt = Date.now();
    };
    const reply = encodeDhcp(decision.reply);
    if (to.address === LIMITED_BROADCAST && broadcaster.addresses().length > 0) {
      void broadcaster.send(reply, to.port, to.address).then((r) => sent(r.sent > 0 ? null : r.error));
    } else {
      socket.send(reply, to.port, to.address, sent);
    }
    options.logger?.debug({ node: decision.node.uuid, port, kind: decision.kind, file: decision.bootFile, to: `${to.address}:${to.port}` }, 'ProxyDHCP answered');
  };
  dhcp.on('message', receive(dhcp, 'dhcp'));
  pxe.on('message', receive(pxe, 'pxe'));
  // A socket error after binding (ICMP unreachable surfacing on send…) must not crash the conductor.
  for (const socket of [dhcp, pxe]) socket.on('error', (err) => options.logger?.warn({ err: err.message }, 'ProxyDHCP socket error'));
  const bound = { host, dhcpPort: dhcp.address().port, pxePort: pxe.address().port };
  let closing: Promise<void> | undefined;
  return {
    address: () => bound,
    stats: () => ({ ...stats }),
    close() {
      closing ??= (async () => {
        closed = true;
        options.owned.clear();
        broadcaster.close();
        await Promise.all([closeSocket(dhcp), closeSocket(pxe)]);
      })();
      return closing;
    },
  };
}
