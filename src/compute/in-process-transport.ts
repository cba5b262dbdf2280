/**
 * The bare-metal REST API of this very process, reached without a socket (Fastify's `inject`): how
 * the compute API and the compute service of `ironring up` talk to the bare-metal tier. It is the
 * same REST surface a remote compute service uses, so the compute tier still never imports the
 * bare-metal modules.
 */
import type { FastifyInstance } from 'fastify';
import type { Transport } from './baremetal-client.js';

/** A transport into `app`; `authorization` is sent as is (basic authentication). */
export function injectTransport(app: FastifyInstance, authorization?: string): Transport {
  return async ({ method, path, body }) => {
    const res = await app.inject({
      method,
      url: path,
      headers: {
        'x-openstack-ironic-api-version': 'latest',
        accept: 'application/json',
        ...(authorization ? { authorization } : {}),
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      ...(body !== undefined ? { payload: JSON.stringify(body) } : {}),
    });
    return { status: res.statusCode, body: res.body };
  };
}
