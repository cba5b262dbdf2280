/** Cells, host mappings and host discovery: what the scheduler, compute services and `manage cell` use. */
export { CellStores, databaseKey } from './cell-stores.js';
export type { CellStoresOptions } from './cell-stores.js';
export { CELL0_NAME, CELL0_UUID, COMPUTE_BINARY, createCell, deleteCell, findCell, hostCell, isCell0, listCells, mapCell0 } from './cells.js';
export type { CellMapping, DeleteCellResult } from './cells.js';
export { discoverHosts } from './discovery.js';
export type { DiscoveryOptions, DiscoveryResult } from './discovery.js';
export * from './errors.js';
export { deleteHost, listHosts } from './host-mappings.js';
export type { HostMapping } from './host-mappings.js';
