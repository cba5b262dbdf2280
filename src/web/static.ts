/**
 * The dashboard's static files: its stylesheet and htmx 2 with the SSE extension, served from
 * node_modules as installed (no bundler). Each file is read once, at the first request for it, and
 * served with its content type, an ETag and a cache lifetime of an hour: a page load after an
 * upgrade revalidates within the hour at worst.
 */
import { readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';

const require = createRequire(import.meta.url);
const here = path.dirname(fileURLToPath(import.meta.url));

/** Where each served name is read from. The stylesheet lives in src/web/assets (dist/ reads it there too). */
const FILES: Readonly<Record<string, { file: () => string; type: string }>> = {
  'style.css': { file: () => stylesheetPath(), type: 'text/css; charset=utf-8' },
  'htmx.min.js': { file: () => require.resolve('htmx.org/dist/htmx.min.js'), type: 'text/javascript; charset=utf-8' },
  'htmx-ext-sse.js': { file: () => require.resolve('htmx-ext-sse/dist/sse.min.js'), type: 'text/javascript; charset=utf-8' },
};

/** src/web/assets/style.css, from src/web (tsx) or dist/web (the build) alike. */
function stylesheetPath(): string {
  return path.resolve(here, '..', '..', 'src', 'web', 'assets', 'style.css');
}

interface Loaded {
  body: Buffer;
  type: string;
  etag: string;
}

const loaded = new Map<string, Loaded>();

function load(name: string): Loaded | null {
  const spec = FILES[name];
  if (spec === undefined) return null;
  let file = loaded.get(name);
  if (file === undefined) {
    const body = readFileSync(spec.file());
    file = { body, type: spec.type, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` };
    loaded.set(name, file);
  }
  return file;
}

/** `GET /ui/static/{name}`: the three files above, 404 for any other name. */
export function staticRoutes(app: FastifyInstance): void {
  app.get<{ Params: { name: string } }>('/ui/static/:name', async (request, reply) => {
    const file = load(request.params.name);
    if (file === null) return reply.code(404).type('text/plain; charset=utf-8').send('not found\n');
    reply.header('Cache-Control', 'public, max-age=3600');
    reply.header('ETag', file.etag);
    reply.header('X-Content-Type-Options', 'nosniff');
    if (request.headers['if-none-match'] === file.etag) return reply.code(304).send();
    return reply.type(file.type).send(file.body);
  });
}
