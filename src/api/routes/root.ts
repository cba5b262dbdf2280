/**
 * Version discovery: `GET /` and `GET /v1`, in the shape of the Ironic API root documents, so the
 * stock `baremetal` client negotiates its microversion against ironring unchanged.
 */
import type { FastifyInstance } from 'fastify';
import { baseUrl } from '../links.js';
import { MAX_VERSION, MIN_VERSION, formatVersion } from '../microversions.js';

export interface RootOptions {
  /** Base URL for links; empty means the request's own scheme and Host. */
  publicEndpoint: string;
}

function versionDocument(base: string) {
  return {
    id: 'v1',
    links: [{ href: `${base}/v1/`, rel: 'self' }],
    status: 'CURRENT',
    min_version: formatVersion(MIN_VERSION),
    version: formatVersion(MAX_VERSION),
  };
}

export function rootRoutes(app: FastifyInstance, options: RootOptions): void {
  app.get('/', async (request) => {
    const v1 = versionDocument(baseUrl(request, options.publicEndpoint));
    return {
      name: 'ironring',
      description:
        'ironring is a bare-metal provisioning control plane with an Ironic-compatible API; ' +
        'conductors share machines through a consistent hash ring and boot state follows the ring.',
      default_version: v1,
      versions: [v1],
    };
  });

  app.get('/v1', async (request) => {
    const base = baseUrl(request, options.publicEndpoint);
    const doc = versionDocument(base);
    return {
      id: doc.id,
      links: doc.links,
      media_types: [{ base: 'application/json', type: 'application/vnd.openstack.ironic.v1+json' }],
      version: doc,
    };
  });
}
