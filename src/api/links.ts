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

/**
 * A list's `next` link, as Ironic's: the request's own path and query with `limit` and `marker` (the
 * uuid of the page's last row) set. Given when a page came back full.
 */
export function nextPageLink(base: string, request: FastifyRequest, limit: number, marker: string): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(request.query as Record<string, string | undefined>)) if (v !== undefined && k !== 'marker' && k !== 'limit') params.set(k, v);
  params.set('limit', String(limit));
  params.set('marker', marker);
  const path = request.url.split('?')[0]!.replace(/\/+$/, '');
  return `${base}${path}?${params.toString()}`;
}

/** Re-exported: resource field tables format their timestamps with it too. */
export { apiTime } from '../common/api-time.js';
