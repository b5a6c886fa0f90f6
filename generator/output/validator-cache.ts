/**
 * The build's validators, kept as ajv standalone code beside the compiled generator, as Python keeps its
 * bytecode beside its sources: compiling the contract took 55-65 ms of every build, loading it takes a few. The
 * code is a function of the contract and of ajv, both named in its key; a key that differs is compiled again and
 * the file replaced. Only compiled JavaScript keeps it (never the source tree), and a folder it cannot write to
 * leaves every build compiling in memory as before.
 */
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ValidateFunction } from 'ajv';
import standaloneCode from 'ajv/dist/standalone/index.js';
import { toJson } from '../contract/json.js';
import { sha256 } from './manifest.js';

type Ajv = Parameters<typeof standaloneCode.default>[0];

const here = dirname(fileURLToPath(import.meta.url));
const FILE = join(here, 'contract-validators.cjs');
const compiled = import.meta.url.endsWith('.js');
const require = createRequire(import.meta.url);
const versionOf = (pkg: string) =>
  (JSON.parse(readFileSync(require.resolve(`${pkg}/package.json`), 'utf8')) as { version: string }).version;

/** What the standalone code depends on: the contract, the validators asked for, ajv's options and versions. */
export function validatorKey(contract: object, refs: Record<string, string>, options: object): string {
  return sha256([toJson(contract), toJson(refs), toJson(options), versionOf('ajv'), versionOf('ajv-formats')].join('\n'));
}

/** The cached validators under `key`, by name; null when there are none (source tree, another key, no file). */
export function loadValidators(key: string, names: string[]): Map<string, ValidateFunction> | null {
  if (!compiled) return null;
  let mod: Record<string, unknown>;
  try {
    mod = require(FILE) as Record<string, unknown>;
  } catch {
    return null;
  }
  if (mod.key !== key || !names.every((n) => typeof mod[n] === 'function')) return null;
  return new Map(names.map((n) => [n, mod[n] as ValidateFunction]));
}

/** Writes the standalone code of `refs` (name to schema reference) under `key`; a failure only costs the next build a compile. */
export function saveValidators(ajv: Ajv, key: string, refs: Record<string, string>): void {
  if (!compiled) return;
  const tmp = `${FILE}.${process.pid}.tmp`;
  try {
    writeFileSync(tmp, `${standaloneCode.default(ajv, refs)}\nexports.key = ${JSON.stringify(key)};\n`);
    renameSync(tmp, FILE);
  } catch {
    // Read-only install, full disk: the validators are compiled in memory, as they always can be.
    rmSync(tmp, { force: true });
  }
}
