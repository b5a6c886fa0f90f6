/**
 * Where a webhook may be sent: the rules that keep a customer's URL from turning the sender into a way into the
 * operator's own network (server-side request forgery). A URL is `https`, without a user name or password, at most
 * 2,048 characters, on port 443 or a port the operator allows; every address it is sent to is a public unicast one.
 * The address rule is checked on the address actually connected to, at each delivery (the Node sender calls
 * addressProblem on every address its lookup answers), so a name that turns private later is refused then.
 * The operator's allow-loopback setting (`--webhooks-allow-loopback`, for tests and demos) admits 127/8 and ::1,
 * plain `http` and any port: nothing else that is not public. Runtime-neutral: it also runs on the edge.
 */
// ipaddr.js parses every textual form and knows the IANA special-purpose ranges, so no CIDR math is written here.
import ipaddr from 'ipaddr.js';
import { WEBHOOK_URL_MAX } from '../../generator/contract/webhooks.js';

export interface AddressPolicy {
  /** Admit loopback addresses (127/8, ::1), plain `http` and any port: for tests and demos, off by default. */
  allowLoopback: boolean;
  /** Ports besides 443 the operator allows for `https`. */
  ports?: readonly number[];
}

const LOOPBACK_HINT = 'allowed only when the operator allows loopback (--webhooks-allow-loopback)';

/** Addresses that answer with the host's cloud credentials (AWS, its IPv6 form, Alibaba): named so a log says so. */
const METADATA = new Set(['169.254.169.254', 'fd00:ec2:0:0:0:0:0:254', '100.100.100.200']);

/** The ranges an address may not be in, in words; ipaddr.js's name of the range is the key. */
const CLASS: Record<string, string> = {
  unspecified: 'an unspecified ("this network") address',
  broadcast: 'the broadcast address',
  multicast: 'a multicast address',
  linkLocal: 'a link-local address',
  loopback: 'a loopback address',
  carrierGradeNat: 'a carrier-grade NAT (shared) address',
  private: 'a private address',
  reserved: 'a reserved or documentation address',
  benchmarking: 'a benchmarking address',
  as112: 'an AS112 (DNS sink) address',
  as112v6: 'an AS112 (DNS sink) address',
  amt: 'an AMT relay address',
  uniqueLocal: 'a unique-local address',
  deprecatedSiteLocal: 'a site-local address',
  discard: 'a discard-only address',
  rfc6145: 'an IPv4-translated address',
  teredo: 'a Teredo address',
  orchid2: 'an ORCHID address',
  deprecatedOrchid: 'an ORCHID address',
  droneRemoteIdProtocolEntityTags: 'a drone remote-ID address',
  segmentRouting: 'a segment-routing address',
};

const className = (range: string): string => CLASS[range] ?? `a ${range} address`;

const NAT64_WELL_KNOWN = ipaddr.IPv6.parseCIDR('64:ff9b::/96');
const GLOBAL_UNICAST = ipaddr.IPv6.parseCIDR('2000::/3');
const IPV4_COMPATIBLE = ipaddr.IPv6.parseCIDR('::/96');

/** The class of an IPv4 address that is not public unicast, whatever the policy; null when it is. */
function v4Class(a: ipaddr.IPv4): string | null {
  const range = a.range();
  return range === 'unicast' ? null : className(range);
}

/** What an IPv4 address is when it may not be connected to; null when it may. */
function v4Problem(a: ipaddr.IPv4, policy: AddressPolicy): string | null {
  if (a.range() === 'loopback') return policy.allowLoopback ? null : `${className('loopback')}, ${LOOPBACK_HINT}`;
  return v4Class(a);
}

/** The IPv4 address in an IPv6 one's parts from `at`: the last 32 bits (NAT64, IPv4-compatible) or bits 16..48 (6to4). */
const v4At = (parts: number[], at: number): ipaddr.IPv4 =>
  new ipaddr.IPv4([parts[at]! >> 8, parts[at]! & 0xff, parts[at + 1]! >> 8, parts[at + 1]! & 0xff]);

/**
 * A translation form (NAT64, 6to4) is judged by the IPv4 address it embeds, with no loopback allowance: that
 * loopback is not this host's.
 */
function embeddedProblem(form: string, v4: ipaddr.IPv4): string | null {
  const problem = v4Class(v4);
  return problem === null ? null : `${form} embedding ${v4.toString()}, ${problem}`;
}

/**
 * What an IPv6 address is when it may not be connected to; null when it may. Global unicast (2000::/3) is public;
 * so are the translation forms (NAT64's 64:ff9b::/96, 6to4) whose embedded IPv4 address is. An IPv4-mapped address
 * is refused whatever it maps to: a resolver asked for all addresses has no reason to answer one, and an IPv4
 * address is to be given as itself.
 */
function v6Problem(a: ipaddr.IPv6, policy: AddressPolicy): string | null {
  if (a.zoneId !== undefined) return 'an address with a zone index';
  const range = a.range();
  if (range === 'loopback') return policy.allowLoopback ? null : `${className(range)}, ${LOOPBACK_HINT}`;
  // ipaddr.js also reads the dotted spelling of an IPv4-compatible address (::10.0.0.1) as mapped: refused either way.
  if (range === 'ipv4Mapped') {
    const v4 = a.toIPv4Address();
    return `an IPv4-mapped address (of ${v4.toString()}, ${v4Class(v4) ?? 'a public address'}), refused whatever it maps to`;
  }
  if (range === 'rfc6052') {
    return a.match(NAT64_WELL_KNOWN) ? embeddedProblem('a NAT64 address', v4At(a.parts, 6)) : 'a local-use NAT64 address (64:ff9b:1::/48)';
  }
  if (range === '6to4') return embeddedProblem('a 6to4 address', v4At(a.parts, 1));
  if (range !== 'unicast') return className(range);
  if (a.match(IPV4_COMPATIBLE)) return `an IPv4-compatible address (of ${v4At(a.parts, 6).toString()}), a deprecated form`;
  if (!a.match(GLOBAL_UNICAST)) return 'not a global unicast address (outside 2000::/3)';
  return null;
}

/**
 * Why an address (IPv4 dotted quad or IPv6 text, no brackets) may not be connected to; null when it may. The
 * answer is the address's class ("a private address"), for the caller to put after the address it names.
 */
export function addressProblem(address: string, policy: AddressPolicy): string | null {
  // Only the forms a resolver answers and a socket takes: no 127.1, 0x7f.1 or 0177.0.0.1 shorthands.
  let problem: string | null;
  let normal: string;
  if (ipaddr.IPv4.isValidFourPartDecimal(address)) {
    const a = ipaddr.IPv4.parse(address);
    problem = v4Problem(a, policy);
    normal = a.toString();
  } else if (ipaddr.IPv6.isValid(address)) {
    const a = ipaddr.IPv6.parse(address);
    problem = v6Problem(a, policy);
    normal = a.toNormalizedString();
  } else {
    return 'not an IP address';
  }
  return problem !== null && METADATA.has(normal) ? `${problem} (a cloud metadata service)` : problem;
}

/**
 * Why a webhook URL cannot be used: its syntax, scheme, user name or password, length, port, or a host that is an
 * IP address which is not public; null when it can. A host name is judged when it is resolved, at each delivery.
 * The URL is not echoed (it may carry a secret in its path or query); the host is named where it is the reason.
 */
export function urlProblem(url: string, policy: AddressPolicy): string | null {
  if (url.length > WEBHOOK_URL_MAX)
    return `the URL is ${url.length} characters long, over the ${WEBHOOK_URL_MAX.toLocaleString('en')} allowed`;
  // The URL parser would silently drop these; a URL is stored and shown as given, so it must be what is sent.
  // eslint-disable-next-line no-control-regex
  if (/[\s\x00-\x1f\x7f]/.test(url)) return 'the URL contains spaces or control characters';
  if (!URL.canParse(url)) return 'not an absolute URL (https://host/path)';
  const u = new URL(url);
  // An IDN host grows in its ASCII form: the length rule holds for what is sent too.
  if (u.href.length > WEBHOOK_URL_MAX)
    return `the URL is ${u.href.length} characters long as sent, over the ${WEBHOOK_URL_MAX.toLocaleString('en')} allowed`;
  if (u.protocol !== 'https:' && !(u.protocol === 'http:' && policy.allowLoopback)) {
    return u.protocol === 'http:'
      ? `the scheme is http: a webhook URL is https (plain http is ${LOOPBACK_HINT})`
      : `the scheme is ${u.protocol} a webhook URL is https`;
  }
  if (u.username || u.password) return 'the URL carries a user name or password, which a webhook does not send';
  // The parser drops a scheme's default port, so an empty port is 443 for https (80 for http, with loopback).
  if (u.port !== '' && !policy.allowLoopback && !(policy.ports ?? []).includes(Number(u.port))) {
    return `port ${u.port} is not allowed: a webhook URL is on port 443${policy.ports?.length ? ` or ${policy.ports.join(', ')}` : ''}`;
  }
  // The parser has turned every IPv4 form (2130706433, 0x7f.1, 127.0.0.1.) into a dotted quad and bracketed IPv6.
  const host = u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname;
  if (u.hostname.startsWith('[') || ipaddr.IPv4.isValidFourPartDecimal(host)) {
    const problem = addressProblem(host, policy);
    if (problem !== null) return `the host ${host} is ${problem}: refused`;
  }
  return null;
}
