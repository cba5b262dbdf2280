/**
 * `/v1/nodes/{node}/traits` (Ironic's API 1.37): list, replace all, add one, remove one, remove
 * all. Written to the database at once, as Ironic's conductor does under a lock: the traits are the
 * scheduler's input, no machine is touched. Below 1.37 the resource is refused as Ironic refuses it.
 */
import type { FastifyInstance } from 'fastify';
import type { Store } from '../../db/connect.js';
import { getNode } from '../../nodes/node-store.js';
import { addTraits, checkTrait, listTraits, parseTraitList, removeTrait, setTraits } from '../../nodes/traits.js';
import { MethodNotAllowed, NotAcceptable } from '../../common/errors.js';
import { compareVersions, formatVersion, requireVersion } from '../microversions.js';
import type { Microversion } from '../microversions.js';

/** The microversion that introduced node traits. */
export const TRAITS_SINCE: Microversion = [1, 37];

type Params = { Params: { ident: string; trait?: string } };

export function nodeTraitRoutes(app: FastifyInstance, options: { store: Store }): void {
  const { store } = options;
  /**
   * The node, once the microversion has traits. Below 1.37 Ironic answers a GET 406, a PUT 405 and
   * a DELETE 404 (its router's answers for a resource it does not have yet); so does ironring.
   */
  const nodeOf = async (request: { apiVersion: Microversion; url: string; method: string; params: { ident: string } }) => {
    if (compareVersions(request.apiVersion, TRAITS_SINCE) < 0) {
      const needs = `node traits need API version ${formatVersion(TRAITS_SINCE)} or later`;
      if (request.method === 'GET') throw new NotAcceptable(needs);
      if (request.method === 'PUT') throw new MethodNotAllowed(needs);
      requireVersion(request.apiVersion, TRAITS_SINCE, request.url);
    }
    return getNode(store, request.params.ident);
  };

  app.get<Params>('/v1/nodes/:ident/traits', async (request) => {
    const node = await nodeOf(request);
    return { traits: await listTraits(store, node.id) };
  });

  app.put<Params>('/v1/nodes/:ident/traits', async (request, reply) => {
    const node = await nodeOf(request);
    await setTraits(store, node.id, parseTraitList(request.body));
    return reply.code(204).send();
  });

  app.put<Params>('/v1/nodes/:ident/traits/:trait', async (request, reply) => {
    const node = await nodeOf(request);
    await addTraits(store, node.id, [checkTrait(request.params.trait)]);
    return reply.code(204).send();
  });

  app.delete<Params>('/v1/nodes/:ident/traits', async (request, reply) => {
    const node = await nodeOf(request);
    await setTraits(store, node.id, []);
    return reply.code(204).send();
  });

  app.delete<Params>('/v1/nodes/:ident/traits/:trait', async (request, reply) => {
    const node = await nodeOf(request);
    await removeTrait(store, node.id, node.uuid, request.params.trait ?? '');
    return reply.code(204).send();
  });
}
