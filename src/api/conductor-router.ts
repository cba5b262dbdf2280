/**
 * Sends node work to the conductor the ring gives the node to, over its RPC endpoint, and passes
 * the conductor's answer on — errors with their status and message. No live conductor for the
 * node's group → 503. Every call carries the RPC credentials of `[json_rpc] auth_strategy`.
 */
import { rpcClientCredentials } from '../auth/rpc-auth.js';
import type { RpcCredentials } from '../auth/rpc-auth.js';
import { ownerLookup } from '../cluster/placement.js';
import { conductorRingOptions } from '../cluster/ring-options.js';
import { IronringError, NoLiveConductor } from '../common/errors.js';
import type { Config } from '../config/options.js';
import type { Store } from '../db/connect.js';
import type { NodeRow } from '../nodes/node-store.js';

/** An error a conductor answered with, passed on with the same status and message. */
export class ConductorError extends IronringError {
  constructor(
    override readonly httpStatus: number,
    message: string,
  ) {
    super(message);
  }
}

export class ConductorRouter {
  private readonly credentials: RpcCredentials;

  constructor(
    private readonly store: Store,
    private readonly config: Config,
  ) {
    this.credentials = rpcClientCredentials(config);
  }

  /** Calls `method /v1/rpc/nodes/<uuid>/<action>` on the node's owner; resolves to its JSON answer. */
  async call<T>(node: Pick<NodeRow, 'uuid' | 'conductor_group'>, method: 'GET' | 'POST', action: string, body?: unknown): Promise<T> {
    const { conductor } = this.config;
    const lookup = await ownerLookup(this.store, { heartbeatTimeout: conductor.heartbeat_timeout, ring: conductorRingOptions(conductor) });
    const owner = lookup.owner(node);
    if (owner === null) {
      throw new NoLiveConductor(`no live conductor in group ${JSON.stringify(node.conductor_group)} can manage node ${node.uuid}; start one or check the conductors with \`ironring conductor list\``);
    }
    const base = lookup.rpcUrl(owner);
    if (!base) throw new NoLiveConductor(`conductor ${owner}, which owns node ${node.uuid}, publishes no RPC address`);
    const url = `/v1/rpc/nodes/${node.uuid}/${action}`;
    const payload = body === undefined ? '' : JSON.stringify(body);
    let auth: Record<string, string>;
    try {
      auth = this.credentials(method, url, payload);
    } catch (err) {
      // A missing secret is the operator's to fix; the caller sees why, never a 500.
      throw new NoLiveConductor(`cannot call conductor ${owner}, which owns node ${node.uuid}: ${(err as Error).message}`);
    }
    let res: Response;
    try {
      res = await fetch(`${base}${url}`, {
        method,
        headers: { ...auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: payload }),
        signal: AbortSignal.timeout(30_000),
      });
    } catch (err) {
      throw new NoLiveConductor(`conductor ${owner} (${base}), which owns node ${node.uuid}, did not answer: ${(err as Error).message}`);
    }
    const text = await res.text();
    if (res.status === 401) {
      // The caller's request was fine; this API and the conductor disagree on credentials.
      throw new NoLiveConductor(`conductor ${owner} (${base}) refused this API's RPC credentials (${faultstring(text)}); every API and conductor needs the same [json_rpc] settings`);
    }
    if (!res.ok) throw new ConductorError(res.status, faultstring(text));
    return (text ? JSON.parse(text) : {}) as T;
  }
}

function faultstring(body: string): string {
  try {
    const outer = JSON.parse(body) as { error_message?: string };
    const inner = JSON.parse(outer.error_message ?? '') as { faultstring?: string };
    if (inner.faultstring) return inner.faultstring;
  } catch {
    // not the error format: pass the text on
  }
  return body.slice(0, 500);
}
