#!/usr/bin/env node
// `npm run edge:keys -- FILE [wrangler options]`: push the key file (decision 12 format, as the keys commands write
// it) to the edge's key store, the value `keys.json` of the KV namespace bound as KEYS (wrangler.toml). The file is
// checked with the shim's own parser first, so a file the edge could not read never replaces the one it reads.
// Without options the deployed namespace is written (--remote); `--local --persist-to DIR` writes a local one, and
// any other option (`--env NAME`, `--config FILE`) goes to `wrangler kv key put` as it is. npm runs a script from
// the repository's root, so FILE and the paths of --persist-to and --config are taken from where npm was run
// (INIT_CWD), as the caller wrote them, not from the root, where a file of the same name would be pushed instead.
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runWrangler } from './edge-wrangler.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const fail = (message) => {
  process.stderr.write(`edge:keys: ${message}\n`);
  process.exit(message.startsWith('usage') ? 2 : 1);
};
/** A path as the caller meant it: from the directory npm was run in (INIT_CWD), else this process's. */
const callers = (path) => resolve(process.env.INIT_CWD ?? process.cwd(), path);
const [given, ...rest] = process.argv.slice(2);
if (!given || given.startsWith('-')) fail('usage: npm run edge:keys -- FILE [--local --persist-to DIR | --env NAME ...]');
const file = callers(given);
const PATH_OPTIONS = new Set(['--persist-to', '--config', '-c']);
const options = rest.map((arg, i) => {
  if (PATH_OPTIONS.has(rest[i - 1] ?? '')) return callers(arg);
  const [option, value] = arg.split(/=(.*)/s);
  return value !== undefined && PATH_OPTIONS.has(option) ? `${option}=${callers(value)}` : arg;
});
const compiled = join(root, 'dist', 'auth-shim', 'edge-keys.js');
if (!existsSync(compiled)) fail(`${compiled} is missing; run npm run build (npm ci runs it) first`);
const { KEYS_ENTRY } = await import(compiled);
const { keyStoreFromJson } = await import(join(root, 'dist', 'generator', 'contract', 'keys.js'));

let store;
try {
  store = keyStoreFromJson(JSON.parse(readFileSync(file, 'utf8')), file);
} catch (e) {
  fail(e.code ? `${file}: cannot read it (${e.code})` : e instanceof SyntaxError ? `${file}: not JSON (${e.message})` : e.message);
}
const where = options.includes('--local') ? [] : ['--remote'];
const put = runWrangler('edge:keys', ['kv', 'key', 'put', KEYS_ENTRY, '--binding', 'KEYS', '--path', file, ...where, ...options]);
if (put.status !== 0) fail(`wrangler kv key put exited ${put.status ?? put.signal}; the edge still reads its previous ${KEYS_ENTRY}`);
process.stderr.write(
  `edge:keys: ${store.size} key(s) from ${file} are ${KEYS_ENTRY} in KV (binding KEYS); every isolate reads it within about a minute\n`,
);
