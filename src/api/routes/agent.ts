/**
 * The agent's endpoints, as Ironic serves them to ironic-python-agent: `GET /v1/lookup` (which node
 * am I, and my configuration — with the node's agent token the first time),
 * `POST /v1/heartbeat/{node}` (I am up at this URL) and `POST /v1/continue_inspection` (my
 * hardware inventory). All answer callers without user credentials (api/auth.ts exempts exactly
 * these three), so all bound what they read; the heartbeat is proven
 * by the node's agent token, which the node's owner checks (conductor/agent-session.ts).
 *
 * Tokens are made here and only their digests go on to the conductor: the token in clear exists in
 * one lookup answer and in the agent's memory, nowhere else.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { agentTokenHash, issueAgentToken } from '../../agent/agent-token.js';
import { INSPECTION_BODY_LIMIT, parseInspectionData } from '../../agent/inspection-data.js';
import { AGENT_API_VERSIONS, DEFAULT_AGENT_VERSION, HEARTBEAT_BODY_LIMIT, LOOKUP_NOT_FOUND, TOKEN_ALREADY_ISSUED, parseHeartbeat, parseLookupQuery } from '../../agent/protocol.js';
import type { LookupAnswer, LookupQuery } from '../../agent/protocol.js';
import { NotFound } from '../../common/errors.js';
import type { DriverRegistry } from '../../drivers/index.js';
import { enrollDiscovered } from '../discovery.js';
import { maskSecrets } from '../../common/mask.js';
import type { Config } from '../../config/options.js';
import type { Store } from '../../db/connect.js';
import { getNode } from '../../nodes/node-store.js';
import type { NodeRow } from '../../nodes/node-store.js';
import { expectsAgent } from '../../nodes/state-machine.js';
import type { ConductorRouter } from '../conductor-router.js';
import { baseUrl, resourceLinks } from '../links.js';
import { MAX_VERSION, requireVersion } from '../microversions.js';

/**
 * The node of a lookup: by `node_uuid` when given (as Ironic), else the one node whose ports carry
 * any of the addresses. None, or addresses spread over several nodes → null.
 */
async function findNode(store: Store, query: LookupQuery): Promise<NodeRow | null> {
  if (query.nodeUuid !== null) return store.db.selectFrom('nodes').selectAll().where('uuid', '=', query.nodeUuid).executeTakeFirst().then((n) => n ?? null);
  const owners = await store.db.selectFrom('ports').select('node_id').distinct().where('address', 'in', query.addresses).limit(2).execute();
  if (owners.length !== 1) return null;
  return (await store.db.selectFrom('nodes').selectAll().where('id', '=', owners[0]!.node_id).executeTakeFirst()) ?? null;
}

export function agentRoutes(app: FastifyInstance, options: { store: Store; config: Config; router: ConductorRouter; drivers: DriverRegistry }): void {
  const { store, config, router, drivers } = options;
  /** Whether any of `macs` is on a port (of one node or several: then it is no unknown machine). */
  const anyPort = async (macs: readonly string[]) => (await store.db.selectFrom('ports').select('id').where('address', 'in', macs).limit(1).execute()).length > 0;

  app.get('/v1/lookup', async (request: FastifyRequest): Promise<LookupAnswer> => {
    requireVersion(request.apiVersion, AGENT_API_VERSIONS.endpoints, request.url);
    const query = parseLookupQuery(request.query as Record<string, unknown>);
    const node = await findNode(store, query);
    // Unknown MACs and a node in a state that expects no agent read the same (Ironic's restrict_lookup).
    if (node === null || !expectsAgent(node.provision_state)) throw new NotFound(LOOKUP_NOT_FOUND);
    const token = await issueToken(node);
    return lookupView(request, node, token.answer);
  });

  /** Issues the node's agent token unless it has one: the token in clear and as the answer shows it. */
  async function issueToken(node: NodeRow): Promise<{ issued: string | null; hash: string | null; answer: string }> {
    const fresh = issueAgentToken();
    const { issued } = await router.call<{ issued: boolean }>(node, 'POST', 'agent_token', { token_hash: fresh.hash });
    return issued ? { issued: fresh.token, hash: fresh.hash, answer: fresh.token } : { issued: null, hash: null, answer: TOKEN_ALREADY_ISSUED };
  }

  /** The node and the agent's configuration, as a lookup answers (and continue_inspection, as Ironic's from 1.84). */
  function lookupView(request: FastifyRequest, node: NodeRow, token: string): LookupAnswer {
    return {
      node: {
        uuid: node.uuid,
        properties: node.properties,
        instance_info: maskSecrets(node.instance_info),
        driver_internal_info: maskSecrets(node.driver_internal_info),
        links: resourceLinks(baseUrl(request, config.api.public_endpoint), 'nodes', node.uuid),
      },
      config: {
        heartbeat_timeout: config.api.ramdisk_heartbeat_timeout,
        agent_token: token,
        agent_token_required: true,
        agent_md5_checksum_enable: false,
      },
    };
  }

  /**
   * The agent's hardware inventory at the end of its boot for inspection (Ironic's ramdisk
   * endpoint): the node is found by the inventory's MACs and must be in `inspect wait` (else 404,
   * as a lookup). A node whose agent looked up holds a token, which must come with the report; one
   * that has none issues it now (IPA posts before it looks up), in the answer, a lookup's. The
   * owner processes the report in the background (202).
   */
  app.post('/v1/continue_inspection', { bodyLimit: INSPECTION_BODY_LIMIT }, async (request, reply) => {
    requireVersion(request.apiVersion, AGENT_API_VERSIONS.endpoints, request.url);
    const data = parseInspectionData(request.body);
    const node = await findNode(store, { addresses: data.macs, ignored: 0, nodeUuid: null });
    if (node === null && config.auto_discovery.enabled && !(await anyPort(data.macs))) {
      // A machine no node knows: enrolled here (no agent session: the node is in enroll).
      const enrolled = await enrollDiscovered(store, config, drivers, data);
      request.log.info({ node: enrolled.uuid, macs: data.macs }, 'auto-discovery enrolled a new node');
      return reply.code(202).send({ node: { uuid: enrolled.uuid, links: resourceLinks(baseUrl(request, config.api.public_endpoint), 'nodes', enrolled.uuid) } });
    }
    if (node === null || node.provision_state !== 'inspect wait') throw new NotFound('no node waiting for inspection data matches the inventory\'s MAC addresses');
    const token = await issueToken(node);
    await router.call(node, 'POST', 'continue_inspection', {
      token_hash: data.agentToken !== null ? agentTokenHash(data.agentToken) : token.hash,
      data: { inventory: data.inventory, ...data.pluginData },
    });
    return reply.code(202).send(lookupView(request, node, token.answer));
  });

  app.post<{ Params: { ident: string } }>('/v1/heartbeat/:ident', { bodyLimit: HEARTBEAT_BODY_LIMIT }, async (request, reply) => {
    requireVersion(request.apiVersion, AGENT_API_VERSIONS.endpoints, request.url);
    const heartbeat = parseHeartbeat(request.body, request.apiVersion, MAX_VERSION);
    const node = await getNode(store, request.params.ident);
    await router.call(node, 'POST', 'heartbeat', {
      token_hash: agentTokenHash(heartbeat.agent_token),
      callback_url: heartbeat.callback_url,
      agent_version: heartbeat.agent_version ?? DEFAULT_AGENT_VERSION,
    });
    return reply.code(202).send();
  });
}
