/**
 * Webhook endpoints and their delivery state in Redis (decision 108), for a fleet of Node servers sharing one Redis:
 * every instance sees every endpoint, and a claim lets one instance at a time deliver to an endpoint. A claim lapses
 * `ms` after it was last taken or renewed, so when an instance dies another takes over its endpoints within that.
 * Nothing is cached: a change by any instance, or by `redis-cli`, is seen at the next look.
 *
 * Keys (`<prefix>` is `rr:q:` unless the operator names another; read them with redis-cli):
 *   <prefix>wh:ep:<id>        hash: one field per field of the endpoint's record, each JSON-encoded
 *                             (`HGETALL`; `HGET <key> url` gives `"https://..."`)
 *   <prefix>wh:owner:<owner>  set: the ids of an owner's endpoints (`SMEMBERS`)
 *   <prefix>wh:all            set: every endpoint's id
 *   <prefix>wh:attempts:<id>  list: the last WEBHOOK_ATTEMPTS_KEPT attempts, newest first, each JSON (`LRANGE 0 -1`)
 *   <prefix>wh:claim:<id>     string: the instance delivering to the endpoint, expiring with its claim (`GET`, `PTTL`)
 *
 * Every change that touches more than one key, or that must see the endpoint exist, is one Lua script, so it is
 * atomic. The scripts derive an owner's set from the record, so the store needs one Redis, not a Redis Cluster.
 */
import { Redis } from 'ioredis';
import { WEBHOOK_ATTEMPTS_KEPT } from '../../generator/contract/webhooks.js';
import type { Attempt, EndpointFields, EndpointRecord, WebhookStore } from '../webhooks/store.js';
import { DEFAULT_REDIS_PREFIX } from './quota-redis.js';

/** How long a command may wait for Redis (queued while it connects included) before it fails rather than hang. */
const COMMAND_TIMEOUT_MS = 5_000;

/** The fields `set` never writes: an endpoint's identity, its owner's set and its age are fixed when it is added. */
const FIXED = new Set(['id', 'owner', 'created_at']);

/**
 * Adds an endpoint unless its owner holds ARGV[1] already: the count and the write in one step, so two creates at
 * once cannot both take the last place. KEYS: the hash, the owner's set, the set of all. ARGV: max, id, then field
 * and value pairs. An id already there is an error (ids are random: it never happens unless something is wrong).
 */
const ADD = `
if redis.call('EXISTS', KEYS[1]) == 1 then return redis.error_reply('ERR webhook endpoint ' .. ARGV[2] .. ' exists') end
if redis.call('SCARD', KEYS[2]) >= tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 3))
redis.call('SADD', KEYS[2], ARGV[2])
redis.call('SADD', KEYS[3], ARGV[2])
return 1
`;

/** Writes the fields given only while the endpoint exists: a write after a remove must not leave a partial hash. */
const SET = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if #ARGV > 0 then redis.call('HSET', KEYS[1], unpack(ARGV)) end
return 1
`;

/**
 * Removes an endpoint, its attempts and its place in the sets at once. KEYS: the hash, the attempts, the set of
 * all; ARGV: the id, and the prefix the owner's set is named under (its owner is read from the hash).
 */
const REMOVE = `
redis.call('DEL', KEYS[2])
local owner = redis.call('HGET', KEYS[1], 'owner')
if not owner then return 0 end
redis.call('DEL', KEYS[1])
redis.call('SREM', ARGV[2] .. 'wh:owner:' .. cjson.decode(owner), ARGV[1])
redis.call('SREM', KEYS[3], ARGV[1])
return 1
`;

/**
 * Records an attempt while the endpoint exists: an attempt that ends after its endpoint was removed would otherwise
 * leave a list nothing ever removes. KEYS: the hash, the attempts; ARGV: the attempt, the number kept.
 */
const LOG = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('LPUSH', KEYS[2], ARGV[1])
redis.call('LTRIM', KEYS[2], 0, tonumber(ARGV[2]) - 1)
return 1
`;

/** Takes a free claim, or renews one the holder already has. KEYS: the claim; ARGV: the holder, ms. */
const CLAIM = `
local held = redis.call('GET', KEYS[1])
if not held then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) return 1 end
if held == ARGV[1] then redis.call('PEXPIRE', KEYS[1], ARGV[2]) return 1 end
return 0
`;

/** Gives a claim up, only if the holder still has it: one that lapsed and was taken by another stays theirs. */
const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 0
`;

type Script = (...a: (string | number)[]) => Promise<number>;
interface Scripts {
  whAdd: Script;
  whSet: Script;
  whRemove: Script;
  whLog: Script;
  whClaim: Script;
  whRelease: Script;
}

/** A record's (or some fields') hash fields: each JSON-encoded, a field left undefined not written. */
function encode(fields: Record<string, unknown>, skip?: ReadonlySet<string>): string[] {
  const out: string[] = [];
  for (const [k, v] of Object.entries(fields)) if (v !== undefined && !skip?.has(k)) out.push(k, JSON.stringify(v));
  return out;
}

function decode(hash: Record<string, string>): EndpointRecord {
  const r: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(hash)) r[k] = JSON.parse(v);
  return r as unknown as EndpointRecord;
}

/** Oldest first, as `list` promises (a set has no order). */
const byAge = (a: EndpointRecord, b: EndpointRecord): number =>
  a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;

export class RedisWebhookStore implements WebhookStore {
  readonly redis: Redis;
  private readonly scripts: Scripts;

  /** `prefix` namespaces the keys (several deployments, or tests, on one Redis): the quota store's by default. */
  constructor(
    url: string,
    readonly prefix = DEFAULT_REDIS_PREFIX,
  ) {
    // Unlike the quota store nothing answers in Redis's stead: commands wait for a connection (the offline queue),
    // but each for a bounded time, so a Redis that is away fails a delivery round rather than hang it.
    this.redis = new Redis(url, { commandTimeout: COMMAND_TIMEOUT_MS });
    this.redis.on('error', () => {}); // reported through the failing commands
    this.redis.defineCommand('whAdd', { numberOfKeys: 3, lua: ADD });
    this.redis.defineCommand('whSet', { numberOfKeys: 1, lua: SET });
    this.redis.defineCommand('whRemove', { numberOfKeys: 3, lua: REMOVE });
    this.redis.defineCommand('whLog', { numberOfKeys: 2, lua: LOG });
    this.redis.defineCommand('whClaim', { numberOfKeys: 1, lua: CLAIM });
    this.redis.defineCommand('whRelease', { numberOfKeys: 1, lua: RELEASE });
    this.scripts = this.redis as unknown as Scripts;
  }

  private endpoint = (id: string) => `${this.prefix}wh:ep:${id}`;
  private owner = (owner: string) => `${this.prefix}wh:owner:${owner}`;
  private all = () => `${this.prefix}wh:all`;
  private log = (id: string) => `${this.prefix}wh:attempts:${id}`;
  private claimKey = (id: string) => `${this.prefix}wh:claim:${id}`;

  async list(owner?: string): Promise<EndpointRecord[]> {
    const ids = await this.redis.smembers(owner === undefined ? this.all() : this.owner(owner));
    if (!ids.length) return [];
    // One round trip for them all; one removed between the two steps answers an empty hash and is left out.
    const pipeline = this.redis.pipeline();
    for (const id of ids) pipeline.hgetall(this.endpoint(id));
    const results = (await pipeline.exec()) ?? [];
    const records: EndpointRecord[] = [];
    for (const [e, hash] of results) {
      if (e) throw e;
      if (Object.keys(hash as Record<string, string>).length) records.push(decode(hash as Record<string, string>));
    }
    return records.sort(byAge);
  }

  async get(id: string): Promise<EndpointRecord | null> {
    const hash = await this.redis.hgetall(this.endpoint(id));
    return Object.keys(hash).length ? decode(hash) : null;
  }

  async add(e: EndpointRecord, max: number): Promise<boolean> {
    const fields = encode(e as unknown as Record<string, unknown>);
    return (await this.scripts.whAdd(this.endpoint(e.id), this.owner(e.owner), this.all(), max, e.id, ...fields)) === 1;
  }

  async set(id: string, fields: EndpointFields): Promise<boolean> {
    return (await this.scripts.whSet(this.endpoint(id), ...encode(fields, FIXED))) === 1;
  }

  async remove(id: string): Promise<boolean> {
    return (await this.scripts.whRemove(this.endpoint(id), this.log(id), this.all(), id, this.prefix)) === 1;
  }

  async logAttempt(id: string, a: Attempt): Promise<void> {
    await this.scripts.whLog(this.endpoint(id), this.log(id), JSON.stringify(a), WEBHOOK_ATTEMPTS_KEPT);
  }

  async attempts(id: string): Promise<Attempt[]> {
    const items = await this.redis.lrange(this.log(id), 0, WEBHOOK_ATTEMPTS_KEPT - 1);
    return items.map((s) => JSON.parse(s) as Attempt);
  }

  /** Redis's own clock lapses a claim (`now` is for stores in one process), so instances' clocks need not agree. */
  async claim(id: string, holder: string, ms: number, _now: number): Promise<boolean> {
    return (await this.scripts.whClaim(this.claimKey(id), holder, Math.max(1, Math.ceil(ms)))) === 1;
  }

  async release(id: string, holder: string): Promise<void> {
    await this.scripts.whRelease(this.claimKey(id), holder);
  }

  /**
   * Called once nothing of ours waits on Redis (serve: the requests answered and the deliveries in flight ended; the
   * webhooks command: its work done): closed at once, not by QUIT, which a stalled Redis would leave unanswered for 5 s.
   */
  async close(): Promise<void> {
    this.redis.disconnect();
  }
}
