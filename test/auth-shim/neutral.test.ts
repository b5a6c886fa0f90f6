/** The handler is runtime-neutral: bundled for a platform without Node, nothing it imports is a `node:` module. */
import { join } from 'node:path';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../helpers.js';

describe('runtime neutrality', () => {
  it.each(['handler.ts', 'edge.ts', 'webhooks/deliverer.ts', 'webhooks/address.ts'])(
    'auth-shim/%s and everything it imports bundle without Node built-ins',
    async (entry) => {
      const result = await build({
        entryPoints: [join(ROOT, 'auth-shim', entry)],
        bundle: true,
        format: 'esm',
        platform: 'neutral',
        // Packages that publish CommonJS only (ipaddr.js, standardwebhooks) are found by `main`, as the edge's bundler finds them.
        mainFields: ['module', 'main'],
        write: false,
        metafile: true,
        logLevel: 'silent',
      });
      const inputs = Object.keys(result.metafile.inputs);
      expect(inputs.some((i) => i.startsWith('node:') || /(^|\/)node\//.test(i))).toBe(false);
      expect(inputs.filter((i) => i.startsWith('generator/')).every((i) => i.startsWith('generator/contract/'))).toBe(true);
      expect(result.errors).toEqual([]);
    },
  );
});
