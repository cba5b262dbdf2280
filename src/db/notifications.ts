/**
 * Change notifications between processes. On PostgreSQL, LISTEN/NOTIFY carries them in
 * milliseconds; SQLite has nothing like it, so there subscribers poll (DESIGN §3).
 *
 * A listener holds one dedicated connection and re-establishes it (with back-off) when the server
 * goes away, calling `onReconnect` so the subscriber can re-read what it may have missed.
 */
import pg from 'pg';

export interface ListenHandlers {
  onMessage: (payload: string) => void;
  /** Called after the connection was lost and re-established: notifications may have been missed. */
  onReconnect?: () => void;
  /** Called when the connection fails; the listener keeps retrying. */
  onError?: (err: Error) => void;
}

export interface Listener {
  close(): Promise<void>;
}

const CHANNEL_PATTERN = /^[a-z_][a-z0-9_]*$/;

/** Starts listening on `channel`; resolves once the first LISTEN succeeded (or failed: it retries). */
export async function listenPostgres(connectionString: string, channel: string, handlers: ListenHandlers): Promise<Listener> {
  if (!CHANNEL_PATTERN.test(channel)) throw new Error(`invalid channel name ${channel}`);
  let client: pg.Client | undefined;
  let closed = false;
  let retryTimer: NodeJS.Timeout | undefined;
  let delay = 250;

  const connect = async (isReconnect: boolean): Promise<void> => {
    const c = new pg.Client({ connectionString, application_name: 'ironring-listener' });
    c.on('notification', (msg) => {
      if (msg.channel === channel) handlers.onMessage(msg.payload ?? '');
    });
    c.on('error', (err) => {
      handlers.onError?.(err);
      scheduleReconnect(c);
    });
    c.on('end', () => scheduleReconnect(c));
    try {
      await c.connect();
      await c.query(`LISTEN ${channel}`);
      if (closed) {
        await c.end().catch(() => undefined);
        return;
      }
      client = c;
      delay = 250;
      if (isReconnect) handlers.onReconnect?.();
    } catch (err) {
      handlers.onError?.(err as Error);
      await c.end().catch(() => undefined);
      scheduleReconnect(c);
    }
  };

  const scheduleReconnect = (failed: pg.Client): void => {
    if (closed || retryTimer || (client !== undefined && client !== failed)) return;
    client = undefined;
    retryTimer = setTimeout(() => {
      retryTimer = undefined;
      void connect(true);
    }, delay);
    delay = Math.min(delay * 2, 5000);
  };

  await connect(false);
  return {
    async close() {
      closed = true;
      if (retryTimer) clearTimeout(retryTimer);
      const c = client;
      client = undefined;
      if (c) await c.end().catch(() => undefined);
    },
  };
}
