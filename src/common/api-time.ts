/** Timestamps as the Ironic API prints them, for every resource's view. */

/** ISO 8601 with seconds and `+00:00`; null stays null. */
export function apiTime(date: Date | null): string | null {
  if (date === null) return null;
  const iso = date.toISOString(); // YYYY-MM-DDTHH:mm:ss.sssZ (years 0000–9999)
  return iso.length === 24 ? `${iso.slice(0, 19)}+00:00` : iso.replace(/\.\d{3}Z$/, '+00:00');
}
