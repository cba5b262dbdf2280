/** Base URLs and resource links in the Ironic API's shape (`self` and `bookmark`). */
import type { FastifyRequest } from 'fastify';

/** The API's base URL: the configured public endpoint, else the request's own scheme and Host. */
export function baseUrl(request: FastifyRequest, publicEndpoint: string): string {
  if (publicEndpoint) return publicEndpoint.replace(/\/+$/, '');
  return `${request.protocol}://${request.host}`;
}

export function resourceLinks(base: string, collection: string, id: string): Array<{ href: string; rel: string }> {
  const path = `${collection}/${encodeURIComponent(id)}`;
  return [
    { href: `${base}/v1/${path}`, rel: 'self' },
    { href: `${base}/${path}`, rel: 'bookmark' },
  ];
}

/** Re-exported: resource field tables format their timestamps with it too. */
export { apiTime } from '../common/api-time.js';
