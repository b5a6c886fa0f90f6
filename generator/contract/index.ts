/** The shared contract: what both the build and the request-time shim must agree on. Runtime-neutral. */
export * from './constants.js';
export * from './errors.js';
export * from './history-page.js';
export * from './changes-page.js';
export * from './envelope.js';
export * from './plans.js';
export * from './tree.js';
export * from './manifest-check.js';
export * from './json.js';
export * from './time.js';
export * from './encodings.js';
export * from './bulk.js';
export * from './usage.js';
export * from './keys.js';
