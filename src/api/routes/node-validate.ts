/**
 * `GET /v1/nodes/{node}/validate`: whether each of a node's interfaces has what it needs, in the
 * Ironic API's shape — `{"power": {"result": true}, "console": {"result": false, "reason": "…"}}`.
 * `baremetal node validate` prints it.
 *
 * Every `validate` of the built-in interfaces only reads node fields and ports (no BMC, no boot
 * files), so the API answers from its own driver registry instead of a conductor round trip; it
 * takes no lock, as in Ironic, where validation is a read.
 */
import type { FastifyInstance } from 'fastify';
import type { Store } from '../../db/connect.js';
import { IMPLEMENTED_INTERFACE_TYPES, INTERFACE_TYPES, interfaceField } from '../../drivers/index.js';
import type { DriverRegistry, DriverTask, InterfaceType } from '../../drivers/index.js';
import { getNode } from '../../nodes/node-store.js';
import type { NodeRow } from '../../nodes/node-store.js';
import { listPorts } from '../../nodes/port-store.js';

/** One interface's verdict; `reason` only when it failed, as Ironic answers. */
export interface InterfaceValidation {
  result: boolean;
  reason?: string;
}

/** Ironic validates every interface but `vendor`. */
const VALIDATED_TYPES = INTERFACE_TYPES.filter((t) => t !== 'vendor');

/** More ports than any machine has; validation looks at all of them. */
const PORT_SCAN_LIMIT = 10_000;

function isImplemented(type: InterfaceType): type is (typeof IMPLEMENTED_INTERFACE_TYPES)[number] {
  return (IMPLEMENTED_INTERFACE_TYPES as readonly string[]).includes(type);
}

/** Validates each interface of `node`; failures become `result: false` with the driver's message. */
export async function validateNode(drivers: DriverRegistry, node: NodeRow, ports: DriverTask['ports']): Promise<Record<string, InterfaceValidation>> {
  let task: DriverTask;
  try {
    task = drivers.bind({ node, ports, logger: { debug: () => undefined, info: () => undefined, warn: () => undefined } });
  } catch (err) {
    // The node names a driver or interface no longer enabled: nothing about it can work.
    const reason = (err as Error).message;
    return Object.fromEntries(VALIDATED_TYPES.map((type) => [type, { result: false, reason }]));
  }
  const out: Record<string, InterfaceValidation> = {};
  for (const type of VALIDATED_TYPES) {
    const name = task.driver.names[type];
    if (isImplemented(type)) {
      try {
        await task.driver[type].validate(task);
        out[type] = { result: true };
      } catch (err) {
        out[type] = { result: false, reason: (err as Error).message };
      }
    } else if (name.startsWith('no-')) {
      // Ironic's `no-*` implementations refuse validation: the feature is off for this node.
      out[type] = { result: false, reason: `${interfaceField(type)} ${name}: ${type} is not supported (disabled or not implemented)` };
    } else {
      // `noop` network, `fake` console/inspect/rescue: nothing for them to check.
      out[type] = { result: true };
    }
  }
  return out;
}

export function nodeValidateRoutes(app: FastifyInstance, options: { store: Store; drivers: DriverRegistry }): void {
  const { store, drivers } = options;
  app.get<{ Params: { ident: string } }>('/v1/nodes/:ident/validate', async (request) => {
    const node = await getNode(store, request.params.ident);
    const ports = await listPorts(store, { nodeId: node.id, limit: PORT_SCAN_LIMIT, sortDir: 'asc' });
    return validateNode(drivers, node, ports.map((p) => ({ address: p.address, pxeEnabled: p.pxe_enabled })));
  });
}
