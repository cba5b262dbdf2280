/** Boot config templates: pure functions from plain values to config text. */
import type { ConfigFormat } from '../types.js';
import { renderGrub } from './grub.js';
import { renderIpxe } from './ipxe.js';
import type { BootConfigParams } from './params.js';
import { renderPxelinux } from './pxelinux.js';

export type { BootConfigParams } from './params.js';
export { NODE_FILES, joinParams } from './params.js';
export { renderPxelinux } from './pxelinux.js';
export { renderGrub } from './grub.js';
export { renderIpxe, renderBootIpxe, ipxeParamsProblem } from './ipxe.js';
export { switchBootLabel, activeBootLabel } from './switch.js';

/** Renders the config of `format` for a node. */
export function renderBootConfig(format: ConfigFormat, params: BootConfigParams): string {
  switch (format) {
    case 'pxelinux':
      return renderPxelinux(params);
    case 'grub':
      return renderGrub(params);
    case 'ipxe':
      return renderIpxe(params);
  }
}
