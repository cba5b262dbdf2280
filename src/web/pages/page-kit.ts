/**
 * What the ring, conductors, timeline and compute pages share: bounded query parameters (a bad one
 * is a 400 page naming it), sending a page or a fragment, and the small formats (ages, shares).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { html } from '../html.js';
import type { Html } from '../html.js';
import { page } from '../layout.js';
import type { NavKey } from '../layout.js';

/** A query parameter the page cannot use: answered with 400 and a page that names it. */
export class BadParameter extends Error {
  constructor(
    readonly parameter: string,
    readonly reason: string,
  ) {
    super(`${parameter}: ${reason}`);
  }
}

/** Longest value of any query parameter. */
export const MAX_PARAM_LENGTH = 2000;

export type Query = Record<string, string | string[] | undefined>;

/** Every value given for `name` (repeated keys), each bounded; empty when absent. */
export function values(query: Query, name: string, maxCount = 50): string[] {
  const raw = query[name];
  const list = raw === undefined ? [] : Array.isArray(raw) ? raw : [raw];
  if (list.length > maxCount) throw new BadParameter(name, `at most ${maxCount} values`);
  for (const v of list) if (v.length > MAX_PARAM_LENGTH) throw new BadParameter(name, `longer than ${MAX_PARAM_LENGTH} characters`);
  return list;
}

/** The one value of `name`, or undefined; an empty value counts as absent. */
export function single(query: Query, name: string): string | undefined {
  const list = values(query, name, 1);
  return list[0] === '' ? undefined : list[0];
}

/** An integer in [min, max], or `fallback` when absent. */
export function integer(query: Query, name: string, min: number, max: number, fallback: number): number {
  const text = single(query, name);
  if (text === undefined) return fallback;
  if (!/^[0-9]{1,9}$/.test(text)) throw new BadParameter(name, 'not a whole number');
  const n = Number(text);
  if (n < min || n > max) throw new BadParameter(name, `not between ${min} and ${max}`);
  return n;
}

/** Sends a whole page, or — for `fragment` routes — only the fragment. */
export function sendHtml(reply: FastifyReply, body: Html, status = 200): FastifyReply {
  return reply.code(status).type('text/html; charset=utf-8').header('cache-control', 'no-store').send(body.text);
}

/**
 * Runs a page's handler: a `BadParameter` becomes a 400 page (or fragment) naming the parameter,
 * anything else goes to the API's error handler.
 */
export async function answer(
  request: FastifyRequest,
  reply: FastifyReply,
  options: { title: string; nav: NavKey; fragment: boolean },
  build: (query: Query) => Promise<Html>,
): Promise<FastifyReply> {
  let body: Html;
  try {
    body = await build(request.query as Query);
  } catch (err) {
    if (!(err instanceof BadParameter)) throw err;
    const message = html`<div class="alert" role="alert"><p>Bad query parameter <code>${err.parameter}</code>: ${err.reason}.</p></div>`;
    return sendHtml(reply, options.fragment ? message : page({ title: options.title, nav: options.nav, body: message, live: false }), 400);
  }
  return sendHtml(reply, options.fragment ? body : page({ title: options.title, nav: options.nav, body }));
}

/** `12.3 s`, `4 min 5 s`, `2 h 3 min` — how long ago, from seconds. */
export function duration(seconds: number): string {
  if (!Number.isFinite(seconds)) return '—';
  const s = Math.max(0, seconds);
  if (s < 60) return `${s < 10 ? s.toFixed(1) : Math.round(s)} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ${Math.round((s % 3600) / 60)} min`;
  return `${Math.floor(s / 86400)} d ${Math.round((s % 86400) / 3600)} h`;
}

/** Milliseconds as `850 ms` or `1.25 s`. */
export function millis(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(2)} s`;
}

/** A fraction as `33.3 %`. */
export function percent(fraction: number): string {
  return `${(fraction * 100).toFixed(1)} %`;
}

/** A database time as ISO text (UTC, seconds). */
export function isoTime(at: Date): string {
  return at.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** The state badge: the word carries the meaning, the colour only repeats it. */
export function badge(text: string, tone: 'ok' | 'warn' | 'bad' | 'info'): Html {
  return html`<span class="state ${tone}">${text}</span>`;
}

/** A query string from pairs, leaving out empty values. */
export function queryString(pairs: ReadonlyArray<readonly [string, string | number | undefined]>): string {
  const params = new URLSearchParams();
  for (const [k, v] of pairs) if (v !== undefined && v !== '') params.append(k, String(v));
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}
