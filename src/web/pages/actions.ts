/**
 * A node's actions as forms: `POST /ui/nodes/{node}/actions/{verb}` turns the form into the API
 * request the CLI would send and makes it through the API's own route (src/web/api-call.ts), with
 * the browser's credentials, so authentication and every validation are the API's. Then 303 back
 * to the node page — or, for htmx, the outcome as a fragment. A refusal shows the API's own message
 * in an alert.
 *
 * Destructive verbs (undeploy, clean, power off, reboot, provide — which cleans disks when automated
 * cleaning is on) ask first, without JavaScript: their form GETs a confirmation page that holds the
 * POST form (with `confirm=yes`); a POST without it is refused.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { InvalidParameter, NotFound } from '../../common/errors.js';
import type { WebDeps } from '../deps.js';
import { callApi } from '../api-call.js';
import type { ApiAnswer } from '../api-call.js';
import { html } from '../html.js';
import type { Html } from '../html.js';
import { page } from '../layout.js';
import { renderNodePage } from './node.js';

type Form = Record<string, string | undefined>;

interface Verb {
  label: string;
  /** Why it asks first; absent for verbs that do not. */
  confirm?: string;
  /** Form fields (name, label, kind). */
  fields?: ReadonlyArray<{ name: string; label: string; kind: 'text' | 'url' | 'textarea'; required?: boolean; placeholder?: string }>;
  /** The API calls the form becomes, in order (the first refusal stops). */
  calls(uuid: string, form: Form): Array<{ method: 'PUT' | 'PATCH' | 'DELETE'; url: string; body?: unknown }>;
}

const provision = (target: string, extra: Record<string, unknown> = {}) => (uuid: string) => [{ method: 'PUT' as const, url: `/v1/nodes/${uuid}/states/provision`, body: { target, ...extra } }];
const power = (target: string) => (uuid: string) => [{ method: 'PUT' as const, url: `/v1/nodes/${uuid}/states/power`, body: { target } }];

/** The `node deploy --image URL --image-checksum algo:hex` patch, checked as the CLI checks it. */
function imagePatch(form: Form): Array<Record<string, unknown>> {
  const image = form.image?.trim() ?? '';
  const checksum = form.image_checksum?.trim() ?? '';
  if (image === '') {
    if (checksum !== '') throw new InvalidParameter('image_checksum: only with an image URL');
    return [];
  }
  if (!/^https?:\/\/\S+$/.test(image) || image.length > 2048) throw new InvalidParameter('image: expected an http:// or https:// URL');
  const m = /^(sha256|sha384|sha512):([0-9a-fA-F]+)$/.exec(checksum);
  const lengths: Record<string, number> = { sha256: 64, sha384: 96, sha512: 128 };
  if (!m || m[2]!.length !== lengths[m[1]!]) throw new InvalidParameter('image_checksum: required with an image, as sha256:<64 hex>, sha384:<96 hex> or sha512:<128 hex>');
  return [
    { op: 'add', path: '/instance_info/image_source', value: image },
    { op: 'add', path: '/instance_info/image_os_hash_algo', value: m[1] },
    { op: 'add', path: '/instance_info/image_os_hash_value', value: m[2]!.toLowerCase() },
  ];
}

function cleanSteps(form: Form): unknown {
  const text = form.clean_steps?.trim() ?? '';
  if (text === '') throw new InvalidParameter('clean_steps: give the steps as a JSON array, e.g. [{"interface": "deploy", "step": "erase_devices_metadata"}]');
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new InvalidParameter(`clean_steps: not valid JSON (${(err as Error).message})`);
  }
}

export const VERBS: Readonly<Record<string, Verb>> = {
  manage: { label: 'Manage', calls: provision('manage') },
  provide: { label: 'Provide', confirm: 'Provide makes the node available; with automated cleaning on, it first cleans the node, erasing its disks.', calls: provision('provide') },
  inspect: { label: 'Inspect', calls: provision('inspect') },
  deploy: {
    label: 'Deploy',
    fields: [
      { name: 'image', label: 'Image URL (whole-disk, optional)', kind: 'url', placeholder: 'http://images/os.raw' },
      { name: 'image_checksum', label: 'Image checksum', kind: 'text', placeholder: 'sha256:…' },
    ],
    calls: (uuid, form) => {
      const patch = imagePatch(form);
      return [...(patch.length > 0 ? [{ method: 'PATCH' as const, url: `/v1/nodes/${uuid}`, body: patch }] : []), ...provision('active')(uuid)];
    },
  },
  undeploy: { label: 'Undeploy', confirm: 'Undeploy tears down the instance on this machine and cleans its disks.', calls: provision('deleted') },
  clean: {
    label: 'Clean',
    confirm: 'A manual clean runs the given steps on the machine; erase steps destroy the data on its disks.',
    fields: [{ name: 'clean_steps', label: 'Clean steps (JSON)', kind: 'textarea', required: true, placeholder: '[{"interface": "deploy", "step": "erase_devices_metadata"}]' }],
    calls: (uuid, form) => provision('clean', { clean_steps: cleanSteps(form) })(uuid),
  },
  'power-on': { label: 'Power on', calls: power('power on') },
  'power-off': { label: 'Power off', confirm: 'Powering off cuts the power of the machine now, whatever runs on it.', calls: power('power off') },
  reboot: { label: 'Reboot', confirm: 'Rebooting power-cycles the machine now, whatever runs on it.', calls: power('rebooting') },
  'maintenance-on': {
    label: 'Maintenance on',
    fields: [{ name: 'reason', label: 'Reason', kind: 'text' }],
    calls: (uuid, form) => [{ method: 'PUT', url: `/v1/nodes/${uuid}/maintenance`, body: form.reason?.trim() ? { reason: form.reason.trim() } : {} }],
  },
  'maintenance-off': { label: 'Maintenance off', calls: (uuid) => [{ method: 'DELETE', url: `/v1/nodes/${uuid}/maintenance` }] },
};

function fieldInputs(verb: string, spec: Verb, form: Form = {}, hidden = false): Html {
  return html`${(spec.fields ?? []).map((f) => {
    const id = `${verb}-${f.name}`;
    const v = form[f.name] ?? '';
    if (hidden) return html`<input type="hidden" name="${f.name}" value="${v}">`;
    if (f.kind === 'textarea') return html`<label for="${id}">${f.label}</label><textarea id="${id}" name="${f.name}" rows="3"${f.required ? html` required` : ''} placeholder="${f.placeholder ?? ''}">${v}</textarea>`;
    return html`<label for="${id}">${f.label}</label><input id="${id}" name="${f.name}" type="${f.kind}" value="${v}"${f.required ? html` required` : ''} placeholder="${f.placeholder ?? ''}">`;
  })}`;
}

/** The forms of the node page: htmx-posted (outcome swapped into #action-result) or, destructive, a GET to the confirmation page. */
export function actionForms(uuid: string): Html {
  const form = (verb: string, spec: Verb) => {
    const url = `/ui/nodes/${uuid}/actions/${verb}`;
    const heading = spec.fields ? html`<h3>${spec.label}</h3>${fieldInputs(verb, spec)}` : '';
    if (spec.confirm !== undefined) {
      return html`<form class="action" method="get" action="${url}">${heading}<button type="submit" class="danger">${spec.label}…</button></form>`;
    }
    return html`<form class="action" method="post" action="${url}" hx-post="${url}" hx-target="#action-result" hx-swap="innerHTML">${heading}<button type="submit">${spec.label}</button></form>`;
  };
  const entries = Object.entries(VERBS);
  return html`<p class="muted">Buttons marked … ask for confirmation first.</p>
<div class="action-buttons">${entries.filter(([, s]) => !s.fields).map(([v, s]) => form(v, s))}</div>
<div class="actions">${entries.filter(([, s]) => s.fields).map(([v, s]) => form(v, s))}</div>`;
}

function verbOf(raw: string): Verb {
  const spec = Object.hasOwn(VERBS, raw) ? VERBS[raw] : undefined;
  if (spec === undefined) throw new NotFound(`no action ${JSON.stringify(raw.slice(0, 40))}; actions: ${Object.keys(VERBS).join(', ')}`);
  return spec;
}

/** Makes the verb's API calls; the first refusal (its message) or null when all were accepted. */
async function perform(app: FastifyInstance, request: FastifyRequest, uuid: string, spec: Verb, form: Form): Promise<ApiAnswer | null> {
  for (const call of spec.calls(uuid, form)) {
    const answer = await callApi(app, request, call.method, call.url, call.body);
    if (answer.status >= 400) return answer;
  }
  return null;
}

/** The node's uuid by uuid or name, through the API (404 page when it has none). */
async function nodeUuid(app: FastifyInstance, request: FastifyRequest, ident: string): Promise<string> {
  const res = await callApi(app, request, 'GET', `/v1/nodes/${encodeURIComponent(ident)}?fields=uuid`);
  const uuid = (res.body as { uuid?: unknown } | null)?.uuid;
  if (res.status !== 200 || typeof uuid !== 'string') throw new NotFound(res.error ?? `node ${ident} could not be found`);
  return uuid;
}

export function actionRoutes(app: FastifyInstance, deps: WebDeps): void {
  type Req = FastifyRequest<{ Params: { ident: string; verb: string }; Querystring: Form; Body: Form | undefined }>;

  // The confirmation page of a destructive verb: what it does, and the POST form that does it.
  app.get('/ui/nodes/:ident/actions/:verb', async (request: Req, reply: FastifyReply) => {
    const spec = verbOf(request.params.verb);
    const uuid = await nodeUuid(app, request, request.params.ident);
    const url = `/ui/nodes/${uuid}/actions/${request.params.verb}`;
    const body = html`<p class="warning" role="alert">${spec.confirm ?? 'Confirm the action.'}</p>
<p>Node <a href="/ui/nodes/${uuid}" class="mono">${uuid}</a>.</p>
<form class="action confirm" method="post" action="${url}"><input type="hidden" name="confirm" value="yes">${fieldInputs(request.params.verb, spec, request.query, false)}
<button type="submit" class="danger">Yes, ${spec.label.toLowerCase()}</button> <a href="/ui/nodes/${uuid}">Cancel</a></form>`;
    reply.type('text/html; charset=utf-8').header('Cache-Control', 'no-store');
    return page({ title: `${spec.label} node?`, nav: 'nodes', body, live: false }).text;
  });

  app.post('/ui/nodes/:ident/actions/:verb', async (request: Req, reply: FastifyReply) => {
    const verb = request.params.verb;
    const spec = verbOf(verb);
    const form: Form = request.body && typeof request.body === 'object' ? request.body : {};
    const htmx = request.headers['hx-request'] === 'true';
    const uuid = await nodeUuid(app, request, request.params.ident);
    if (spec.confirm !== undefined && form.confirm !== 'yes') {
      throw new InvalidParameter(`confirm: ${spec.label.toLowerCase()} must be confirmed (its confirmation page is GET ${`/ui/nodes/${uuid}/actions/${verb}`})`);
    }
    let error: string | null = null;
    let status = 400;
    try {
      const refusal = await perform(app, request, uuid, spec, form);
      if (refusal !== null) ({ error, status } = refusal);
    } catch (err) {
      if (!(err instanceof InvalidParameter)) throw err;
      error = err.message;
    }
    reply.header('Cache-Control', 'no-store');
    if (htmx) {
      // htmx swaps only 2xx answers: the outcome is the fragment, refusal or not.
      reply.type('text/html; charset=utf-8');
      return error !== null
        ? html`<p class="alert" role="alert">${spec.label}: ${error}</p>`.text
        : html`<p class="notice" role="status">${spec.label}: accepted by the API; the state below follows as it happens.</p>`.text;
    }
    if (error === null) return reply.redirect(`/ui/nodes/${uuid}?done=${verb}`, 303);
    reply.code(status).type('text/html; charset=utf-8');
    return renderNodePage(app, deps, request, uuid, { error: `${spec.label}: ${error}` });
  });
}
