/**
 * One webhook delivery attempt at the edge (decision 108): a POST of the signed headers and body to a customer's URL
 * with the runtime's fetch. Before every attempt the URL is held to the address rules (urlProblem) and its host
 * name resolved afresh over DNS-over-HTTPS, A and AAAA: if any answer is not a public address (addressProblem) the
 * attempt is refused, so a name that was public when the endpoint was created and is private now is refused now.
 * Workers' own fetch cannot connect to a non-public address anyway (Cloudflare's network does not route a Worker's
 * subrequest into private or loopback space); this check is a second layer, and it says why in the deliveries log.
 * No redirect is followed, the whole attempt has one deadline and at most `maxBytes` of the answer is read. It
 * never throws: every outcome is a SendResult, whose error never holds the request's headers or body.
 */
import { WEBHOOK_ANSWER_MAX, WEBHOOK_TIMEOUT_MS } from '../generator/contract/webhooks.js';
import { addressProblem, urlProblem, type AddressPolicy } from './webhooks/address.js';
import { clip, retryAfterMs } from './webhooks/answer.js';
import type { SendResult } from './webhooks/deliverer.js';

/** Every address a host name resolves to, or why it resolves to none (an error the attempt reports). */
type EdgeResolve = (host: string) => Promise<string[]>;

export interface EdgeSendOptions {
  policy: AddressPolicy;
  /** The resolver (default: DNS-over-HTTPS at `dohUrl`). */
  resolve?: EdgeResolve;
  /** The DNS-over-HTTPS endpoint answering `application/dns-json` (default Cloudflare's). */
  dohUrl?: string;
  /** The deadline of the whole attempt: the resolution, the answer's headers and reading its body (default 10 s). */
  timeoutMs?: number;
  /** How much of the answer's body is read before it is cancelled (default 64 KB). */
  maxBytes?: number;
}

const DOH_URL = 'https://cloudflare-dns.com/dns-query';

/** A failure whose message is already the SendResult's error. */
class Refused extends Error {}

/**
 * The host's A and AAAA answers from a DNS-over-HTTPS server (JSON form). A name that does not exist, or a server
 * that does not answer, is a Refused naming the host.
 */
function dohResolver(dohUrl = DOH_URL, signal?: AbortSignal): EdgeResolve {
  const ask = async (host: string, type: 'A' | 'AAAA'): Promise<string[]> => {
    const url = `${dohUrl}?name=${encodeURIComponent(host)}&type=${type}`;
    let res: Response;
    try {
      res = await fetch(url, { headers: { accept: 'application/dns-json' }, signal });
    } catch (e) {
      throw new Refused(`resolving ${host} failed (${(e as Error).name === 'TimeoutError' ? 'timeout' : 'DNS-over-HTTPS unreachable'})`);
    }
    if (!res.ok) {
      await res.body?.cancel().catch(() => {});
      throw new Refused(`resolving ${host} failed (DNS-over-HTTPS answered ${res.status})`);
    }
    const json = (await res.json().catch(() => null)) as { Status?: number; Answer?: { type?: number; data?: unknown }[] } | null;
    if (json === null || typeof json.Status !== 'number') throw new Refused(`resolving ${host} failed (DNS-over-HTTPS answer unreadable)`);
    if (json.Status === 3) throw new Refused(`${host} does not resolve (NXDOMAIN)`);
    if (json.Status !== 0) throw new Refused(`resolving ${host} failed (DNS status ${json.Status})`);
    const want = type === 'A' ? 1 : 28;
    return (json.Answer ?? []).filter((a) => a.type === want && typeof a.data === 'string').map((a) => a.data as string);
  };
  return async (host) => (await Promise.all([ask(host, 'A'), ask(host, 'AAAA')])).flat();
}

/** Reads at most `max` bytes of a body, then cancels the rest; a body cut off early is not an error (the status stands). */
async function drain(body: ReadableStream<Uint8Array> | null, max: number): Promise<void> {
  if (!body) return;
  const reader = body.getReader();
  let read = 0;
  try {
    while (read < max) {
      const { done, value } = await reader.read();
      if (done) return;
      read += value.byteLength;
    }
  } catch {
    // cut off, out of time: the status in hand is the answer
  } finally {
    await reader.cancel().catch(() => {});
  }
}

/**
 * POSTs `body` to `url` with `headers` if the URL and every address its host resolves to pass the policy. Never
 * throws: every failure is a SendResult.
 */
export async function edgeSend(url: string, headers: Record<string, string>, body: string, o: EdgeSendOptions): Promise<SendResult> {
  const started = Date.now();
  const timeoutMs = o.timeoutMs ?? WEBHOOK_TIMEOUT_MS;
  const result = (status: number | null, error: string | null, retryAfter: number | null = null): SendResult => ({
    status,
    error,
    ms: Date.now() - started,
    retryAfterMs: retryAfter,
  });
  const problem = urlProblem(url, o.policy);
  if (problem !== null) return result(null, problem);
  const u = new URL(url);
  const signal = AbortSignal.timeout(timeoutMs);
  // An IP-literal host was judged by urlProblem; a name is judged by what it resolves to now.
  if (!u.hostname.startsWith('[') && !/^[\d.]+$/.test(u.hostname)) {
    const host = u.hostname.replace(/\.$/, '');
    try {
      const found = await (o.resolve ?? dohResolver(o.dohUrl, signal))(host);
      if (found.length === 0) return result(null, `${host} resolves to no address`);
      for (const address of found) {
        const bad = addressProblem(address, o.policy);
        if (bad !== null) return result(null, `${host} resolves to ${clip(address, 64)}, ${bad}: refused`);
      }
    } catch (e) {
      return result(null, e instanceof Refused ? e.message : `resolving ${host} failed (${clip(String((e as Error)?.message), 80)})`);
    }
  }
  let res: Response;
  try {
    res = await fetch(url, { method: 'POST', headers, body, redirect: 'manual', signal });
  } catch {
    // The runtime's message may quote the request; say only what kind of failure it was.
    return result(null, signal.aborted ? `no answer within ${timeoutMs} ms (timeout)` : `the request to ${u.host} failed (no answer)`);
  }
  await drain(res.body, o.maxBytes ?? WEBHOOK_ANSWER_MAX);
  const after = retryAfterMs(res.headers.get('retry-after'));
  if (res.status >= 200 && res.status < 300) return result(res.status, null, after);
  if (res.status >= 300 && res.status < 400) {
    const location = res.headers.get('location');
    return result(res.status, location ? `redirect to ${clip(location)} not followed` : `a ${res.status} redirect, not followed`, after);
  }
  return result(res.status, `${u.hostname} answered ${res.status}`, after);
}
