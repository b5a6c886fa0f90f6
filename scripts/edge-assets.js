#!/usr/bin/env node
// wrangler.toml's build step: the files the docs page loads from swagger-ui-dist (DOCS_FILES in auth-shim/docs.ts),
// copied from the installed package into dist-edge/assets/docs/, which wrangler deploys beside the worker as its
// static assets. Each file is written beside its place and renamed over it, so builds run at once (the tests bundle
// the worker in parallel) never leave a half-written file for another to deploy.
import { copyFileSync, existsSync, mkdirSync, renameSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const compiled = join(root, 'dist', 'auth-shim', 'docs.js');
if (!existsSync(compiled)) {
  process.stderr.write(`edge-assets: ${compiled} is missing; run npm run build (npm ci runs it) first\n`);
  process.exit(1);
}
const { DOCS_FILES } = await import(compiled);
const from = dirname(fileURLToPath(import.meta.resolve('swagger-ui-dist/package.json')));
const to = join(root, 'dist-edge', 'assets', 'docs');
mkdirSync(to, { recursive: true });
for (const name of Object.keys(DOCS_FILES)) {
  const part = join(to, `.${name}.${process.pid}`);
  copyFileSync(join(from, name), part);
  renameSync(part, join(to, name));
}
