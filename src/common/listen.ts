/** Binding servers to `host:port` addresses, with one-line errors that say what to change. */
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { ListenError } from './errors.js';

/** Splits `host:port` (IPv6 in brackets) into its parts. */
export function splitAddress(address: string): { host: string; port: number } {
  const i = address.lastIndexOf(':');
  const host = address.slice(0, i).replace(/^\[(.*)\]$/, '$1');
  return { host, port: Number(address.slice(i + 1)) };
}

/** One line saying which address could not be bound, why, and which option changes it. */
export function listenError(err: unknown, address: string, what: string, option: string): ListenError {
  const code = (err as NodeJS.ErrnoException).code;
  const reason =
    code === 'EADDRINUSE'
      ? 'address already in use'
      : code === 'EACCES'
        ? 'permission denied (ports below 1024 need root or CAP_NET_BIND_SERVICE)'
        : code === 'EADDRNOTAVAIL'
          ? 'address not available on this host'
          : (err as Error).message;
  return new ListenError(`cannot listen for the ${what} on ${address}: ${reason} (change it with ${option})`, { cause: err });
}

/**
 * Binds a fastify app; resolves to the base URL it serves on (with the real port when the address
 * asked for port 0). `what` and `option` name the server and its setting in errors.
 */
export async function listenFastify(app: FastifyInstance, address: string, what: string, option: string): Promise<string> {
  const { host, port } = splitAddress(address);
  dropUnusedConnectionsOnClose(app);
  try {
    await app.listen({ host, port });
  } catch (err) {
    throw listenError(err, address, what, option);
  }
  const bound = app.server.address();
  const actualPort = typeof bound === 'object' && bound ? bound.port : port;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  return `http://${shownHost}:${actualPort}`;
}

/**
 * On close, ends every connection that has no request in flight — idle keep-alive ones and those a
 * client opened without sending a request yet (browsers open such spare connections ahead of use):
 * Node's `closeIdleConnections`, which Fastify calls, leaves the latter open, and they held the
 * close until the headers timeout (60 s). A request in flight still runs to its end.
 */
function dropUnusedConnectionsOnClose(app: FastifyInstance): void {
  const sockets = new Set<Socket>();
  /** Requests in flight per connection (more than one only with pipelining). */
  const inFlight = new Map<Socket, number>();
  let closing = false;
  const dropIfUnused = (socket: Socket) => {
    if (closing && !inFlight.has(socket)) socket.destroy();
  };
  app.server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.once('close', () => {
      sockets.delete(socket);
      inFlight.delete(socket);
    });
    dropIfUnused(socket);
  });
  app.server.on('request', (req: { socket: Socket }, res: { once(event: 'close', fn: () => void): void }) => {
    const { socket } = req;
    inFlight.set(socket, (inFlight.get(socket) ?? 0) + 1);
    res.once('close', () => {
      const left = (inFlight.get(socket) ?? 1) - 1;
      if (left > 0) inFlight.set(socket, left);
      else {
        inFlight.delete(socket);
        dropIfUnused(socket);
      }
    });
  });
  app.addHook('preClose', (done) => {
    closing = true;
    for (const socket of sockets) dropIfUnused(socket);
    done();
  });
}
