/**
 * `conductors.proxydhcp_address`: where the conductor's ProxyDHCP responder listens
 * (`host:67+4011`: the DHCP port and the PXE port), null when it runs none. Written with the TFTP and
 * HTTP boot endpoints when the conductor registers, so the dashboard shows all three from the row.
 */
import type { Kysely, Migration } from 'kysely';

export function baremetalConductorProxyDhcp(): Migration {
  return {
    async up(db: Kysely<unknown>) {
      await db.schema.alterTable('conductors').addColumn('proxydhcp_address', 'varchar(255)').execute();
    },
    async down(db: Kysely<unknown>) {
      await db.schema.alterTable('conductors').dropColumn('proxydhcp_address').execute();
    },
  };
}
