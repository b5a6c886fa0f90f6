/**
 * The pipeline's recipe of docs/pipeline.md, run as written (decision 99): the build's exit status routed to the
 * pipeline's own steps, `deploy` and `alert`, which the test defines.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, smallSite, tempDir } from '../helpers.js';
import { copiedTree } from '../auth-shim/tree.js';
import { block } from './blocks.js';

const root = tempDir('rr-pipeline-recipe-');

/** The block in a workspace holding `site/` and `public/`, the previous tree a folder: its exit status and output. */
function pipeline(workspace: string, previous: string) {
  const script = block('pipeline.md', 'sh', 'case $status in')
    .replace('npx risk-readings', `'${process.execPath}' '${BIN}'`)
    .replace('--previous https://api-origin.example.com/', `--previous '${previous}'`);
  const steps = 'deploy() { echo deployed; }\nalert() { echo alerted; }\n';
  return spawnSync('bash', ['-e', '-c', steps + script], { cwd: workspace, encoding: 'utf8' });
}

describe('the build in a pipeline, as docs/pipeline.md runs it', () => {
  it('deploys what is published, alerts on what is refused, and exits 75 to be run again on exit 3', async () => {
    const previous = copiedTree(join(root, 'previous'));
    const good = join(root, 'good');
    await smallSite(join(good, 'site'), 4);
    const published = pipeline(good, previous);
    expect(published.stdout.trim(), published.stderr).toBe('deployed');
    expect(published.status).toBe(0);

    const empty = join(root, 'empty');
    mkdirSync(join(empty, 'site'), { recursive: true });
    const refused = pipeline(empty, previous);
    expect(refused.stdout.trim()).toBe('alerted');
    expect(refused.status).toBe(0);

    // Another build holds the output (this process, alive): the environment, exit 3.
    const held = join(root, 'held');
    await smallSite(join(held, 'site'), 4);
    mkdirSync(join(held, 'public'), { recursive: true });
    const holder = {
      pid: process.pid,
      host: (await import('node:os')).hostname(),
      started: new Date().toISOString(),
      proc_start: null,
      command: 'a test',
    };
    writeFileSync(join(held, 'public', '.lock'), JSON.stringify(holder));
    const busy = pipeline(held, previous);
    expect(busy.stdout).toBe('');
    expect(busy.status).toBe(75);
  });
});
