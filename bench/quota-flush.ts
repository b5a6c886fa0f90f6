/**
 * `node dist/bench/quota-flush.js [--keys N]`: what the disk quota store's saving costs the main thread, with N
 * credentials (default 20,000) of thirty requests each in the minute, as an ultra fleet leaves them. Prints the
 * time of a flush (median and worst of 15) and the bytes it writes, with one credential counted since the last and
 * with one request for every credential (a second of a load spread over all the keys), then the longest stall of
 * the event loop while a compaction writes every credential's counts, and how long the compaction takes in all.
 */
import { closeSync, mkdtempSync, openSync, readSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { journalFile } from '../auth-shim/node/quota-file.js';
import { DiskQuotaStore } from '../auth-shim/node/quota-stores.js';
import { monthOf } from '../auth-shim/quota.js';

const i = process.argv.indexOf('--keys');
const keys = i > 0 ? Number(process.argv[i + 1]) : 20_000;
const dir = mkdtempSync(join(tmpdir(), 'rr-quota-flush-'));
const limits = { perMinute: 60, perMonth: 500_000 };
const t0 = Date.now();
const month = monthOf(t0);
const credential = (k: number) => `key:${k.toString(16).padStart(64, '0')}`;

/** A store holding `keys` credentials' counts, everything flushed. */
async function filled(file: string, compactBytes?: number): Promise<DiskQuotaStore> {
  const s = await DiskQuotaStore.open(file, { flushMs: 3_600_000, compactBytes });
  for (let k = 0; k < keys; k++) for (let r = 0; r < 30; r++) s.take(credential(k), limits, t0 + r * 100, month);
  return s;
}

try {
  const file = join(dir, 'quotas.json');
  const s = await filled(file, Number.MAX_SAFE_INTEGER);
  s.flush();
  const journal = journalFile(file, 1);
  /** Times `rounds` flushes, each after `count()` counted what it counts; returns median, worst and bytes a flush. */
  const flushes = (count: (round: number) => void) => {
    const times: number[] = [];
    const before = statSync(journal).size;
    for (let r = 0; r < 15; r++) {
      count(r);
      const start = performance.now();
      s.flush();
      times.push(performance.now() - start);
    }
    times.sort((a, b) => a - b);
    const bytes = (statSync(journal).size - before) / 15;
    return `median ${times[7]!.toFixed(3)} ms, worst ${times.at(-1)!.toFixed(3)} ms, ${bytes.toFixed(0)} bytes`;
  };
  const unlimited = { perMinute: 1e9, perMonth: 1e9 };
  console.log(`${keys} credentials, each with 30 requests in the minute`);
  console.log(`flush, one credential counted since the last: ${flushes((r) => s.take(credential(7), unlimited, t0 + 4_000 + r, month))}`);
  console.log(
    `flush, one request for every credential since the last: ${flushes((r) => {
      for (let k = 0; k < keys; k++) s.take(credential(k), unlimited, t0 + 5_000 + r, month);
    })}`,
  );
  await s.close();

  // A compaction: the whole snapshot, written a slice at a time between turns of the event loop.
  const compacted = join(dir, 'compacted.json');
  const c = await filled(compacted, 1);
  let worst = 0;
  let last = performance.now();
  let probing = true;
  const probe = () => {
    const now = performance.now();
    worst = Math.max(worst, now - last);
    last = now;
    if (probing) setImmediate(probe);
  };
  const start = performance.now();
  c.flush(); // the journal passes the threshold: the compaction starts
  const flushed = performance.now() - start;
  last = performance.now();
  setImmediate(probe);
  // The snapshot's head says which journal it continues at: 2 once the compaction is in place.
  const head = Buffer.alloc(64);
  const journalOf = () => {
    const fd = openSync(compacted, 'r');
    readSync(fd, head, 0, 64, 0);
    closeSync(fd);
    return Number(/"journal":(\d+)/.exec(head.toString())?.[1]);
  };
  while (journalOf() < 2) await new Promise((r) => setTimeout(r, 5));
  probing = false;
  console.log(
    `compaction of ${(statSync(compacted).size / 1e6).toFixed(1)} MB: ${(performance.now() - start).toFixed(0)} ms in all; ` +
      `longest stall of the event loop ${worst.toFixed(1)} ms (the flush that started it: ${flushed.toFixed(1)} ms)`,
  );
  await c.close();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
