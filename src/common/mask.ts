/** Hides secrets before they reach a terminal, a log or an API response. */

export const MASK = '***';

/** Replaces the password of a URL (`scheme://user:password@host/…`) with `***`. */
export function maskUrl(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/@]*:)([^@]*)@/i, `$1${MASK}@`);
}
