#!/usr/bin/env node
// `node scripts/edge-wrangler.js ARGS...`: the wrangler package-lock.json pins, run in the repository (wrangler.toml)
// as `npm run edge:build`, `edge:deploy` and `edge:keys` run it. It is told, unless the caller's environment says
// otherwise, to send no usage metrics, to skip its banner (whose update check asks the registry on every run for a
// version the lock file does not install) and not to warn that `[secrets]` is experimental (docs/edge.md says so
// once; the required-secret check itself stays). Wrangler is a devDependency: a clone installed with
// `npm ci --omit=dev` (a serving host) has none, and is told so rather than `wrangler: not found`.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

/** Wrangler's own switches (system environment variables), each overridden by the caller's environment. */
const QUIET_WRANGLER = {
  WRANGLER_SEND_METRICS: 'false',
  WRANGLER_HIDE_BANNER: 'true',
  WRANGLER_DISABLE_EXPERIMENTAL_WARNING: 'true',
};

/** Runs wrangler with `args` in the repository, its output the caller's (spawnSync's result). `name` prefixes a failure. */
export function runWrangler(name, args) {
  let bin;
  try {
    bin = createRequire(join(root, 'package.json')).resolve('wrangler/bin/wrangler.js');
  } catch {
    process.stderr.write(
      `${name}: wrangler is not installed in ${root}: it is a devDependency, which \`npm ci --omit=dev\` leaves out. ` +
        'Run the edge commands from a clone installed with plain `npm ci` (a CI runner or your machine, not the serving host)\n',
    );
    process.exit(1);
  }
  return spawnSync(process.execPath, [bin, ...args], { cwd: root, stdio: 'inherit', env: { ...QUIET_WRANGLER, ...process.env } });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.exit(runWrangler('edge', process.argv.slice(2)).status ?? 1);
