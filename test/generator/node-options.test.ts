/**
 * The Node options `build` runs under (generator/node-options.ts): on Node 24 V8's young generation is bounded, the
 * process replacing itself once to take the bound (bin/risk-readings.js); an option already given stands, and no
 * other command is touched.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildNodeOptions } from '../../generator/node-options.js';
import { ROOT } from '../helpers.js';

const BIN = join(ROOT, 'bin', 'risk-readings.js');
/** Preloaded: prints the Node options of each start of the process image (its own --import left out). */
const SHOW = `data:text/javascript,process.stderr.write('started with '+JSON.stringify(process.execArgv.filter((a)=>!a.startsWith('--import')&&!a.startsWith('data:')))+'\\n')`;

/** The options each start of the process had, in order, for `args` run under the test's own Node. */
function starts(nodeOptions: string[], ...args: string[]): string[][] {
  const r = spawnSync(process.execPath, ['--import', SHOW, ...nodeOptions, BIN, ...args], { encoding: 'utf8', cwd: ROOT });
  expect(r.status, r.stderr).toBe(0);
  return [...r.stderr.matchAll(/^started with (.*)$/gm)].map((m) => JSON.parse(m[1]!) as string[]);
}

describe('the Node options a build runs under', () => {
  it('bound the young generation on Node 24 and later, where Node 22 bounds it already', () => {
    expect(buildNodeOptions('v24.22.3')).toEqual(['--max-semi-space-size=16']);
    expect(buildNodeOptions('25.0.0')).toEqual(['--max-semi-space-size=16']);
    expect(buildNodeOptions('v22.13.0')).toEqual([]);
  });

  it('build starts once more with them, where there are any; other commands are left alone', () => {
    const wanted = buildNodeOptions();
    expect(starts([], 'build', '--help')).toEqual(wanted.length ? [[], wanted] : [[]]);
    expect(starts([], 'check', '--help')).toEqual([[]]);
  });

  it('an option given on the command line or in NODE_OPTIONS stands', () => {
    expect(starts(['--max-semi-space-size=32'], 'build', '--help')).toEqual([['--max-semi-space-size=32']]);
    const r = spawnSync(process.execPath, ['--import', SHOW, BIN, 'build', '--help'], {
      encoding: 'utf8',
      cwd: ROOT,
      env: { ...process.env, NODE_OPTIONS: '--max_semi_space_size=8' },
    });
    expect(r.stderr.match(/^started with/gm)).toHaveLength(1);
  });
});
