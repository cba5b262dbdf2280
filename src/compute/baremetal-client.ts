/**
 * The compute tier's only way to the bare-metal tier: its REST API (CONVENTIONS: compute never
 * imports conductor, nodes, drivers or boot). Over HTTP with optional basic authentication from a
 * compute service, or through an in-process transport (`fastify.inject`) from the compute API,
 * which is served by the same process as the bare-metal API.
 */
import { IronringError } from '../common/errors.js';
import { faultOf } from '../common/http-errors.js';

/** Thrown when the bare-metal API cannot be reached or answers with an error; `status` 0 = unreachable. */
export class BaremetalApiError extends IronringError {
  override readonly httpStatus = 502;
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

export interface TransportRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Path and query, e.g. `/v1/nodes?limit=10`. */
  path: string;
  body?: unknown;
}

/** Sends one request; resolves to the status and the body text (never throws for HTTP errors). */
export type Transport = (request: TransportRequest) => Promise<{ status: number; body: string }>;

const VERSION_HEADERS = { 'X-OpenStack-Ironic-API-Version': 'latest', Accept: 'application/json' } as const;

/** A transport over HTTP to `endpoint`, with basic authentication when a username is given. */
export function httpTransport(endpoint: string, credentials: { username?: string; password?: string } = {}): Transport {
  const base = endpoint.replace(/\/+$/, '');
  const auth: Record<string, string> = credentials.username ? { Authorization: `Basic ${Buffer.from(`${credentials.username}:${credentials.password ?? ''}`).toString('base64')}` } : {};
  return async ({ method, path, body }) => {
    let res: Response;
    try {
      res = await fetch(`${base}${path}`, {
        method,
        headers: { ...VERSION_HEADERS, ...auth, ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}) } as Record<string, string>,
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(30_000),
      });
    } catch (err) {
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      throw new BaremetalApiError(`cannot reach the bare-metal API at ${base}: ${cause?.code ?? cause?.message ?? (err as Error).message} (check [baremetal] endpoint)`, 0);
    }
    return { status: res.status, body: await res.text() };
  };
}

/** The request headers every transport sends. */
export const BAREMETAL_HEADERS: Readonly<Record<string, string>> = VERSION_HEADERS;

/** A node as the compute tier reads it. */
export interface BaremetalNode {
  uuid: string;
  name?: string | null;
  resource_class?: string | null;
  provision_state?: string;
  target_provision_state?: string | null;
  instance_uuid?: string | null;
  maintenance?: boolean;
  last_error?: string | null;
}

export type PatchOperation = { op: 'add' | 'replace'; path: string; value: unknown } | { op: 'remove'; path: string };

export class BaremetalClient {
  constructor(private readonly transport: Transport) {}

  private async call<T>(request: TransportRequest): Promise<T> {
    const { status, body } = await this.transport(request);
    if (status >= 400) throw new BaremetalApiError(`bare-metal API ${request.method} ${request.path.split('?')[0]}: ${status} ${faultOf(body)}`, status);
    return (body === '' ? {} : JSON.parse(body)) as T;
  }

  /** Every node matching `filters`, following `next` links page by page. */
  async listNodes(fields: readonly string[], filters: Record<string, string> = {}, pageSize = 1000): Promise<BaremetalNode[]> {
    const params = new URLSearchParams({ ...filters, fields: fields.join(','), limit: String(pageSize) });
    let path: string | null = `/v1/nodes?${params.toString()}`;
    const out: BaremetalNode[] = [];
    while (path) {
      const page: { nodes: BaremetalNode[]; next?: string } = await this.call({ method: 'GET', path });
      out.push(...page.nodes);
      // The next link is absolute (public endpoint or Host header): keep only its path and query.
      path = page.next && page.nodes.length > 0 ? nextPath(page.next) : null;
    }
    return out;
  }

  getNode(uuid: string, fields?: readonly string[]): Promise<BaremetalNode> {
    const query = fields ? `?fields=${fields.join(',')}` : '';
    return this.call({ method: 'GET', path: `/v1/nodes/${encodeURIComponent(uuid)}${query}` });
  }

  patchNode(uuid: string, ops: readonly PatchOperation[]): Promise<BaremetalNode> {
    return this.call({ method: 'PATCH', path: `/v1/nodes/${encodeURIComponent(uuid)}`, body: ops });
  }

  /** `PUT /v1/nodes/{uuid}/states/provision` with `target` (`active`, `deleted`…). */
  async setProvisionState(uuid: string, target: string): Promise<void> {
    await this.call({ method: 'PUT', path: `/v1/nodes/${encodeURIComponent(uuid)}/states/provision`, body: { target } });
  }
}

function nextPath(next: string): string {
  const url = new URL(next, 'http://placeholder');
  return `${url.pathname}${url.search}`;
}
