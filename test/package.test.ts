/**
 * What a production install brings: swagger-ui-dist depends on @scarf/scarf, whose install script reports the
 * install to its vendor unless the root package opts out. The project opts out, and the installed scarf still
 * honours that setting (a version that ignored it would report again).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT, readJson } from './helpers.js';

describe('package', () => {
  it('opts out of install-time telemetry, in a way the installed @scarf/scarf honours', () => {
    expect(readJson(join(ROOT, 'package.json')).scarfSettings).toEqual({ enabled: false });
    const report = createRequire(join(ROOT, 'node_modules', 'swagger-ui-dist', 'package.json')).resolve('@scarf/scarf/report.js');
    expect(readFileSync(report, 'utf8')).toContain('rootPackage.scarfSettings.enabled === false');
  });
});
