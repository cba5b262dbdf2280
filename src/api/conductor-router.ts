/**
 * Sends node work to the conductor the ring gives the node to, over its RPC endpoint, and passes
 * the conductor's answer on — errors with their status and message. No live conductor for the
 * node's group → 503. Every call carries the RPC credentials of `[json_rpc] auth_strategy`. When the
 * owner is the conductor of this very process (`ironring up`), the call goes to it directly, behind
 * the same interface: no socket, no credentials, the same actions and errors.
 */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { rpcClientCa, rpcClientCredentials } from '../auth/rpc-auth.js';
import type { RpcCredentials } from '../auth/rpc-auth.js';
import { nodeOwners } from '../cluster/conductor-rings.js';
import type { ConductorRings } from '../cluster/conductor-rings.js';
import { IronringError, NoLiveConductor } from '../common/errors.js';
import { faultOf } from '../common/http-errors.js';
import type { Config } from '../config/options.js';
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

/** A conductor running in this process, lent to the API by whoever started both. */
export interface LocalConductor {
  /** Its hostname: the ring owner this conductor is. */
  readonly hostname: string;
  /**
   * Runs RPC action `method action` for node `uuid` as its endpoint would (`callRpc`), resolving to
   * the answer and throwing the action's errors, which carry their HTTP status.
   */
  call(method: 'GET' | 'POST', action: string, uuid: string, body: unknown): Promise<unknown>;
}

export class ConductorRouter {
  private readonly credentials: RpcCredentials;
  /** CA certificates for https:// conductors, read on first use. */
  private ca: { value: Buffer | undefined } | undefined;

  constructor(
    private readonly config: Config,
    private readonly rings: ConductorRings,
    /** This process's conductor, once started (null until then, and in a process without one). */
    private readonly local: () => LocalConductor | null = () => null,
  ) {
    this.credentials = rpcClientCredentials(config);
  }

  /** Calls `method /v1/rpc/nodes/<uuid>/<action>` on the node's owner; resolves to its JSON answer. */
  async call<T>(node: Pick<NodeRow, 'uuid' | 'conductor_group'>, method: 'GET' | 'POST', action: string, body?: unknown): Promise<T> {
    // Membership read afresh: an operation is never sent to a conductor that left a second ago.
    const lookup = nodeOwners(await this.rings.fresh());
    const owner = lookup.owner(node);
    if (owner === null) {
      throw new NoLiveConductor(`no live conductor in group ${JSON.stringify(node.conductor_group)} can manage node ${node.uuid}; start one or check the conductors with \`ironring conductor list\``);
    }
    const local = this.local();
    if (local !== null && local.hostname === owner) {
      // Through JSON, as over the wire: the conductor gets its own copy, the caller plain data back.
      const answer = await local.call(method, action, node.uuid, body === undefined ? undefined : JSON.parse(JSON.stringify(body)));
      return (answer === undefined ? {} : JSON.parse(JSON.stringify(answer))) as T;
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
    let res: { status: number; text: string };
    try {
      res = await send(`${base}${url}`, {
        method,
        headers: { ...auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: payload,
        ca: base.startsWith('https:') ? (this.ca ??= { value: rpcClientCa(this.config) }).value : undefined,
      });
    } catch (err) {
      throw new NoLiveConductor(`conductor ${owner} (${base}), which owns node ${node.uuid}, did not answer: ${(err as Error).message}`);
    }
    const { text } = res;
    if (res.status === 401) {
      // The caller's request was fine; this API and the conductor disagree on credentials.
      throw new NoLiveConductor(`conductor ${owner} (${base}) refused this API's RPC credentials (${faultOf(text, 500)}); every API and conductor needs the same [json_rpc] settings`);
    }
    if (res.status >= 400) throw new ConductorError(res.status, faultOf(text, 500));
    return (text ? JSON.parse(text) : {}) as T;
  }
}

/**
 * One HTTP(S) request with a 30 s limit. Not `fetch`: it cannot be given the CA file an https://
 * conductor's certificate is checked against.
 */
function send(url: string, options: { method: string; headers: Record<string, string>; body: string; ca: Buffer | undefined }): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const requestOptions = { method: options.method, headers: options.headers, timeout: 30_000, ...(options.ca ? { ca: options.ca } : {}) };
    const req = (target.protocol === 'https:' ? httpsRequest : httpRequest)(target, requestOptions, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('no answer within 30 s')));
    req.on('error', reject);
    req.end(options.body === '' ? undefined : options.body);
  });
}
