/**
 * `GET /v1/nodes/:uuid/boot-files` on the conductor's RPC listener: what this conductor holds on its
 * disk for one node (`boot/node-files.ts`: its directories, per-MAC links, `boot.ipxe`, its dnsmasq
 * entries), whether it owns the node on its group's ring now, and whether the node's boot state was
 * last made here (`conductor_affinity`). Read-only; the dashboard's node page shows it.
 *
 * The uuid is checked before anything is read (400 otherwise). A node with nothing here, or unknown
 * to the database, answers 200 with an empty list: "nothing here" is the answer, not an error. The
 * route is not a status path (`auth/rpc-auth.ts`), so it needs the RPC credentials like `/v1/rpc/…`:
 * file names and sizes of a conductor's disk are for its callers only.
 */
import type { FastifyInstance } from 'fastify';
import { dhcpOwnerToken } from '../boot/dhcp-names.js';
import { listNodeFiles } from '../boot/node-files.js';
import type { BootFileEntry, NodeFileRoots } from '../boot/node-files.js';
import { InvalidParameter } from '../common/errors.js';
import { UUID_PATTERN } from '../common/uuid.js';
import type { Config } from '../config/options.js';
import type { Store } from '../db/connect.js';

/** What the endpoint answers. */
export interface BootFilesAnswer {
  node: string;
  /** The conductor that answers (its host name). */
  conductor: string;
  /** Whether this conductor owns the node on its group's ring now (false for a node the database does not know). */
  owned: boolean;
  /** Whether the node's boot state was last made by this conductor (its `conductor_affinity`). */
  affinity_here: boolean;
  /** Everything of the node's boot state here, by root then path; at most `MAX_BOOT_FILES`. */
  files: BootFileEntry[];
  /** More was there than `files` holds. */
  truncated: boolean;
}

export interface BootFilesDeps {
  store: Store;
  config: Config;
  hostname: string;
  group: string;
  /** This conductor's row id, once registered. */
  conductorId(): number | undefined;
  /** The owner of `uuid` on this conductor's group ring, as this conductor sees it. */
  ringOwner(uuid: string): string | undefined;
}

/** The roots this conductor writes boot files into, as its boot environment is configured (`boot-services.ts`). */
export function nodeFileRoots(config: Config): NodeFileRoots {
  const { pxe, deploy, dnsmasq } = config;
  return {
    tftpRoot: pxe.tftp_root,
    httpRoot: deploy.http_root,
    ...(dnsmasq.dhcp_hostsdir && dnsmasq.dhcp_optsdir ? { dhcp: { hostsDir: dnsmasq.dhcp_hostsdir, optsDir: dnsmasq.dhcp_optsdir, owner: dhcpOwnerToken(config.DEFAULT.host) } } : {}),
  };
}

/** The answer for node `raw` (a uuid, either case); `InvalidParameter` (400) for anything else. */
export async function bootFilesOf(deps: BootFilesDeps, raw: string): Promise<BootFilesAnswer> {
  if (!UUID_PATTERN.test(raw)) throw new InvalidParameter(`node: expected a node uuid, got ${JSON.stringify(raw.slice(0, 60))}`);
  const uuid = raw.toLowerCase();
  const { store } = deps;
  const row = await store.db.selectFrom('nodes').select(['id', 'conductor_group', 'conductor_affinity']).where('uuid', '=', uuid).executeTakeFirst();
  const ports = row === undefined ? [] : await store.db.selectFrom('ports').select('address').where('node_id', '=', row.id).orderBy('id').execute();
  const listing = await listNodeFiles(nodeFileRoots(deps.config), uuid, ports.map((p) => p.address));
  const me = deps.conductorId();
  return {
    node: uuid,
    conductor: deps.hostname,
    owned: row !== undefined && row.conductor_group === deps.group && deps.ringOwner(uuid) === deps.hostname,
    affinity_here: row !== undefined && me !== undefined && row.conductor_affinity === me,
    files: listing.files,
    truncated: listing.truncated,
  };
}

/** Registers the route on the conductor's RPC listener (behind its authentication gate). */
export function bootFilesRoute(app: FastifyInstance, deps: BootFilesDeps): void {
  app.get<{ Params: { uuid: string } }>('/v1/nodes/:uuid/boot-files', async (request) => bootFilesOf(deps, request.params.uuid));
}
