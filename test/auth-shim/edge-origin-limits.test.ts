/**
 * The edge under workerd against an origin that sends more than the tree holds: a manifest of a gigabyte (announced
 * or not), one that decompresses to a gigabyte, a risk file and its variants of a gigabyte each where the manifest
 * says about a kilobyte. Each is a `502 upstream_error`, and the worker reads no further than the manifest's cap or
 * the file's declared size: the origin counts what it managed to send before the worker went away, and workerd's
 * peak memory stays far below what it would hold had it read the body whole (a Workers isolate has 128 MB).
 */
import { readdirSync, readFileSync } from 'node:fs';
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { constants, crc32, deflateRawSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../helpers.js';
import { startEdge, type Edge } from './edge-setup.js';
import { KEY, builtTree, treeJson } from './tree.js';

const MiB = 1 << 20;
const GiB = 1 << 30;
/** What the build (and the edge) allow a manifest at most. */
const MANIFEST_CAP = 16 * MiB;
/**
 * What loopback's socket buffers hold between the origin's writes and the worker's reads, at most: bytes the origin
 * counts as sent that the worker never read.
 */
const IN_FLIGHT = 32 * MiB;
/**
 * workerd's peak resident set allowed (MB): the runtime with the worker and a capped manifest fits well within it; a
 * worker that held any of the bodies here whole would pass it several times over.
 */
const PEAK_MB = 256;

/** One oversized answer as the origin sent it: the bytes flushed to the socket, and whether the exchange is over. */
interface Flood {
  path: string;
  sent: number;
  over: boolean;
}
const floods: Flood[] = [];

/** Sends `total` bytes (`chunk` after `chunk`) as fast as the reader takes them, counting what leaves. */
function flood(path: string, res: ServerResponse, headers: OutgoingHttpHeaders, chunks: Iterator<Buffer>): void {
  const f: Flood = { path, sent: 0, over: false };
  floods.push(f);
  res.once('close', () => (f.over = true));
  res.on('error', () => {});
  res.writeHead(200, headers);
  const pump = () => {
    for (;;) {
      if (res.destroyed) return;
      const next = chunks.next();
      if (next.done) return void res.end();
      const n = next.value.byteLength;
      if (!res.write(next.value, (e) => void (e || (f.sent += n)))) return void res.once('drain', pump);
    }
  };
  pump();
}

/** `total` bytes of spaces, a MiB at a time. */
function* spaces(total: number): Iterator<Buffer> {
  const chunk = Buffer.alloc(MiB, 32);
  for (let left = total; left > 0; left -= MiB) yield left >= MiB ? chunk : chunk.subarray(0, left);
}

/**
 * A gzip stream of `mib` MiB of spaces, a few KB on the wire per MiB: one deflate block (full flush, so each copy
 * stands alone) repeated, then the final block and the trailer, computed only if the reader gets that far.
 */
function* gzipBomb(mib: number): Iterator<Buffer> {
  const plain = Buffer.alloc(MiB, 32);
  yield Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff]);
  const block = deflateRawSync(plain, { finishFlush: constants.Z_FULL_FLUSH });
  for (let i = 0; i < mib; i++) yield block;
  let crc = 0;
  for (let i = 0; i < mib; i++) crc = crc32(plain, crc);
  const trailer = Buffer.alloc(8);
  trailer.writeUInt32LE(crc, 0);
  trailer.writeUInt32LE((mib * MiB) >>> 0, 4);
  yield Buffer.concat([deflateRawSync(Buffer.alloc(0)), trailer]);
}

/** The peak resident set (MB) of every workerd this test process started: the worker's memory. */
function workerdPeakMb(): number {
  let peak = 0;
  let found = 0;
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const [comm, rest] = [stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')), stat.slice(stat.lastIndexOf(')') + 2)];
      if (comm !== 'workerd' || Number(rest.split(' ')[1]) !== process.pid) continue;
      const kb = Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
      peak = Math.max(peak, kb / 1024);
      found++;
    } catch {
      // a process that ended meanwhile
    }
  }
  // Measured or failed: a test that found no workerd would pass whatever the worker held.
  if (!found) throw new Error(`no workerd process is a child of this test process (${process.pid})`);
  return peak;
}

/** How the origin answers a path (under /v1/) instead of with the tree's file. */
const answers = new Map<string, (res: ServerResponse) => void>();
const edges = new Set<Edge>();
let out = '';
/**
 * `test` on an edge of its own, closed after it: no other case has read the manifest through it (an edge keeps a
 * manifest it read for a minute), and the peak memory measured is this case's.
 */
async function onFreshEdge(test: (edge: Edge) => Promise<void>): Promise<void> {
  const edge = await startEdge({
    out,
    keys: readFileSync(new URL('../../fixtures/keys/example-keys.json', import.meta.url), 'utf8'),
    intercept: (req, res) => {
      const answer = answers.get(req.url!);
      answer?.(res);
      return !!answer;
    },
    onStderr: () => {},
  });
  edges.add(edge);
  try {
    await test(edge);
  } finally {
    edges.delete(edge);
    await edge.close();
  }
}

beforeAll(() => {
  out = builtTree();
});
afterAll(() => Promise.all([...edges].map((e) => e.close())));

/** The edge's answer to a risk request: its status and error code. */
async function riskAnswer(edge: Edge): Promise<[number, string]> {
  const res = await edge.call('/v1/assets/BTC/risk', { headers: { 'X-API-Key': KEY.ultra, 'Accept-Encoding': 'identity' } });
  const body = (await res.json()) as { error?: { code: string } };
  return [res.status, body.error?.code ?? 'ok'];
}

/** Waits for `n` floods to have started and ended (the worker went away, or it was all sent): what each sent. */
async function floodsSent(n: number): Promise<Record<string, number>> {
  expect(await until(() => floods.length === n && floods.every((f) => f.over), 60_000, 50)).toBe(true);
  return Object.fromEntries(floods.map((f) => [f.path, f.sent]));
}

describe('the edge against an origin that sends more than the tree holds', () => {
  beforeAll(() => {
    floods.length = 0;
    answers.clear();
  });

  it.each([
    ['a manifest of 1 GiB, its size not announced', (res: ServerResponse) => flood('manifest', res, {}, spaces(GiB))],
    ['a manifest announcing 1 GiB', (res: ServerResponse) => flood('manifest', res, { 'content-length': String(GiB) }, spaces(GiB))],
    [
      'a gzip manifest that decompresses to 4 GiB',
      (res: ServerResponse) => flood('manifest', res, { 'content-encoding': 'gzip' }, gzipBomb(4096)),
    ],
  ])('%s: 502 upstream_error, read no further than the cap', async (_, answer) => {
    floods.length = 0;
    answers.clear();
    answers.set('/v1/_manifest.json', answer);
    await onFreshEdge(async (edge) => {
      expect(await riskAnswer(edge)).toEqual([502, 'upstream_error']);
      const { manifest } = await floodsSent(1);
      expect(manifest).toBeLessThan(MANIFEST_CAP + IN_FLIGHT);
      expect(workerdPeakMb(), 'workerd peak RSS (MB)').toBeLessThan(PEAK_MB);
      // The origin mended, the same worker answers: nothing of the oversized manifest was kept.
      answers.clear();
      expect(await riskAnswer(edge)).toEqual([200, 'ok']);
    });
  });

  it('a risk file and its variants of 1 GiB each, declared about a kilobyte: 502, each read no further than its size', () =>
    onFreshEdge(async (edge) => {
      const declared = treeJson(out, '_manifest.json').files['assets/BTC/risk.json'];
      expect(declared.size).toBeLessThan(8 * 1024);
      for (const announced of [false, true]) {
        floods.length = 0;
        answers.clear();
        for (const suffix of ['', '.br', '.gz'])
          answers.set(`/v1/assets/BTC/risk.json${suffix}`, (res) =>
            flood(`risk.json${suffix}`, res, announced ? { 'content-length': String(GiB) } : {}, spaces(GiB)),
          );
        expect(await riskAnswer(edge), `announced: ${announced}`).toEqual([502, 'upstream_error']);
        const sent = await floodsSent(3);
        for (const [path, bytes] of Object.entries(sent)) expect(bytes, `${path}, announced: ${announced}`).toBeLessThan(IN_FLIGHT);
      }
      expect(workerdPeakMb(), 'workerd peak RSS (MB)').toBeLessThan(PEAK_MB);
      answers.clear();
      expect(await riskAnswer(edge)).toEqual([200, 'ok']);
    }));
});
