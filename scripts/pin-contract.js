#!/usr/bin/env node
// `npm run contract:pin -- Name...`: a change to the contract made on purpose (a new AssetRisk field, a new bound),
// written into its pin, fixtures/contract/schemas.json, from the compiled shapes: the named schemas are written
// (added, or replaced), and any the shapes no longer have are removed; without names, every schema that differs.
// The pin is what the API was published with: review the diff it makes before committing it.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const file = fileURLToPath(new URL('../fixtures/contract/schemas.json', import.meta.url));
const { componentSchemas } = await import('../dist/generator/openapi/schemas.js');
const now = componentSchemas();
const pinned = JSON.parse(readFileSync(file, 'utf8'));
const named = process.argv.slice(2);
const unknown = named.filter((n) => !(n in now));
if (unknown.length) {
  process.stderr.write(`contract:pin: no schema ${unknown.join(', ')} in the shapes (generator/contract/shapes.ts)\n`);
  process.exit(2);
}
// As the contract test compares: the order of keys, and of an enum's or a required list's names, means nothing.
const canonical = (v, sorted = false) =>
  Array.isArray(v)
    ? (sorted ? [...v].sort() : v).map((x) => canonical(x))
    : v && typeof v === 'object'
      ? Object.fromEntries(
          Object.keys(v)
            .sort()
            .map((k) => [k, canonical(v[k], (k === 'enum' || k === 'required') && Array.isArray(v[k]))]),
        )
      : v;
const differs = (n) => JSON.stringify(canonical(now[n])) !== JSON.stringify(canonical(pinned[n]));
const written = (named.length ? named : Object.keys(now)).filter(differs);
const removed = Object.keys(pinned).filter((n) => !(n in now));
const added = Object.keys(now).filter((n) => !(n in pinned) && !written.includes(n));
const changes = written.length + added.length + removed.length;
// The pin keeps the shapes' order, so its keys and the document's compare equal.
const next = Object.fromEntries(Object.keys(now).map((n) => [n, written.includes(n) || !(n in pinned) ? now[n] : pinned[n]]));
if (changes) writeFileSync(file, JSON.stringify(next, null, 2) + '\n');
for (const n of [...written, ...added]) process.stderr.write(`${n in pinned ? 'changed' : 'added'}: ${n}\n`);
for (const n of removed) process.stderr.write(`removed: ${n}\n`);
process.stderr.write(`${changes ? 'wrote' : 'nothing to write in'} fixtures/contract/schemas.json; review it with git diff\n`);
