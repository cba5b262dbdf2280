/**
 * The dashboard's one way to read what a conductor publishes on its RPC listener (its `/metrics`,
 * `/v1/reconcile`, a node's boot files): a GET with the RPC credentials of `[json_rpc]
 * auth_strategy` (the API's way to reach a conductor), 1.5 s at most, the answer cut at 1 MiB. The
 * credentials go to the conductor only: nothing of them is in an answer or an error message.
 */
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { rpcClientCa, rpcClientCredentials } from '../auth/rpc-auth.js';
import type { Config } from '../config/options.js';

/** How long a conductor has to answer (ms). */
export const CONDUCTOR_GET_TIMEOUT_MS = 1500;
/** Largest answer read (bytes). */
export const CONDUCTOR_GET_MAX_BYTES = 1024 * 1024;

/** GETs `path` (with its query) from the conductor at `base` with the RPC credentials; the body text of a 200, or throws with the reason. */
export function conductorGet(config: Config, base: string, path: string): Promise<string> {
  const headers = rpcClientCredentials(config)('GET', path, '');
  const target = new URL(path, base);
  const ca = target.protocol === 'https:' ? rpcClientCa(config) : undefined;
  return new Promise((resolve, reject) => {
    const req = (target.protocol === 'https:' ? httpsRequest : httpRequest)(target, { method: 'GET', headers, timeout: CONDUCTOR_GET_TIMEOUT_MS, ...(ca ? { ca } : {}) }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > CONDUCTOR_GET_MAX_BYTES) return req.destroy(new Error('answer larger than 1 MiB'));
        chunks.push(chunk);
      });
      res.on('end', () => (res.statusCode === 200 ? resolve(Buffer.concat(chunks).toString('utf8')) : reject(new Error(`answered ${res.statusCode ?? '?'}`))));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer within ${CONDUCTOR_GET_TIMEOUT_MS} ms`)));
    req.on('error', reject);
    req.end();
  });
}
