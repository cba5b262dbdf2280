/**
 * From the plain inputs of `prepare` to exactly what a node's local boot state must be: validated
 * once, rendered once, compared against the disk by the boot environment. Pure.
 */
import { renderDhcpEntries } from './dhcp.js';
import type { DhcpEntries, DhcpOptions } from './dhcp.js';
import { InvalidBootInput } from './errors.js';
import { configFormat, macLinks, nodeLayout } from './layout.js';
import type { BootRoots, MacLink, NodeLayout } from './layout.js';
import { ipxeParamsProblem, joinParams, renderBootConfig } from './templates/index.js';
import type { BootImages, BootInterface, BootLabel, BootMode, BootNode, BootPort, ImageRole, ImageSource } from './types.js';
import { IMAGE_ROLES } from './types.js';
import { checkBootMode, checkHttpUrl, checkInterface, checkLabel, checkParams, normalizeMac, normalizeUuid, parseChecksum } from './validate.js';

/** Environment-wide settings the spec depends on. */
export interface SpecSettings {
  roots: BootRoots;
  httpUrl?: string;
  defaultBootInterface: BootInterface;
  appendParams?: string;
  deployParams?: string;
  ramdiskParams?: string;
  ipxeTimeoutMs?: number;
  dhcp?: DhcpOptions;
}

/** Everything a prepared node consists of. */
export interface NodeSpec {
  uuid: string;
  mode: BootMode;
  iface: BootInterface;
  label: BootLabel;
  /** Normalized, sorted, distinct MACs of the pxe-enabled ports. */
  macs: string[];
  layout: NodeLayout;
  config: string;
  manifest: string;
  links: MacLink[];
  images: Partial<Record<ImageRole, ImageSource>>;
  dhcp: DhcpEntries | null;
}

/** Validates and renders; throws `InvalidBootInput` before anything touches the disk. */
export function buildNodeSpec(node: BootNode, ports: readonly BootPort[], images: BootImages, settings: SpecSettings): NodeSpec {
  const uuid = normalizeUuid(node.uuid);
  const mode = checkBootMode(node.bootMode);
  const iface = checkInterface(node.bootInterface, settings.defaultBootInterface);
  const label = checkLabel(node.label);
  if (!Array.isArray(ports)) throw new InvalidBootInput('ports', 'must be an array');
  const macs = [
    ...new Set(ports.flatMap((p, i) => (p.pxeEnabled ? [normalizeMac(p.address, `ports[${i}].address`)] : []))),
  ].sort();

  const chosen: Partial<Record<ImageRole, ImageSource>> = {};
  for (const role of IMAGE_ROLES) {
    const image = images[role];
    if (image === undefined) continue;
    parseChecksum(image.checksum, `images.${role}.checksum`);
    if (typeof image.url !== 'string' || image.url === '') throw new InvalidBootInput(`images.${role}.url`, 'is required');
    chosen[role] = image;
  }
  if ((chosen.deployKernel === undefined) !== (chosen.deployRamdisk === undefined)) throw new InvalidBootInput('images', 'deployKernel and deployRamdisk go together');
  if ((chosen.kernel === undefined) !== (chosen.ramdisk === undefined)) throw new InvalidBootInput('images', 'kernel and ramdisk go together');
  if (label === 'deploy' && chosen.deployKernel === undefined) throw new InvalidBootInput('node.label', 'deploy needs images.deployKernel and images.deployRamdisk');
  if (label === 'boot_ramdisk' && chosen.kernel === undefined) throw new InvalidBootInput('node.label', 'boot_ramdisk needs images.kernel and images.ramdisk');
  // A label only for an image pair the node has: a config never names a file that is not there.
  const labels: BootLabel[] = [...(chosen.deployKernel ? (['deploy'] as const) : []), ...(chosen.kernel ? (['boot_ramdisk'] as const) : []), ...(label === 'localboot' ? (['localboot'] as const) : [])];
  if (iface === 'ipxe' && (settings.httpUrl === undefined || settings.roots.httpRoot === undefined)) {
    throw new InvalidBootInput('node.bootInterface', 'ipxe needs httpRoot and httpUrl');
  }

  const format = configFormat(iface, mode);
  const layout = nodeLayout(uuid, format, settings.roots);
  const param = (value: string | undefined, field: string): string => {
    const checked = checkParams(value, field);
    const problem = format === 'ipxe' ? ipxeParamsProblem(checked) : null;
    if (problem !== null) throw new InvalidBootInput(field, problem);
    return checked;
  };
  const config = renderBootConfig(format, {
    uuid,
    label,
    labels,
    // Each label gets its own node parameters: the instance's never reach the deploy ramdisk, nor the other way round.
    appendParams: param(settings.appendParams, 'appendParams'),
    deployParams: joinParams(param(settings.deployParams, 'deployParams'), param(node.deployKernelParams, 'node.deployKernelParams')),
    ramdiskParams: joinParams(param(settings.ramdiskParams, 'ramdiskParams'), param(node.instanceKernelParams, 'node.instanceKernelParams')),
    httpUrl: settings.httpUrl === undefined ? undefined : checkHttpUrl(settings.httpUrl),
    ipxeTimeoutMs: settings.ipxeTimeoutMs,
  });
  return {
    uuid,
    mode,
    iface,
    label,
    macs,
    layout,
    config,
    manifest: `format ${format}\n${macs.map((m) => `${m}\n`).join('')}`,
    links: macs.flatMap((mac) => macLinks(format, settings.roots, uuid, mac)),
    images: chosen,
    dhcp: settings.dhcp === undefined ? null : renderDhcpEntries({ uuid, bootMode: mode, bootInterface: iface }, macs, settings.dhcp),
  };
}

/** Parses a manifest written by `prepare`; tolerant of garbage (a corrupted manifest must not block clean-up). */
export function parseManifest(text: string | null): string[] {
  if (text === null) return [];
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/.test(l));
}
