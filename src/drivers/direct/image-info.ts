/**
 * The instance image of a `direct` deploy, read from `instance_info` as Ironic reads it for
 * standalone (no Glance) deploys, and the `image_info` the agent's `standby.prepare_image` gets.
 *
 * - `image_source`: http:// or https:// URL of a whole-disk image (a Glance image ID is refused:
 *   ironring has no image service).
 * - `image_os_hash_algo` + `image_os_hash_value` (sha256, sha384, sha512), or the legacy
 *   `image_checksum` (`<algo>:<hex>` as the other ironring images, or bare hex: its length gives the
 *   algorithm; md5 is refused, as `[agent] allow_md5_checksum` is off by default in Ironic).
 * - `image_disk_format`: `raw` (the default), streamed by the agent from `image_source`; or `qcow2`,
 *   which the owning conductor downloads, verifies, converts to raw and serves itself
 *   (`boot/instance-images.ts`; its checksum must then be sha256 or sha512, the image cache's). The
 *   agent gets the raw image's URL and digest, and refuses an image whose first bytes say
 *   qcow2/vmdk/vhdx/vdi whatever it was told.
 * - `root_device`: root device hints, checked here (the agent checks them again on the machine).
 *
 * Partition images (Ironic's `kernel`/`ramdisk` beside `image_source`) are not supported: the agent
 * refuses an image whose first sector has no partition table, before writing anything.
 */
import { parseHints } from '../../agent/disk/root-device-hints.js';
import { InvalidParameterValue } from '../errors.js';
import type { FieldBag } from '../fields.js';
import { optionalString, requiredString } from '../fields.js';
import type { DriverTask } from '../task.js';

const HASH_LENGTHS: Readonly<Record<string, number>> = { sha256: 64, sha384: 96, sha512: 128 };
const BY_LENGTH: Readonly<Record<number, string>> = { 64: 'sha256', 96: 'sha384', 128: 'sha512' };

/** What `standby.prepare_image` is given as `image_info` (IPA's keys). */
export interface AgentImageInfo {
  id: string;
  urls: string[];
  disk_format: 'raw';
  container_format: 'bare';
  os_hash_algo: string;
  os_hash_value: string;
  stream_raw_images: true;
  image_type: 'whole-disk';
  node_uuid: string;
  /** The node's root device hints (IPA reads them from the lookup too; sent so both agree). */
  root_device?: Readonly<Record<string, unknown>>;
}

const PURPOSE = 'the direct deploy interface';

/** Formats `image_disk_format` may name. */
export const DIRECT_DISK_FORMATS = ['raw', 'qcow2'] as const;
export type DirectDiskFormat = (typeof DIRECT_DISK_FORMATS)[number];

/** A raw image the conductor converted and serves (`boot/instance-images.ts`). */
export interface StagedRawImage {
  url: string;
  sha256: string;
}

/** The instance image as `instance_info` names it, checked. */
export interface DirectImageSource {
  url: URL;
  format: DirectDiskFormat;
  algo: string;
  value: string;
  hints: unknown;
}

/** The image checksum as `{algo, value}`; throws naming the field. */
function imageChecksum(bag: FieldBag): { algo: string; value: string } {
  const algo = optionalString(bag, 'image_os_hash_algo');
  const value = optionalString(bag, 'image_os_hash_value');
  if (algo !== undefined || value !== undefined) {
    if (algo === undefined) throw new InvalidParameterValue('instance_info.image_os_hash_algo', 'is required with image_os_hash_value');
    if (value === undefined) throw new InvalidParameterValue('instance_info.image_os_hash_value', 'is required with image_os_hash_algo');
    const length = HASH_LENGTHS[algo.toLowerCase()];
    if (length === undefined) throw new InvalidParameterValue('instance_info.image_os_hash_algo', `must be one of ${Object.keys(HASH_LENGTHS).join(', ')}, not ${JSON.stringify(algo)}`);
    if (!new RegExp(`^[0-9a-fA-F]{${length}}$`).test(value)) throw new InvalidParameterValue('instance_info.image_os_hash_value', `must be a ${algo} digest (${length} hex digits)`);
    return { algo: algo.toLowerCase(), value: value.toLowerCase() };
  }
  const legacy = optionalString(bag, 'image_checksum');
  if (legacy === undefined) {
    throw new InvalidParameterValue('instance_info.image_os_hash_value', `is required by ${PURPOSE} with image_os_hash_algo (or image_checksum): every image is verified`);
  }
  const m = /^(?:(sha256|sha384|sha512|md5):)?([0-9a-fA-F]+)$/.exec(legacy);
  const algo2 = m ? (m[1] ?? BY_LENGTH[m[2]!.length]) : undefined;
  if (!m || algo2 === undefined || (m[1] !== undefined && m[2]!.length !== HASH_LENGTHS[m[1]])) {
    if (m && (m[1] === 'md5' || (m[1] === undefined && m[2]!.length === 32))) {
      throw new InvalidParameterValue('instance_info.image_checksum', 'is an md5 digest, which is not accepted; give image_os_hash_algo sha256 (or sha512) and image_os_hash_value');
    }
    throw new InvalidParameterValue('instance_info.image_checksum', `must be a sha256, sha384 or sha512 digest (hex, optionally prefixed "<algo>:"), not ${JSON.stringify(legacy.slice(0, 140))}`);
  }
  return { algo: algo2, value: m[2]!.toLowerCase() };
}

/**
 * Reads and checks the instance image of a `direct` deploy; throws `InvalidParameterValue` naming
 * the field. Pure: nothing is fetched.
 */
export function directImageSource(task: DriverTask): DirectImageSource {
  const bag: FieldBag = { name: 'instance_info', value: task.node.instance_info };
  const source = requiredString(bag, 'image_source', PURPOSE);
  if (!/^https?:\/\//i.test(source)) {
    throw new InvalidParameterValue('instance_info.image_source', `must be an http:// or https:// URL of a whole-disk image (ironring has no image service), not ${JSON.stringify(source.slice(0, 200))}`);
  }
  let url: URL;
  try {
    url = new URL(source);
  } catch {
    throw new InvalidParameterValue('instance_info.image_source', 'is not a valid URL');
  }
  if (url.username !== '' || url.password !== '') throw new InvalidParameterValue('instance_info.image_source', 'must not carry a user name or password (the agent and the logs would see them)');
  // Ironic's marks of a partition image: image_type, or a kernel and ramdisk beside the image.
  // Written as it is to a whole disk one would boot nothing: refused before anything boots.
  const imageType = optionalString(bag, 'image_type');
  if (imageType !== undefined && imageType !== 'whole-disk') {
    throw new InvalidParameterValue('instance_info.image_type', `is ${JSON.stringify(imageType.slice(0, 40))}: the direct deploy writes whole-disk images only (partition images are not supported yet)`);
  }
  const given = (key: string) => {
    const v = task.node.instance_info[key];
    return v !== undefined && v !== null && v !== '';
  };
  if (given('kernel') && given('ramdisk')) {
    throw new InvalidParameterValue('instance_info.kernel', 'and instance_info.ramdisk are set, which marks a partition image: the direct deploy writes whole-disk images only (partition images are not supported yet); remove them, or use the ramdisk deploy interface to network-boot a kernel and ramdisk');
  }
  const format = optionalString(bag, 'image_disk_format') ?? 'raw';
  if (!(DIRECT_DISK_FORMATS as readonly string[]).includes(format)) {
    throw new InvalidParameterValue('instance_info.image_disk_format', `must be raw or qcow2, not ${JSON.stringify(format.slice(0, 40))} (convert it with qemu-img convert -O raw)`);
  }
  const { algo, value } = imageChecksum(bag);
  if (format === 'qcow2' && algo !== 'sha256' && algo !== 'sha512') {
    throw new InvalidParameterValue('instance_info.image_os_hash_algo', `must be sha256 or sha512 for a qcow2 image (the conductor's image cache verifies it), not ${algo}`);
  }
  const hints = task.node.instance_info.root_device ?? task.node.properties.root_device;
  try {
    parseHints(hints);
  } catch (err) {
    const where = task.node.instance_info.root_device !== undefined ? 'instance_info.root_device' : 'properties.root_device';
    throw new InvalidParameterValue(where, (err as Error).message);
  }
  return { url, format: format as DirectDiskFormat, algo, value, hints };
}

/**
 * What `standby.prepare_image` gets: the raw image at `image_source`, or for a qcow2 source the raw
 * image the conductor staged from it (`staged`, required then).
 */
export function directImageInfo(task: DriverTask, staged?: StagedRawImage): AgentImageInfo {
  const { url, format, algo, value, hints } = directImageSource(task);
  if (format !== 'raw' && staged === undefined) throw new Error(`a ${format} image is given to the agent only once the conductor has converted it`);
  const id = url.pathname.split('/').filter((p) => p !== '').pop() ?? url.host;
  return {
    id,
    urls: [staged?.url ?? url.href],
    disk_format: 'raw',
    container_format: 'bare',
    os_hash_algo: staged ? 'sha256' : algo,
    os_hash_value: staged ? staged.sha256 : value,
    stream_raw_images: true,
    image_type: 'whole-disk',
    node_uuid: task.node.uuid,
    ...(typeof hints === 'object' && hints !== null ? { root_device: hints as Record<string, unknown> } : {}),
  };
}
