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

/** Timestamps as the Ironic API prints them: ISO 8601 with seconds and `+00:00`. */
export function apiTime(date: Date | null): string | null {
  if (date === null) return null;
  const iso = date.toISOString(); // YYYY-MM-DDTHH:mm:ss.sssZ (years 0000–9999)
  return iso.length === 24 ? `${iso.slice(0, 19)}+00:00` : iso.replace(/\.\d{3}Z$/, '+00:00');
}
