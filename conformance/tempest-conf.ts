/**
 * tempest's configuration for the conformance run: identity from the Keystone stand-in, static
 * accounts (tempest's base class asks for a project admin and a system admin; the stand-in takes
 * any password), only ironic available, fake-hardware with the interfaces ironring enables, and the
 * microversion range 1.1 … ironring's maximum.
 */

export interface TempestConfOptions {
  workspace: string;
  keystoneUrl: string;
  maxMicroversion: string;
  accountsFile: string;
}

export function accountsYaml(): string {
  const account = (name: string, scope: string) => `- username: ${name}\n  ${scope}\n  password: secret\n  roles: [admin, member, reader]\n`;
  return [
    account('tempest-admin1', 'project_name: tempest-admin1'),
    account('tempest-admin2', 'project_name: tempest-admin2'),
    account('tempest-sysadmin1', 'system: all'),
    account('tempest-sysadmin2', 'system: all'),
  ].join('');
}

export function tempestConf(o: TempestConfOptions): string {
  return `[DEFAULT]
log_dir = ${o.workspace}/logs
log_file = tempest.log
debug = True
use_stderr = False
lock_path = ${o.workspace}/tempest_lock

[oslo_concurrency]
lock_path = ${o.workspace}/tempest_lock

[auth]
use_dynamic_credentials = False
test_accounts_file = ${o.accountsFile}
create_isolated_networks = False
admin_domain_scope = False
default_credentials_domain_name = Default

[identity]
auth_version = v3
uri_v3 = ${o.keystoneUrl}
region = RegionOne
admin_role = admin
disable_ssl_certificate_validation = True

[identity-feature-enabled]
api_v2 = False
api_v3 = True

[service_available]
ironic = True
ironic_inspector = False
neutron = False
nova = False
glance = False
cinder = False
swift = False
horizon = False

[enforce_scope]
ironic = False

[baremetal]
catalog_type = baremetal
endpoint_type = publicURL
driver = fake-hardware
enabled_hardware_types = fake-hardware
enabled_boot_interfaces = fake,pxe
enabled_deploy_interfaces = fake,direct,ramdisk
enabled_power_interfaces = fake
enabled_management_interfaces = fake,noop
enabled_bios_interfaces = fake
enabled_raid_interfaces = fake,no-raid
enabled_rescue_interfaces = fake,no-rescue
min_microversion = 1.1
max_microversion = ${o.maxMicroversion}
power_timeout = 60
unprovision_timeout = 120
active_timeout = 120
association_timeout = 30

[baremetal_feature_enabled]
ipxe_enabled = False
adoption = False
`;
}
