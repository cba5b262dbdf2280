/**
 * Limited broadcasts (255.255.255.255) out of every interface, for ProxyDHCP replies to clients that
 * have no address yet. A socket bound to 0.0.0.0 sends a limited broadcast only where the routing
 * table's route for it (usually the default route) leads, and fails on a host without one; Node has
 * neither IP_PKTINFO nor SO_BINDTODEVICE to choose the interface. Linux instead picks the interface
 * that owns a socket's bound source address for limited broadcasts (its "special hack" in
 * `ip_route_output_key`), so one socket per interface address (ephemeral port) reaches each segment.
 * The request's interface is unknown without IP_PKTINFO, so the reply goes out of all of them: only
 * the client with that hardware address and transaction id takes it.
 */
import { createSocket } from 'node:dgram';
import type { Socket } from 'node:dgram';
import { networkInterfaces } from 'node:os';

export class InterfaceBroadcaster {
  private readonly sockets = new Map<string, Promise<Socket>>();
  private closed = false;

  /** `bindHost` 0.0.0.0: every non-loopback IPv4 address; another address: that one only. */
  constructor(private readonly bindHost: string) {}

  /** The source addresses broadcasts go out from, as the interfaces are now. */
  addresses(): string[] {
    if (this.bindHost !== '0.0.0.0') return [this.bindHost];
    const found: string[] = [];
    for (const list of Object.values(networkInterfaces())) {
      for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) found.push(a.address);
    }
    return found;
  }

  /** Sends `data` to `address:port` from every interface address; resolves to how many sends succeeded and the first error. */
  async send(data: Buffer, port: number, address: string): Promise<{ sent: number; error: Error | null }> {
    let sent = 0;
    let error: Error | null = null;
    await Promise.all(
      this.addresses().map(async (source) => {
        try {
          const socket = await this.socketFor(source);
          await new Promise<void>((resolve, reject) => socket.send(data, port, address, (err) => (err ? reject(err) : resolve())));
          sent += 1;
        } catch (err) {
          error ??= err as Error;
          // An address that went away: bind afresh next time.
          this.drop(source);
        }
      }),
    );
    return { sent, error };
  }

  private socketFor(source: string): Promise<Socket> {
    if (this.closed) return Promise.reject(new Error('closed'));
    let pending = this.sockets.get(source);
    if (pending === undefined) {
      pending = new Promise<Socket>((resolve, reject) => {
        const socket = createSocket({ type: 'udp4' });
        socket.once('error', reject);
        socket.bind({ address: source, port: 0 }, () => {
          socket.off('error', reject);
          // Errors after binding surface through send callbacks; this keeps them from crashing the process.
          socket.on('error', () => this.drop(source));
          socket.setBroadcast(true);
          resolve(socket);
        });
      });
      this.sockets.set(source, pending);
    }
    return pending;
  }

  private drop(source: string): void {
    const pending = this.sockets.get(source);
    this.sockets.delete(source);
    void pending?.then(
      (s) => {
        try {
          s.close();
        } catch {
          // Closed already.
        }
      },
      () => undefined,
    );
  }

  close(): void {
    this.closed = true;
    for (const source of [...this.sockets.keys()]) this.drop(source);
  }
}
