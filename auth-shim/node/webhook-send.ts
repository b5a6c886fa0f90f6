/**
 * One webhook delivery attempt from Node: a POST of the given headers and body to a customer's URL, connecting only
 * to an address the policy allows (address.ts). The socket's own lookup is replaced by one that resolves the name
 * afresh, refuses if ANY answer is not public and otherwise hands those checked answers to the socket: the address
 * judged is the one connected to, at this delivery, so a name rebound to a private address since is refused now.
 * No connection is pooled (one could bypass the check), no redirect is followed, the whole attempt has one deadline
 * and at most `maxBytes` of the answer is read. It never throws: every outcome is a SendResult, whose error never
 * holds the request's headers or body (they carry a signature).
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import type { LookupAddress, LookupOptions } from 'node:dns';
import { request as httpRequest, type ClientRequest, type IncomingMessage, type RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { WEBHOOK_ANSWER_MAX, WEBHOOK_TIMEOUT_MS } from '../../generator/contract/webhooks.js';
import { addressProblem, urlProblem, type AddressPolicy } from '../webhooks/address.js';
import { clip, retryAfterMs } from '../webhooks/answer.js';
import type { SendResult } from '../webhooks/deliverer.js';

/** Every address a host name resolves to. */
export type Resolve = (host: string) => Promise<{ address: string; family: 4 | 6 }[]>;

export interface SendOptions {
  policy: AddressPolicy;
  /** The resolver (default: the system's, all addresses). */
  resolve?: Resolve;
  /** The deadline of the whole attempt: connecting, the answer's headers and reading its body (default 10 s). */
  timeoutMs?: number;
  /** How much of the answer's body is read before the connection is dropped (default 64 KB). */
  maxBytes?: number;
}

const systemResolve: Resolve = async (host) =>
  (await dnsLookup(host, { all: true })).map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 }));

/** A failure whose message is already the SendResult's error. */
class Refusal extends Error {}

/** Why a request failed before any answer, in words that name no header and no body. */
function failure(err: unknown, host: string): string {
  if (err instanceof Refusal) return err.message;
  const e = err as NodeJS.ErrnoException & { address?: string; port?: number };
  const code = typeof e?.code === 'string' && /^[A-Z0-9_]+$/.test(e.code) ? e.code : undefined;
  const where = e?.address ? `${e.address}${e.port ? `:${e.port}` : ''}` : host;
  switch (code) {
    case 'ECONNREFUSED':
      return `connection refused by ${where}`;
    case 'ECONNRESET':
    case 'EPIPE':
      return `connection to ${where} closed or reset before an answer`;
    case 'ETIMEDOUT':
      return `connecting to ${where} timed out`;
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return `${where} is unreachable (${code})`;
  }
  if (code?.startsWith('HPE_')) return `the answer from ${host} is not valid HTTP (${code})`;
  // TLS failures (an expired, self-signed or misnamed certificate) carry codes of their own; their message names
  // the certificate, not the request.
  if (code !== undefined && (/^ERR_(TLS|SSL)_/.test(code) || /CERT|SIGNATURE|ISSUER/.test(code))) {
    return `TLS with ${host} failed: ${clip(e instanceof Error ? e.message : code)}`;
  }
  return `the request to ${host} failed (${code ?? 'unknown error'})`;
}

/**
 * The socket's lookup: every address `resolve` answers for `host` is checked, and the socket gets them only if all
 * pass. Node asks for one address or, to try several (happy eyeballs), for all: both forms are answered.
 */
function checkedLookup(resolve: Resolve, policy: AddressPolicy): NonNullable<RequestOptions['lookup']> {
  return (hostname: string, options: LookupOptions, callback) => {
    const answer = (err: Error | null, addresses: LookupAddress[] = []): void => {
      if (err !== null) callback(err, options.all ? [] : '', undefined);
      else if (options.all) callback(null, addresses);
      else callback(null, addresses[0]!.address, addresses[0]!.family);
    };
    // The resolver may throw, answer late (after the deadline destroyed the socket) or answer nonsense: each ends
    // in one call of the callback, and nothing escapes as an unhandled rejection.
    Promise.resolve()
      .then(() => resolve(hostname))
      .then(
        (found): Error | LookupAddress[] => {
          if (!Array.isArray(found) || found.length === 0) return new Refusal(`${hostname} resolves to no address`);
          for (const { address } of found) {
            const problem = addressProblem(String(address), policy);
            if (problem !== null) return new Refusal(`${hostname} resolves to ${String(address)}, ${problem}: refused`);
          }
          // A socket bound to one family asks for it alone (as 4 or 6, or as 'IPv4' or 'IPv6').
          const only = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : options.family || 0;
          const wanted = found.map(({ address }) => ({ address, family: isIP(address) })).filter(({ family }) => !only || family === only);
          return wanted.length > 0 ? wanted : new Refusal(`${hostname} has no IPv${only} address`);
        },
        (err: NodeJS.ErrnoException) => {
          const code = typeof err?.code === 'string' && /^[A-Z0-9_]+$/.test(err.code) ? err.code : 'unknown error';
          return new Refusal(code === 'ENOTFOUND' ? `${hostname} does not resolve (ENOTFOUND)` : `resolving ${hostname} failed (${code})`);
        },
      )
      .then((outcome) => (outcome instanceof Error ? answer(outcome) : answer(null, outcome)))
      .catch(() => {});
  };
}

/**
 * POSTs `body` to `url` with `headers`, connecting only to an address the policy allows (checked on the address
 * connected to). Never throws: every failure is a SendResult.
 */
export function sendWebhook(url: string, headers: Record<string, string>, body: string, o: SendOptions): Promise<SendResult> {
  const started = performance.now();
  const timeoutMs = o.timeoutMs ?? WEBHOOK_TIMEOUT_MS;
  const maxBytes = o.maxBytes ?? WEBHOOK_ANSWER_MAX;
  const result = (status: number | null, error: string | null, retryAfterMs: number | null = null): SendResult => ({
    status,
    error,
    ms: Math.round(performance.now() - started),
    retryAfterMs,
  });

  // An IP-literal host is judged here (urlProblem calls addressProblem on it): the socket looks up names only.
  const problem = urlProblem(url, o.policy);
  if (problem !== null) return Promise.resolve(result(null, problem));
  const u = new URL(url);
  const host = u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname;

  return new Promise<SendResult>((done) => {
    let req: ClientRequest | undefined;
    let res: IncomingMessage | undefined;
    let settled = false;
    const settle = (r: SendResult): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      res?.destroy();
      req?.destroy();
      done(r);
    };
    /** The answer's verdict, once its body is read, capped, ended early or out of time: its status decides. */
    const judge = (): void => {
      const status = res!.statusCode ?? 0;
      const after = retryAfterMs(res!.headers['retry-after'] ?? null);
      if (status >= 200 && status < 300) return settle(result(status, null, after));
      const location = res!.headers.location;
      if (status >= 300 && status < 400) {
        return settle(
          result(status, location ? `redirect to ${clip(location)} not followed` : `a ${status} redirect, not followed`, after),
        );
      }
      settle(result(status, `${host} answered ${status}`, after));
    };
    // One deadline for the whole attempt. A status already in hand stands: only the rest of its body is dropped.
    const timer = setTimeout(() => (res ? judge() : settle(result(null, `no answer within ${timeoutMs} ms (timeout)`))), timeoutMs);

    try {
      const options: RequestOptions & { servername?: string } = {
        method: 'POST',
        host,
        port: u.port || undefined,
        path: `${u.pathname}${u.search}`,
        // The caller's headers as given, and the body's length (Node adds Host and, with no agent, Connection: close).
        headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
        // A connection of its own, closed after the answer: no pooled socket skips the address check.
        agent: false,
        lookup: checkedLookup(o.resolve ?? systemResolve, o.policy),
      };
      // SNI is the host name without its root dot (an IP literal has none); the certificate is checked against it.
      if (u.protocol === 'https:' && isIP(host) === 0) options.servername = host.replace(/\.$/, '');
      req = (u.protocol === 'https:' ? httpsRequest : httpRequest)(options);
    } catch {
      // Node refuses a header name or value it cannot send; its message would quote the value (a signature).
      return settle(result(null, 'the request could not be made: a header name or value is not valid HTTP'));
    }
    // After the answer's headers, a failure only cuts its body short: the status stands.
    req.on('error', (err) => (res ? judge() : settle(result(null, failure(err, host)))));
    req.on('response', (answer) => {
      res = answer;
      let read = 0;
      answer.on('data', (chunk: Buffer) => {
        read += chunk.length;
        if (read >= maxBytes) judge();
      });
      answer.on('end', judge);
      // An answer cut off mid-body (reset, closed) is still judged by its status.
      answer.on('error', judge);
      answer.on('close', judge);
    });
    req.end(body);
  });
}
