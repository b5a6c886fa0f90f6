/** The shared suite (suite.ts) under workerd: the edge entry's handler behaves as the fetch handler and the Node server do. */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll } from 'vitest';
import { startEdge, type Edge } from './edge-setup.js';
import { shimSuite } from './suite.js';
import { KEYS_FILE, builtTree } from './tree.js';

let edge: Edge;
let out = '';

beforeAll(async () => {
  out = builtTree();
  edge = await startEdge({
    entry: 'test/auth-shim/edge-suite-worker.ts',
    out,
    keys: readFileSync(KEYS_FILE, 'utf8'),
    bindings: { MARKETPLACE_SECRET: 'proxy-secret-for-tests' },
  });
});
afterAll(() => edge?.close());

shimSuite('edge under workerd', () => ({ call: edge.call, out }), 'runtime');
