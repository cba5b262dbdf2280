/**
 * The migration sets, one per kind of database (DESIGN §3). A module of its own with no imports,
 * so the CLI can name the sets in its help without loading the database drivers.
 */
export const MIGRATION_SETS = ['baremetal', 'api', 'cell'] as const;
export type MigrationSet = (typeof MIGRATION_SETS)[number];
