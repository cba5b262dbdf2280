/**
 * Paths without the version, as Ironic routes them: a request for `/nodes/…` is served as
 * `/v1/nodes/…` (Ironic puts its default version in front of a path that names none). The bookmark
 * links of every resource are such paths, and clients whose catalog endpoint lacks `/v1` (tempest's
 * client, some of Nova's) send them. Only the first segments that name a v1 resource are rewritten,
 * so `/`, `/healthz` and `/metrics` keep their own routes.
 */

/** First path segments of v1 resources. */
const V1_RESOURCES: ReadonlySet<string> = new Set([
  'nodes', 'ports', 'portgroups', 'chassis', 'drivers', 'conductors', 'volume', 'allocations', 'deploy_templates',
  'events', 'lookup', 'heartbeat', 'continue_inspection', 'inspection_rules', 'shards', 'runbooks',
]);

/** `url` with `/v1` put in front when its first segment is a v1 resource; otherwise unchanged. */
export function withDefaultVersion(url: string): string {
  const first = /^\/([^/?#]+)/.exec(url)?.[1];
  return first !== undefined && V1_RESOURCES.has(first) ? `/v1${url}` : url;
}
