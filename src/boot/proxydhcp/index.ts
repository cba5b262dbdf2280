/**
 * The embedded ProxyDHCP responder (DESIGN §6): answers PXE clients with boot information for the
 * MACs of the nodes this conductor serves, and nothing else. Start it with {@link startProxyDhcp}.
 */
export { startProxyDhcp } from './responder.js';
export type { ProxyDhcpOptions, ProxyDhcpResponder, ProxyDhcpStats } from './responder.js';
export { OwnedMacs } from './owned-macs.js';
export type { ServedBoot, ServedListener } from './owned-macs.js';
export { answer, bootFileFor, DEFAULT_ARM64_BOOT_FILES, isIpxeClient, replyDestination } from './answer.js';
export type { AnswerSettings, Arm64BootFiles, Decision, RequestPort } from './answer.js';
export { DhcpDecodeError, DhcpEncodeError, DHCP_MESSAGE, OPTION, clientMac, encodeDhcp, parseDhcp } from './codec.js';
export type { DhcpPacket } from './codec.js';
