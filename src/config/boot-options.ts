/**
 * The boot side of the option table (`options.ts`): network boot (`[pxe]`), the direct deploy and
 * its agent (`[deploy]`, `[inspector]`, `[auto_discovery]`, `[agent]`), and DHCP (`[dnsmasq]`, `[dhcp]`). Kept apart only for size;
 * `OPTIONS` spreads these sections in, and they follow the same rules.
 */
import type { OptionSpec } from './options.js';

/** A dotted IPv4 address. */
export const IPV4_PATTERN = /^(25[0-5]|2[0-4]\d|1?\d?\d)(\.(25[0-5]|2[0-4]\d|1?\d?\d)){3}$/;
const OPTIONAL_IPV4_PATTERN = /^((25[0-5]|2[0-4]\d|1?\d?\d)(\.(25[0-5]|2[0-4]\d|1?\d?\d)){3})?$/;

export const BOOT_SECTIONS = {
  pxe: {
    tftp_root: {
      type: { kind: 'string' },
      default: 'tftpboot',
      path: 'data_dir',
      description: 'Root directory served over TFTP (boot configs, per-MAC links, kernels).',
    },
    tftp_master_path: {
      type: { kind: 'string' },
      default: 'master_images',
      path: 'data_dir',
      description: 'Image cache directory; must be on the same file system as tftp_root for hard links.',
    },
    tftp_server_enabled: {
      type: { kind: 'boolean' },
      default: true,
      description: 'Run the embedded TFTP server (false when an existing dnsmasq or tftpd serves tftp_root).',
    },
    tftp_address: {
      type: { kind: 'address' },
      default: '0.0.0.0:69',
      description: 'Address (host:port) the embedded TFTP server listens on.',
    },
    tftp_engine: {
      type: { kind: 'enum', values: ['auto', 'native', 'js'] },
      default: 'auto',
      description:
        'Engine for octet TFTP transfers: native (a C thread per transfer, built by npm ci), js (the event loop), or auto (native when built).',
    },
    tftp_busy_poll_us: {
      type: { kind: 'integer', min: 0, max: 10000 },
      default: 100,
      description:
        'Microseconds a TFTP transfer running alone spins for each ACK before sleeping (lock-step throughput on fast links); a transfer whose ACKs come later backs off. 0 turns it off.',
    },
    tftp_max_transfers: {
      type: { kind: 'integer', min: 1, max: 65536 },
      default: 256,
      description:
        'TFTP transfers in progress at once (each holds a socket and a file, and with the native engine a thread); further requests are refused with a "server busy" TFTP error.',
    },
    tftp_max_transfers_per_client: {
      type: { kind: 'integer', min: 1, max: 65536 },
      default: 8,
      description: 'TFTP transfers in progress at once for one client IP address (a PXE client needs one or two); further requests get "server busy".',
    },
    tftp_max_idle: {
      type: { kind: 'integer', min: 1, max: 255 },
      default: 60,
      description:
        'Seconds a TFTP transfer waits for a silent client, retransmissions included, before dropping it; a client timeout option above this is not acknowledged, and retransmissions are cut to fit.',
    },
    tftp_server: {
      type: { kind: 'string', pattern: /^[A-Za-z0-9.:[\]-]*$/, describe: 'a host or IP address' },
      default: '',
      description: "Address nodes use to reach this conductor's TFTP server (DHCP next-server); empty: the TFTP bind address, or this host's first IPv4 address.",
    },
    pxe_append_params: {
      type: { kind: 'string' },
      default: 'nofb vga=normal',
      description: 'Kernel parameters added to every boot label.',
    },
    default_boot_interface: {
      type: { kind: 'enum', values: ['pxe', 'ipxe'] },
      default: 'ipxe',
      description: 'Boot interface of nodes that name none: iPXE over HTTP, or PXELINUX/GRUB over TFTP.',
    },
    image_cache_size: {
      type: { kind: 'integer', min: 0 },
      default: 20480,
      description: 'MiB the image cache may hold before unused images are removed, oldest first.',
    },
    image_cache_ttl: {
      type: { kind: 'integer', min: 0 },
      default: 10080,
      description: 'Minutes an unused cached image is kept.',
    },
    pxe_bootfile_name: { type: { kind: 'string' }, default: 'pxelinux.0', description: 'Boot file DHCP gives BIOS PXE clients.' },
    uefi_pxe_bootfile_name: { type: { kind: 'string' }, default: 'bootx64.efi', description: 'Boot file DHCP gives UEFI PXE clients.' },
    ipxe_bootfile_name: { type: { kind: 'string' }, default: 'undionly.kpxe', description: 'iPXE chain loader DHCP gives BIOS clients of iPXE nodes.' },
    uefi_ipxe_bootfile_name: { type: { kind: 'string' }, default: 'snponly.efi', description: 'iPXE chain loader DHCP gives UEFI clients of iPXE nodes.' },
  },
  deploy: {
    http_root: {
      type: { kind: 'string' },
      default: 'httpboot',
      path: 'data_dir',
      description: 'Root directory served over HTTP to iPXE clients.',
    },
    http_server_enabled: {
      type: { kind: 'boolean' },
      default: true,
      description: 'Run the embedded HTTP boot server (false when nginx or similar serves http_root).',
    },
    http_address: {
      type: { kind: 'address' },
      default: '0.0.0.0:8080',
      description: 'Address (host:port) the embedded HTTP boot server listens on.',
    },
    http_url: {
      type: { kind: 'string', pattern: /^(https?:\/\/\S+)?$/, describe: 'an http(s):// URL' },
      default: '',
      description: 'Base URL nodes use to reach http_root; empty: derived from http_address and this host.',
    },
    agent_api_url: {
      type: { kind: 'string', pattern: /^(https?:\/\/[^\s/?#@]+(\/[^\s?#]*)?)?$/, describe: 'an http(s):// URL without credentials, query or fragment' },
      default: '',
      description:
        "URL of the API the deploy agent looks up and heartbeats to, given to it as the kernel parameter ipa-api-url (Ironic derives it from its service catalog); empty: [api] public_endpoint. With neither, the direct deploy interface refuses to deploy.",
    },
    fast_track: {
      type: { kind: 'boolean' },
      default: false,
      description:
        "Ironic's [deploy] fast_track: cleaning leaves the node powered on running its deploy agent, and a deploy whose agent heartbeated within fast_track_timeout and still answers uses it without booting the node again.",
    },
    fast_track_timeout: {
      type: { kind: 'integer', min: 0, max: 300 },
      default: 300,
      description: 'Seconds since the agent\'s last heartbeat within which fast_track reuses it (Ironic\'s [deploy] fast_track_timeout; at most 300).',
    },
    erase_devices_priority: {
      type: { kind: 'integer', min: 0, max: 1000 },
      default: 0,
      description:
        "Priority of the direct deploy's erase_devices clean step, a full overwrite of every disk (Ironic's [deploy] erase_devices_priority). 0 (the default here): manual cleaning only; Ironic with IPA's default (10) overwrites every disk on every undeploy, which takes hours on large disks.",
    },
    shred_random_overwrite_iterations: {
      type: { kind: 'integer', min: 0, max: 10 },
      default: 1,
      description: "Random passes of erase_devices over each disk (Ironic's [deploy] shred_random_overwrite_iterations).",
    },
    shred_final_overwrite_with_zeros: {
      type: { kind: 'boolean' },
      default: true,
      description: "Whether erase_devices ends with a pass of zeros, read back to check it (Ironic's [deploy] shred_final_overwrite_with_zeros). With 0 random passes this must be true.",
    },
    erase_devices_metadata_priority: {
      type: { kind: 'integer', min: 0, max: 1000 },
      default: 99,
      description:
        "Priority of the direct deploy's erase_devices_metadata clean step (Ironic's [deploy] erase_devices_metadata_priority; the agent's default 99): automated cleaning runs it when above 0; 0 leaves it to manual cleaning.",
    },
  },
  inspector: {
    add_ports: {
      type: { kind: 'enum', values: ['all', 'active', 'pxe', 'disabled'] },
      default: 'pxe',
      description:
        "Which NICs of an inspected node get ports (Ironic's [inspector] add_ports): pxe — the one it network-booted from (every NIC with an address when the agent could not tell which); active — those with an IP address; all — every Ethernet NIC; disabled — none.",
    },
    keep_ports: {
      type: { kind: 'enum', values: ['all', 'present', 'added'] },
      default: 'all',
      description:
        "Which existing ports inspection keeps (Ironic's [inspector] keep_ports): all; present — those whose MAC the inventory lists; added — those add_ports would add.",
    },
    update_pxe_enabled: {
      type: { kind: 'boolean' },
      default: true,
      description: "Whether inspection sets pxe_enabled on the node's kept ports to whether the node booted from them (Ironic's [inspector] update_pxe_enabled).",
    },
    power_off: {
      type: { kind: 'boolean' },
      default: true,
      description: "Whether the node powers off once its inventory is in (Ironic's [inspector] power_off). With [deploy] fast_track it stays up running its agent whatever this says.",
    },
    disk_partitioning_spacing: {
      type: { kind: 'boolean' },
      default: true,
      description: "Whether local_gb leaves 1 GiB of the root disk for partitioning (Ironic's [inspector] disk_partitioning_spacing).",
    },
    update_local_link_connection: {
      type: { kind: 'boolean' },
      default: true,
      description:
        "Whether inspection fills a port's local_link_connection (switch_id, port_id, switch_info) from the LLDP its NIC heard, keeping keys already set (Ironic's local-link-connection hook, which Ironic leaves out of its default hooks). The agent listens for LLDP only when booted with ipa-collect-lldp=1: see extra_kernel_params.",
    },
    extra_kernel_params: {
      type: { kind: 'string', pattern: /^\s*(?:[A-Za-z0-9_.-]+=[A-Za-z0-9_.:,/=+@%-]*(?:\s+|$))*$/, describe: 'space-separated key=value words; values of letters, digits and _ . : , / = + @ % -' },
      default: '',
      description:
        "Kernel parameters added to the deploy ramdisk's command line when it boots to inspect or to discover a machine (Ironic's [inspector] extra_kernel_params), e.g. \"ipa-collect-lldp=1 ipa-lldp-timeout=10\": one line of key=value words.",
    },
  },
  auto_discovery: {
    enabled: {
      type: { kind: 'boolean' },
      default: false,
      description:
        "Ironic's [auto_discovery] enabled: an inventory posted by a machine no node knows (it network-booted the discovery ramdisk) enrolls it as a new node in enroll, with its properties, ports and inventory, extra.auto_discovered = true.",
    },
    driver: {
      type: { kind: 'enum', values: ['ipmi', 'fake-hardware'] },
      default: 'ipmi',
      description: "Hardware type of discovered nodes (Ironic's [auto_discovery] driver); an ipmi node gets driver_info.ipmi_address from the BMC address the agent read, when it read one.",
    },
    deploy_kernel: {
      type: { kind: 'string' },
      default: '',
      description:
        'Kernel of the ramdisk an unknown machine network-boots (file://, http:// or https:// URL). With deploy_ramdisk, their checksums and [dhcp] proxy_enabled, a conductor answers PXE requests of MACs no node has with it, when the default group\'s ring assigns the MAC to it; discovered nodes get it as driver_info.deploy_kernel.',
    },
    deploy_kernel_checksum: {
      type: { kind: 'string' },
      default: '',
      description: '`sha256:<hex>`, `sha512:<hex>` or `md5:<hex>` of deploy_kernel (every image is verified).',
    },
    deploy_ramdisk: {
      type: { kind: 'string' },
      default: '',
      description: 'Initramfs of the discovery ramdisk, as deploy_kernel; discovered nodes get it as driver_info.deploy_ramdisk.',
    },
    deploy_ramdisk_checksum: {
      type: { kind: 'string' },
      default: '',
      description: 'Checksum of deploy_ramdisk, as deploy_kernel_checksum.',
    },
  },
  agent: {
    command_timeout: {
      type: { kind: 'integer', min: 1, max: 3600 },
      default: 60,
      description: "Seconds the conductor waits for one answer of a node's deploy agent (Ironic's [agent] command_timeout).",
    },
    max_command_attempts: {
      type: { kind: 'integer', min: 1, max: 20 },
      default: 3,
      description: "Attempts to reach a node's deploy agent when the connection fails (Ironic's [agent] max_command_attempts).",
    },
  },
  dnsmasq: {
    dhcp_hostsdir: {
      type: { kind: 'string' },
      default: '',
      description: "dnsmasq dhcp-hostsdir to write per-node host entries into; empty: no DHCP entries.",
    },
    dhcp_optsdir: {
      type: { kind: 'string' },
      default: '',
      description: 'dnsmasq dhcp-optsdir to write per-node boot options into; set together with dhcp_hostsdir.',
    },
    dhcp_cleanup: {
      type: { kind: 'enum', values: ['ignore', 'remove'] },
      default: 'ignore',
      description: "On clean-up, rewrite a node's host line to 'mac,ignore' (as Ironic) or remove it.",
    },
  },
  dhcp: {
    proxy_enabled: {
      type: { kind: 'boolean' },
      default: true,
      description:
        'Run the embedded ProxyDHCP responder (boot information for the PXE clients of the nodes this conductor serves; addresses stay with the site DHCP server). When its ports cannot be bound (not root, or another DHCP server on the host) it logs one warning and the conductor runs without it.',
    },
    proxy_address: {
      type: { kind: 'string', pattern: IPV4_PATTERN, describe: 'an IPv4 address' },
      default: '0.0.0.0',
      description: 'IPv4 address the ProxyDHCP responder binds; on Linux only 0.0.0.0 receives the broadcasts of PXE clients.',
    },
    proxy_port: {
      type: { kind: 'integer', min: 0, max: 65535 },
      default: 67,
      description: 'UDP port of the ProxyDHCP responder for DHCPDISCOVER (67; other values only for tests and relays).',
    },
    proxy_pxe_port: {
      type: { kind: 'integer', min: 0, max: 65535 },
      default: 4011,
      description: 'UDP port of the ProxyDHCP responder for PXE boot server requests (4011).',
    },
    proxy_server_address: {
      type: { kind: 'string', pattern: OPTIONAL_IPV4_PATTERN, describe: 'an IPv4 address or empty' },
      default: '',
      description:
        "IPv4 address the ProxyDHCP responder names itself by (option 54); empty: the TFTP server address nodes use ([pxe] tftp_server) when it is IPv4, else proxy_address, else this host's first IPv4 address.",
    },
    uefi_arm64_pxe_bootfile_name: {
      type: { kind: 'string' },
      default: 'grubaa64.efi',
      description: 'Boot file ProxyDHCP gives 64-bit ARM UEFI PXE clients (architecture 11) of PXE nodes.',
    },
    uefi_arm64_ipxe_bootfile_name: {
      type: { kind: 'string' },
      default: 'snponly-arm64.efi',
      description: 'iPXE chain loader ProxyDHCP gives 64-bit ARM UEFI PXE clients (architecture 11) of iPXE nodes.',
    },
  },
} as const satisfies Record<string, Record<string, OptionSpec>>;
