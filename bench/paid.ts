/**
 * The paying callers' paths against the reference (reference.ts), on the real clock: direct keys drawn in rotation
 * from 20,000 stored ultra keys, every request counted in the store (memory, SQLite, and Redis where one answers);
 * the marketplace's proxy-secret path (1,000 subscriber keys in rotation); and, shown beside, 429 refusals (100
 * basic keys past their 5 requests a minute) and the memory path against Fastify (fastify.ts).
 *
 * Each shim is loaded side by side with its reference: both processes on the servers' core, each loaded by a wrk
 * of its own, started together for the same time, so both meet the machine's speed of each moment and the ratio of
 * their request rates is the ratio of their costs (bench/README.md). A round is valid when each server had at least
 * HALF_CORE of the core (short of that, a load generator was the limit) and, on a judged path, no answer of either
 * was an error.
 */
import { writeFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { join } from 'node:path';
import { sha256 } from '../generator/output/manifest.js';
import { writeRotation, type Load } from './load.js';
import { MARKETPLACE } from './marketplace.js';
import { loadServersTogether, startBenchServer, warmServersTogether, type Placement, type Running, type Target } from './servers.js';
import { HALF_CORE, cpu, fixed as f, loadLine, sharedFairly, verdict } from './table.js';

export const DIRECT_KEYS = 20_000;
export const GOAL_RATIO = 0.85;
export const GOAL_P99 = 2;

export interface PaidOptions {
  work: string;
  tree: string;
  seconds: number;
  connections: number;
  rounds: number;
  /** Direct-key requests each server answers before any load is measured (at least one per key). */
  warm: number;
  /** The Redis the Redis paths count in, where one answers. */
  redisUrl?: string;
  at: Placement;
}

/** A shim path against its reference: every round's loads and ratios, and their medians. */
export interface Compared {
  reference: string;
  /** The judged server's loads (on `reference_beside_itself`, the second copy of the reference's). */
  shim: Load[];
  /** The reference's load beside each of the shim's. */
  baseline: Load[];
  /** Shim rps over the reference's beside it, per round. */
  ratios: number[];
  /** Whether each server of the round had at least HALF_CORE of the core (and, on a judged path, no error). */
  valid: boolean[];
  /** Shim p99 over the reference's beside it, per round. */
  p99_ratios: number[];
  median_ratio: number | null;
  median_p99_ratio: number | null;
  /** The reference's CPU per request over the shim's, per round. */
  cpu_ratios: number[];
  /** Judged against GOAL_RATIO and GOAL_P99, or shown beside. */
  judged: boolean;
}

/** Every request of a load answered, none with an error status or a socket error. */
const answered = (l: Load) => l.status_errors === 0 && l.errors === 0;

export const median = (xs: number[]): number | null => {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

export async function paidPaths(o: PaidOptions) {
  // This run's keys in Redis, removed when it ends.
  const redisPrefix = `rr-bench:${process.pid}:`;
  // 20,000 ultra keys that no load exhausts, and 100 basic keys every load takes past their minute.
  const direct = Array.from({ length: DIRECT_KEYS }, (_, i) => `rr_bench_${i.toString(36).padStart(6, '0')}`);
  const limited = Array.from({ length: 100 }, (_, i) => `rr_bench_basic_${i}`);
  const record = (k: string, plan: string) => ({ sha256: sha256(k), plan, label: 'bench' });
  const keyFile = join(o.work, 'bench-keys.json');
  writeFileSync(keyFile, JSON.stringify({ keys: [...direct.map((k) => record(k, 'ultra')), ...limited.map((k) => record(k, 'basic'))] }));
  const path = '/v1/assets/BTC/risk';
  const rotation = (name: string, header: string, values: string[]) => ({
    header,
    file: writeRotation(join(o.work, `${name}.txt`), values),
  });
  const directKeys = rotation('direct', 'X-API-Key', direct);
  const refusedKeys = rotation('limited', 'X-API-Key', limited);
  const subscribers = rotation(
    'subscribers',
    'X-RapidAPI-Key',
    Array.from({ length: 1_000 }, (_, i) => `subscriber_${i}`),
  );
  const market = { 'X-RapidAPI-Host': MARKETPLACE.host, 'X-RapidAPI-Proxy-Secret': MARKETPLACE.secret, 'X-RapidAPI-Subscription': 'ULTRA' };

  const at = (url: string) => url + path;
  const targets = {
    direct: (s: Running): Target => ({ url: at(s.url), connections: o.connections, rotation: directKeys }),
    market: (s: Running): Target => ({ url: at(s.url), connections: o.connections, headers: market, rotation: subscribers }),
    refused: (s: Running): Target => ({ url: at(s.url), connections: o.connections, rotation: refusedKeys }),
  };
  const running = new Set<Running>();
  /**
   * A pair's two servers, each started afresh and warmed side by side with the same requests (every key, and as
   * many as V8 needs to settle) just before they are loaded side by side: both meet the load with the same history,
   * and as two starts of one server differ by up to a tenth, the median is over starts.
   */
  const startPair = async (kinds: string[]): Promise<Running[]> => {
    const pair: Running[] = [];
    for (const [i, kind] of kinds.entries()) {
      const s = await startBenchServer(kind, o.tree, keyFile, join(o.work, `${kind}-${i}.log`), o.at, { BENCH_REDIS_PREFIX: redisPrefix });
      running.add(s);
      pair.push(s);
    }
    await warmServersTogether(
      pair.map((s) => [s, targets.direct(s)]),
      Math.max(direct.length, o.warm),
      o.at,
    );
    await warmServersTogether(
      pair.map((s) => [s, targets.market(s)]),
      1_000,
      o.at,
    );
    return pair;
  };
  const stop = async () => {
    await Promise.all([...running].map((s) => s.stop()));
    running.clear();
  };
  try {
    const pairs: { name: string; reference: string; shim: string; target: keyof typeof targets; judged: boolean }[] = [
      { name: 'direct_key_memory', reference: 'reference', shim: 'paid-memory', target: 'direct', judged: true },
      { name: 'direct_key_sqlite', reference: 'reference', shim: 'paid-sqlite', target: 'direct', judged: true },
      ...(o.redisUrl
        ? [{ name: 'direct_key_redis', reference: 'reference-redis', shim: 'paid-redis', target: 'direct' as const, judged: true }]
        : []),
      { name: 'marketplace', reference: 'reference', shim: 'paid-memory', target: 'market', judged: true },
      { name: 'refused_429_memory', reference: 'reference', shim: 'paid-memory', target: 'refused', judged: false },
      { name: 'refused_429_sqlite', reference: 'reference', shim: 'paid-sqlite', target: 'refused', judged: false },
      // The memory path against Fastify with @fastify/rate-limit doing the same job: a comparison, not a goal.
      { name: 'memory_vs_fastify', reference: 'fastify', shim: 'paid-memory', target: 'direct', judged: false },
      // A second reference process beside the first: two copies of one server measure the run's resolution.
      { name: 'reference_beside_itself', reference: 'reference', shim: 'reference', target: 'direct', judged: false },
    ];
    const compared: Record<string, Compared> = Object.fromEntries(
      pairs.map((p) => [
        p.name,
        {
          reference: p.reference,
          shim: [],
          baseline: [],
          ratios: [],
          valid: [],
          p99_ratios: [],
          cpu_ratios: [],
          median_ratio: null,
          median_p99_ratio: null,
          judged: p.judged,
        },
      ]),
    );
    const sqlite_p99_to_memory: number[] = [];
    const sqlite_p99_valid: boolean[] = [];
    for (let round = 0; round < o.rounds; round++) {
      for (const p of pairs) {
        const [ref, shim] = (await startPair([p.reference, p.shim])) as [Running, Running];
        const target = targets[p.target];
        const both: [Running, Target][] = [
          [ref, target(ref)],
          [shim, target(shim)],
        ];
        const c = compared[p.name]!;
        const [base, l] = await loadServersTogether(both, o.seconds, o.at);
        c.shim.push(l!);
        c.baseline.push(base!);
        c.ratios.push(l!.rps / base!.rps);
        // A judged path whose answers were errors measured something else than the path: a fast 401 is no speed.
        c.valid.push(sharedFairly(base!, l!) && (!p.judged || (answered(base!) && answered(l!))));
        c.p99_ratios.push(l!.p99 / base!.p99);
        c.cpu_ratios.push(base!.server_us_per_request / l!.server_us_per_request);
        await stop();
      }
      const [memory, sqlite] = [compared.direct_key_memory!, compared.direct_key_sqlite!];
      // The two stores were loaded at different times: each p99 is taken against the reference's beside it.
      sqlite_p99_to_memory.push(sqlite.p99_ratios[round]! / memory.p99_ratios[round]!);
      sqlite_p99_valid.push(memory.valid[round]! && sqlite.valid[round]!);
    }
    for (const c of Object.values(compared)) {
      c.median_ratio = median(c.ratios.filter((_, i) => c.valid[i]));
      c.median_p99_ratio = median(c.p99_ratios.filter((_, i) => c.valid[i]));
    }
    return {
      direct_keys: direct.length,
      warm_requests: Math.max(direct.length, o.warm),
      rounds: o.rounds,
      seconds: o.seconds,
      connections: o.connections,
      goal_ratio: GOAL_RATIO,
      goal_p99_ratio: GOAL_P99,
      /** The share of the core each server of a valid round had at least. */
      min_core_share: HALF_CORE,
      paths: compared,
      sqlite_p99_to_memory: {
        rounds: sqlite_p99_to_memory,
        valid: sqlite_p99_valid,
        median: median(sqlite_p99_to_memory.filter((_, i) => sqlite_p99_valid[i])),
        goal: GOAL_P99,
      },
    };
  } finally {
    await stop();
    if (o.redisUrl) await removeKeys(o.redisUrl, redisPrefix);
  }
}

/** Removes every key under `prefix` from the Redis at `url`: what a run counted there, which would otherwise live on for months. */
async function removeKeys(url: string, prefix: string): Promise<void> {
  const redis = new Redis(url);
  try {
    for await (const keys of redis.scanStream({ match: `${prefix}*`, count: 1_000 }) as AsyncIterable<string[]>)
      if (keys.length) await redis.unlink(...keys);
  } finally {
    redis.disconnect();
  }
}

export type PaidResults = Awaited<ReturnType<typeof paidPaths>>;

/** The paid paths' part of the printed table: every load with its reference's beside it, then the ratios and verdicts. */
export function paidTable(p: PaidResults): string[] {
  const lines = [
    `paid paths, real counting (${p.direct_keys} keys; each shim side by side with its reference on one core, wrk CPU both wrks')`,
    `path, round                        req/s  p50 ms  p99 ms    CPU  µs/req   wrk  HTTP>=400   server beside: req/s, p99 ms, CPU`,
  ];
  for (const [name, c] of Object.entries(p.paths))
    c.shim.forEach((l, i) => {
      const b = c.baseline[i]!;
      lines.push(`${loadLine(`${name} #${i + 1}`, l, HALF_CORE)}   ${f(b.rps, 0)}, ${f(b.p99)}, ${cpu(b, HALF_CORE)}`);
    });
  lines.push(
    '',
    `ratios to the server beside (Fastify on memory_vs_fastify, else the reference), round by round (! marks a round where a server ran short of ${HALF_CORE * 100}% of the core, or a judged path answered errors)`,
  );
  for (const [name, c] of Object.entries(p.paths)) {
    const rounds = c.ratios.map((v, i) => f(v) + (c.valid[i] ? '' : '!')).join(', ');
    const goal = c.judged
      ? `>= ${p.goal_ratio} ${c.median_ratio === null ? 'INVALID' : verdict(c.median_ratio >= p.goal_ratio)}; p99 ${f(c.median_p99_ratio)}x <= ${p.goal_p99_ratio} ${c.median_p99_ratio === null ? 'INVALID' : verdict(c.median_p99_ratio <= p.goal_p99_ratio)}`
      : '(not judged)';
    lines.push(
      `  ${name.padEnd(24)} ${rounds} (median ${f(c.median_ratio)}) ${goal}; CPU per request ${c.cpu_ratios.map((v) => f(v)).join(', ')}`,
    );
  }
  const d = p.sqlite_p99_to_memory;
  lines.push(
    `  SQLite p99 / memory p99, each over its reference's  ${d.rounds.map((v, i) => f(v) + (d.valid[i] ? '' : '!')).join(', ')} (median ${f(d.median)}) <= ${d.goal} ${d.median === null ? 'INVALID' : verdict(d.median <= d.goal)}`,
  );
  return lines;
}
