/**
 * Pre-caching for replica nodes: a replica keeps the kernels and ramdisks of the nodes it would take
 * over ready in its image cache (never the user image), so a take-over after its owner dies writes
 * files instead of waiting for downloads.
 */
import { sql } from 'kysely';
import type { ImageRef } from '../drivers/fields.js';
import type { NodeRow } from '../nodes/node-store.js';
import type { NodeBrief } from './reconcile-inputs.js';
import { BATCH, chunks, pool } from './work-pool.js';
import type { ExecutorContext } from './reconcile-executor.js';
import type { PassReport } from './reconcile-report.js';

export function imageRef(bag: Readonly<Record<string, unknown>>, key: string): ImageRef | undefined {
  const url = bag[key];
  const checksum = bag[`${key}_checksum`];
  return typeof url === 'string' && typeof checksum === 'string' ? { url, checksum } : undefined;
}

/** The kernels and ramdisks a replica keeps ready: deploy pair and instance pair, never the user image. */
export function bootImages(node: Pick<NodeRow, 'driver_info' | 'instance_info'>): Record<string, ImageRef> {
  const images: Record<string, ImageRef> = {};
  const pairs: Array<[string, Readonly<Record<string, unknown>>, string]> = [
    ['deployKernel', node.driver_info, 'deploy_kernel'],
    ['deployRamdisk', node.driver_info, 'deploy_ramdisk'],
    ['kernel', node.instance_info, 'kernel'],
    ['ramdisk', node.instance_info, 'ramdisk'],
  ];
  for (const [role, bag, key] of pairs) {
    const ref = imageRef(bag, key);
    if (ref) images[role] = ref;
  }
  return images;
}

/** Fetches the images of the replica nodes the plan names (each image set once), counting into `report`. */
export async function precacheNodes(ctx: ExecutorContext, nodes: readonly NodeBrief[], verify: boolean, report: PassReport): Promise<void> {
  const { options, memory, log } = ctx;
  const { boot } = options;
  if (!boot) return;
  // The image fields as the database stores them (text, not parsed): most stamp changes are
  // take-overs elsewhere, which leave the images alone — those nodes cost a string compare.
  const rows: Array<{ id: number; uuid: string; di: string; ii: string }> = [];
  for (const batch of chunks(nodes, BATCH)) {
    if (ctx.stopped()) break;
    rows.push(
      ...(await options.store.db
        .selectFrom('nodes')
        .select(['id', 'uuid', sql<string>`cast(driver_info as text)`.as('di'), sql<string>`cast(instance_info as text)`.as('ii')])
        .where(
          'id',
          'in',
          batch.map((n) => n.id),
        )
        .execute()),
    );
  }
  const stamps = new Map(nodes.map((n) => [n.id, n.stamp]));
  // Nodes of one image set share a key: each set is fetched once, not once per node.
  const done = new Map<string, Promise<void>>();
  await pool(rows, options.workers, async (row) => {
    if (ctx.stopped()) return;
    const raw = `${row.di}\n${row.ii}`;
    const stamp = stamps.get(row.id) ?? '';
    if (!verify && memory.cachedImages(row.uuid) === raw) {
      memory.markCached(row.uuid, stamp);
      return;
    }
    try {
      const images = bootImages({ driver_info: JSON.parse(row.di) as Record<string, unknown>, instance_info: JSON.parse(row.ii) as Record<string, unknown> });
      const key = JSON.stringify(images);
      let fill = done.get(key);
      if (!fill) done.set(key, (fill = boot.precache(images).then(() => undefined)));
      await fill;
      memory.markCached(row.uuid, stamp, raw);
      report.precached += 1;
      options.metrics.precaches.inc();
    } catch (err) {
      report.failed += 1;
      options.metrics.failures.inc();
      log.warn({ node: row.uuid, err: (err as Error).message }, 'could not pre-cache images for a replica node');
    }
  });
}
