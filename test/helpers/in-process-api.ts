/**
 * An API and a conductor in one test process, as `ironring up` runs them: the conductor row's
 * published RPC address answers nothing, so only the in-process path (`localConductor`) can work.
 * Every RPC action the API asks for is recorded in `calls` (`"POST heartbeat"`…).
 */
import type { FastifyInstance } from 'fastify';
import { buildApi } from '../../src/api/server.js';
import { registerConductor } from '../../src/cluster/membership.js';
import { TaskTracker } from '../../src/cluster/task.js';
import type { Logger } from '../../src/common/logger.js';
import type { LoadedConfig } from '../../src/config/load.js';
import { NodeOperations } from '../../src/conductor/node-operations.js';
import type { NodeOperationsDeps } from '../../src/conductor/node-operations.js';
import { callRpc } from '../../src/conductor/rpc.js';
import type { Store } from '../../src/db/connect.js';
import { createDriverRegistry } from '../../src/drivers/index.js';
import type { DriverRegistry } from '../../src/drivers/index.js';

export interface InProcessApi {
  app: FastifyInstance;
  ops: NodeOperations;
  calls: string[];
  /** Lets background work (power actions) end, then closes the API. */
  close(): Promise<void>;
}

export async function startInProcessApi(store: Store, config: LoadedConfig['config'], logger: Logger, drivers: DriverRegistry = createDriverRegistry(), opsOptions: Partial<NodeOperationsDeps> = {}): Promise<InProcessApi> {
  await registerConductor(store, { hostname: 'aio', group: '', drivers: ['fake-hardware'], rpcUrl: 'http://127.0.0.1:9' }, 60);
  const ops = new NodeOperations({ store, host: 'aio', tracker: new TaskTracker(), drivers, logger, retry: { attempts: 1, intervalMs: 10 }, ...opsOptions });
  const calls: string[] = [];
  const local = {
    hostname: 'aio',
    call: (method: 'GET' | 'POST', action: string, uuid: string, body: unknown) => {
      calls.push(`${method} ${action}`);
      return callRpc(ops, method, action, uuid, body);
    },
  };
  const app = buildApi({ store, config, logger, localConductor: () => local });
  return {
    app,
    ops,
    calls,
    async close() {
      await Promise.allSettled([...ops.running]);
      await app.close();
    },
  };
}
