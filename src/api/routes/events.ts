/**
 * `POST /v1/events` (API 1.54): external events for the bare-metal service — Ironic's network
 * events (`network.bind_port`, `network.unbind_port`, `network.delete_port`), sent by a network
 * service when it changes a port. Checked against Ironic's schema (400 naming the event and field),
 * then logged and answered 204 — which is all Ironic does with them too; ironring has no network
 * service behind it to act on. 404 below 1.54. At most `MAX_EVENTS` per request.
 */
import type { FastifyInstance } from 'fastify';
import { InvalidParameter } from '../../common/errors.js';
import { UUID_PATTERN } from '../../common/uuid.js';
import { isMacAddress } from '../../nodes/port-store.js';
import { requireVersion } from '../microversions.js';
import type { Microversion } from '../microversions.js';

/** Ironic's `allow_expose_events`. */
export const EVENTS_SINCE: Microversion = [1, 54];
/** The event types Ironic accepts. */
export const EVENT_TYPES = ['network.bind_port', 'network.unbind_port', 'network.delete_port'] as const;
/** The most events one request may carry. */
export const MAX_EVENTS = 1000;

const NETWORK_KEYS = ['event', 'port_id', 'mac_address', 'status', 'device_id', 'binding:host_id', 'binding:vnic_type'] as const;
const REQUIRED = ['event', 'port_id', 'mac_address', 'status'] as const;
/** Keys whose value, when a string, must be a UUID (Ironic's `args.uuid`). */
const UUID_KEYS = ['port_id', 'device_id', 'binding:host_id'] as const;
const NULLABLE = ['device_id', 'binding:host_id', 'binding:vnic_type'];

/** Checks one network event as Ironic's `NETWORK_EVENT_VALIDATOR`; `where` is `events[i]`. */
function checkNetworkEvent(where: string, event: Record<string, unknown>): void {
  for (const key of Object.keys(event)) {
    if (!(NETWORK_KEYS as readonly string[]).includes(key)) throw new InvalidParameter(`${where}.${key}: unknown field of a network event; valid fields: ${NETWORK_KEYS.join(', ')}`);
  }
  for (const key of REQUIRED) if (!Object.hasOwn(event, key)) throw new InvalidParameter(`${where}.${key}: required`);
  for (const key of NETWORK_KEYS) {
    if (!Object.hasOwn(event, key)) continue;
    const value = event[key];
    if (value === null && NULLABLE.includes(key)) continue;
    if (typeof value !== 'string' || value.length > 255) throw new InvalidParameter(`${where}.${key}: expected a string of at most 255 characters${NULLABLE.includes(key) ? ' or null' : ''}`);
  }
  for (const key of UUID_KEYS) {
    const value = event[key];
    if (typeof value === 'string' && !UUID_PATTERN.test(value)) throw new InvalidParameter(`${where}.${key}: expected a UUID, got ${JSON.stringify(value)}`);
  }
  if (!isMacAddress(event.mac_address)) throw new InvalidParameter(`${where}.mac_address: expected a MAC address, got ${JSON.stringify(event.mac_address)}`);
}

/** The events of a request body, checked; 400 naming the first problem. */
export function parseEvents(body: unknown): Array<Record<string, unknown>> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new InvalidParameter('request body: expected a JSON object with events');
  for (const key of Object.keys(body)) if (key !== 'events') throw new InvalidParameter(`${key}: unknown field; the body has only events`);
  const events = (body as { events?: unknown }).events;
  if (!Array.isArray(events) || events.length === 0) throw new InvalidParameter('events: expected a non-empty list of events');
  if (events.length > MAX_EVENTS) throw new InvalidParameter(`events: at most ${MAX_EVENTS} events per request, got ${events.length}`);
  return events.map((event: unknown, i) => {
    const where = `events[${i}]`;
    if (typeof event !== 'object' || event === null || Array.isArray(event)) throw new InvalidParameter(`${where}: expected an object`);
    const type = (event as Record<string, unknown>).event;
    if (typeof type !== 'string' || !(EVENT_TYPES as readonly string[]).includes(type)) {
      throw new InvalidParameter(`${where}.event: expected one of ${EVENT_TYPES.join(', ')}, got ${JSON.stringify(type) ?? 'nothing'}`);
    }
    checkNetworkEvent(where, event as Record<string, unknown>);
    return event as Record<string, unknown>;
  });
}

export function eventRoutes(app: FastifyInstance): void {
  app.post('/v1/events', async (request, reply) => {
    requireVersion(request.apiVersion, EVENTS_SINCE, request.url);
    for (const event of parseEvents(request.body)) request.log.debug({ event }, 'received external event');
    return reply.code(204).send();
  });
}
