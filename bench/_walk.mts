import { randomUUID } from 'node:crypto';
import { HashRing } from '../src/ring/index.js';
const ring = new HashRing(['c1', 'c2', 'c3']);
const keys = Array.from({ length: 10000 }, () => randomUUID());
for (let r = 0; r < 3; r++) {
  let t = performance.now();
  for (const k of keys) ring.lookup(k, { replicas: 2 });
  console.log('replicas 2:', (performance.now() - t).toFixed(1), 'ms per 10k');
  t = performance.now();
  for (const k of keys) ring.lookup(k);
  console.log('replicas 1:', (performance.now() - t).toFixed(1), 'ms per 10k');
}
