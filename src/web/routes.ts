/**
 * The web dashboard under `/ui`: its pages, their fragments and actions, the event stream and the
 * static files, in one fastify plugin with what every dashboard answer shares —
 *
 * - authentication: the API's own gate (`installBasicAuth`, installed on the whole app) covers
 *   every `/ui` path, the event stream and the static files alike; nothing here is public;
 * - CSRF: a POST must come from a page of this origin (`Sec-Fetch-Site: same-origin`, or, from a
 *   browser that does not send it, an `Origin` equal to the request's own); anything else is 403.
 *   Basic credentials are sent by the browser on its own, so a form on another site could
 *   otherwise act with them;
 * - headers: a Content-Security-Policy that allows scripts of this origin only (no inline script),
 *   no framing, no referrer outside the origin;
 * - errors as HTML pages (400 naming the parameter, 404 for an unknown node…), never JSON; a GET
 *   (or HEAD) of a `/ui` path no route serves is an HTML 404 page too, any other method there and
 *   every path outside `/ui` keep the API's JSON 404.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { IronringError } from '../common/errors.js';
import { sendError } from '../common/http-errors.js';
import type { WebDeps } from './deps.js';
import { html } from './html.js';
import { page } from './layout.js';
import { actionRoutes } from './pages/actions.js';
import { computePages } from './pages/compute.js';
import { conductorPages } from './pages/conductors.js';
import { nodePage } from './pages/node.js';
import { nodesPages } from './pages/nodes.js';
import { ringPages } from './pages/ring.js';
import { timelinePages } from './pages/timeline.js';
import { SseHub } from './sse.js';
import { staticRoutes } from './static.js';

/** The page `/` and `/ui` lead a browser to. */
export const DASHBOARD_HOME = '/ui/ring';

const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  // Styles of this origin; inline `style` attributes are allowed for server-drawn charts (bar widths).
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "object-src 'none'",
].join('; ');

/** Null when `request` (a POST) comes from a page of this origin; otherwise why not. */
export function crossSiteProblem(request: FastifyRequest): string | null {
  const site = request.headers['sec-fetch-site'];
  if (site !== undefined) return site === 'same-origin' ? null : `the request came from another site (Sec-Fetch-Site: ${site})`;
  const origin = request.headers.origin;
  if (origin === undefined) return 'the request names no origin (no Sec-Fetch-Site or Origin header); send it from the dashboard';
  let same = false;
  try {
    same = new URL(origin).origin === new URL(`${request.protocol}://${request.headers.host ?? ''}`).origin;
  } catch {
    same = false;
  }
  return same ? null : `the request came from another origin (${origin})`;
}

/** An error page: the status, a heading, and the message in an alert. */
export function sendErrorPage(reply: FastifyReply, status: number, message: string): FastifyReply {
  const title = status === 404 ? 'Not found' : status === 403 ? 'Refused' : status < 500 ? 'Bad request' : 'Error';
  const body = html`<p class="alert" role="alert">${message}</p><p><a href="/ui/nodes">Back to the nodes</a></p>`;
  return reply.code(status).type('text/html; charset=utf-8').send(page({ title, nav: 'nodes', body, live: false }).text);
}

/**
 * The 404 page of a `/ui` path that no route serves: the path named, percent-decoded so that it
 * reads as typed (`/ui/<x>`, not `/ui/%3Cx%3E`) and escaped like every value; a way back.
 */
export function sendNotFoundPage(reply: FastifyReply, rawPath: string): FastifyReply {
  let path = rawPath;
  try {
    path = decodeURIComponent(rawPath);
  } catch {
    // not valid percent-encoding: shown as it came
  }
  const body = html`<p class="alert" role="alert">No dashboard page at <code>${path}</code>.</p><p><a href="/ui/nodes">Back to the nodes</a></p>`;
  return reply.code(404).type('text/html; charset=utf-8').send(page({ title: 'Not found', nav: 'nodes', body, live: false }).text);
}

/** Registers the dashboard on `app` (the API's routes plugin). */
export function webRoutes(app: FastifyInstance, deps: Omit<WebDeps, 'events'>): SseHub {
  const events = new SseHub({ store: deps.store, heartbeatTimeout: deps.config.conductor.heartbeat_timeout, logger: deps.logger });
  const full: WebDeps = { ...deps, events };
  void app.register(async (ui) => {
    // Pages are not API resources: kept out of the OpenAPI document.
    ui.addHook('onRoute', (route) => {
      route.schema = { ...(route.schema ?? {}), hide: true };
    });
    ui.addHook('onRequest', async (request, reply) => {
      reply.header('Content-Security-Policy', CSP);
      reply.header('X-Frame-Options', 'DENY');
      reply.header('Referrer-Policy', 'same-origin');
      reply.header('X-Content-Type-Options', 'nosniff');
      if (request.method === 'POST') {
        const problem = crossSiteProblem(request);
        if (problem !== null) return sendErrorPage(reply, 403, `refused: ${problem}`);
      }
    });
    // Forms post urlencoded; only the dashboard's routes read them (the API stays JSON-only).
    ui.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 256 * 1024 }, (_request, body: string, done) => {
      done(null, Object.fromEntries(new URLSearchParams(body)));
    });
    ui.setErrorHandler((err: Error, request, reply) => {
      if (err instanceof IronringError) return sendErrorPage(reply, err.httpStatus, err.message);
      const status = (err as { statusCode?: unknown }).statusCode;
      if (typeof status === 'number' && status >= 400 && status < 500) return sendErrorPage(reply, status, err.message);
      request.log.error({ err }, 'unhandled error in a dashboard page');
      return sendErrorPage(reply, 500, 'internal error; see the API log for details');
    });

    // Unknown paths under /ui (a context with that prefix gets them; the API's handler keeps the rest).
    void ui.register(
      async (under) => {
        under.setNotFoundHandler((request, reply) => {
          const path = request.url.split('?')[0] ?? '';
          if (request.method === 'GET' || request.method === 'HEAD') return sendNotFoundPage(reply, path);
          return sendError(reply, 404, `the resource could not be found: ${request.method} ${path}`);
        });
      },
      { prefix: '/ui' },
    );

    ui.get('/ui', async (_request, reply) => reply.redirect(DASHBOARD_HOME, 303));
    staticRoutes(ui);
    events.register(ui);
    nodesPages(ui, full);
    nodePage(ui, full);
    actionRoutes(ui, full);
    ringPages(ui, full);
    conductorPages(ui, full);
    timelinePages(ui, full);
    computePages(ui, full);
  });
  return events;
}
