/**
 * API microversions, negotiated as the Ironic API does: the client names one in
 * `X-OpenStack-Ironic-API-Version` (or `latest`), no header means the minimum, and every response
 * says which range is served and which version answered.
 */
import { InvalidParameter, NotAcceptable, NotFound } from '../common/errors.js';

/** A microversion as [major, minor]. */
export type Microversion = readonly [number, number];

export const MIN_VERSION: Microversion = [1, 1];
/** Raised as the API surface grows; never above what ironring actually implements. */
export const MAX_VERSION: Microversion = [1, 82];

export const VERSION_HEADER = 'X-OpenStack-Ironic-API-Version';
export const MIN_VERSION_HEADER = 'X-OpenStack-Ironic-API-Minimum-Version';
export const MAX_VERSION_HEADER = 'X-OpenStack-Ironic-API-Maximum-Version';

export function formatVersion(v: Microversion): string {
  return `${v[0]}.${v[1]}`;
}

export function compareVersions(a: Microversion, b: Microversion): number {
  return a[0] - b[0] || a[1] - b[1];
}

/**
 * The version a request asked for. `header` is the raw header value (undefined when absent).
 * Throws `InvalidParameter` (400) for a malformed value and `NotAcceptable` (406) outside the range.
 */
export function negotiateVersion(header: string | undefined): Microversion {
  if (header === undefined || header.trim() === '') return MIN_VERSION;
  const value = header.trim().toLowerCase();
  if (value === 'latest') return MAX_VERSION;
  const m = /^(\d+)\.(\d+)$/.exec(value);
  if (!m) throw new InvalidParameter(`invalid value for ${VERSION_HEADER}: ${JSON.stringify(header)}; expected MAJOR.MINOR or 'latest'`);
  const asked: Microversion = [Number(m[1]), Number(m[2])];
  if (compareVersions(asked, MIN_VERSION) < 0 || compareVersions(asked, MAX_VERSION) > 0) {
    throw new NotAcceptable(`version ${formatVersion(asked)} was requested but the supported range is ${formatVersion(MIN_VERSION)} to ${formatVersion(MAX_VERSION)}`);
  }
  return asked;
}

/**
 * Resources that appeared in a later microversion do not exist for older clients: 404, as the
 * Ironic API answers.
 */
export function requireVersion(asked: Microversion, since: Microversion, path: string): void {
  if (compareVersions(asked, since) < 0) {
    throw new NotFound(`the resource could not be found: ${path.split('?')[0]} needs API version ${formatVersion(since)} or later`);
  }
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The microversion negotiated for this request (the minimum outside /v1). */
    apiVersion: Microversion;
  }
}
