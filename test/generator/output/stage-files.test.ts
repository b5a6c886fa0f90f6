/**
 * The staging thread: a file and its compressed variants are written as asked, the digests it gives are those of
 * the bytes on disk, and a failed write comes back as the error fs would have thrown (path and cause).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { asEnvironmentError, EnvironmentError } from '../../../generator/exit.js';
import { digest } from '../../../generator/output/manifest.js';
import { stager, StageThread } from '../../../generator/output/stage-files.js';
import { ROOT, tempDir } from '../../helpers.js';

const root = tempDir('rr-stage-');
const text = Buffer.from(JSON.stringify({ rows: Array.from({ length: 200 }, (_, i) => ({ date: `2026-01-${i}`, price: i })) }));

describe('stager', () => {
  it('writes the file and its variants, giving the digests of the bytes written', () => {
    const dir = join(root, 'both');
    const out = stager(dir)({ id: 7, path: 'assets/BTC/history/page-90.json', bytes: text, file: true, variants: true });
    const file = join(dir, 'assets/BTC/history/page-90.json');
    expect(readFileSync(file)).toEqual(text);
    const br = readFileSync(`${file}.br`);
    const gz = readFileSync(`${file}.gz`);
    expect(out).toEqual({ id: 7, encodings: { br: digest(br), gzip: digest(gz) } });
    expect(brotliDecompressSync(br)).toEqual(text);
    expect(gunzipSync(gz)).toEqual(text);
  });

  it('makes only the variants of a file the previous tree lends, and only the file when asked for no variants', () => {
    const dir = join(root, 'apart');
    const stage = stager(dir);
    expect(stage({ id: 1, path: 'a/lent.json', bytes: text, file: false, variants: true })).toMatchObject({ id: 1, encodings: {} });
    expect(existsSync(join(dir, 'a/lent.json'))).toBe(false);
    expect(existsSync(join(dir, 'a/lent.json.br'))).toBe(true);
    expect(stage({ id: 2, path: 'a/plain.json', bytes: text, file: true, variants: false })).toEqual({ id: 2 });
    expect(existsSync(join(dir, 'a/plain.json.gz'))).toBe(false);
  });

  it('reports a failed write as data naming the file and the cause', () => {
    const dir = join(root, 'blocked');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'assets'), 'a file where a folder should be');
    const out = stager(dir)({ id: 3, path: 'assets/BTC/risk.json', bytes: text, file: true, variants: false });
    expect(out).toMatchObject({ id: 3, failure: { code: 'ENOTDIR', path: expect.stringContaining(join(dir, 'assets')) } });
  });
});

describe('StageThread', () => {
  /** The compiled module, as the CLI runs it: there the files are staged on a worker thread. */
  const compiled = async () =>
    (await import(
      join(ROOT, 'dist', 'generator', 'output', 'stage-files.js')
    )) as typeof import('../../../generator/output/stage-files.js');

  it('on its worker thread, writes what it is handed, large buffers moved rather than copied', async () => {
    const { StageThread: Compiled } = await compiled();
    const dir = join(root, 'worker');
    const thread = new Compiled(dir);
    const large = Buffer.from(text.toString().repeat(40));
    const expected = Buffer.from(large);
    const small = Buffer.from('{"a":1}\n');
    const [encodings, none] = await Promise.all([
      thread.stage('big.json', large, { file: true, variants: true }),
      thread.stage('deep/small.json', small, { file: true, variants: false }),
    ]);
    await thread.close();
    expect(large.byteLength).toBe(0); // moved to the thread
    expect(readFileSync(join(dir, 'big.json'))).toEqual(expected);
    expect(encodings!.br).toEqual(digest(readFileSync(join(dir, 'big.json.br'))));
    expect(none).toBeUndefined();
    expect(readFileSync(join(dir, 'deep/small.json'), 'utf8')).toBe('{"a":1}\n');
  });

  it('rejects a failed write with the error fs would have thrown, which the build names as the environment', async () => {
    for (const Thread of [StageThread, (await compiled()).StageThread]) {
      const dir = join(root, `refused-${Thread === StageThread ? 'here' : 'worker'}`);
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'assets'), 'x');
      const thread = new Thread(dir);
      const error = await thread.stage('assets/BTC/risk.json', Buffer.from(text), { file: true, variants: false }).catch((e: unknown) => e);
      await thread.close();
      const named = asEnvironmentError(error);
      expect(named).toBeInstanceOf(EnvironmentError);
      expect((named as Error).message).toMatch(new RegExp(`^${join(dir, 'assets')}\\S*: a path component is not a folder \\(ENOTDIR`));
    }
  });
});
