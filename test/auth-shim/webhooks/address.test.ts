/**
 * Where a webhook may go (no server-side request forgery): every class of address that is not public unicast is
 * refused with its reason, public ones pass, and the operator's allow-loopback setting admits loopback, plain http
 * and any port but nothing else that is not public.
 */
import { describe, expect, it } from 'vitest';
import { addressProblem, urlProblem, type AddressPolicy } from '../../../auth-shim/webhooks/address.js';

const STRICT: AddressPolicy = { allowLoopback: false };
const LOOPBACK: AddressPolicy = { allowLoopback: true };

describe('addressProblem', () => {
  it.each([
    ['93.184.215.14'],
    ['1.1.1.1'],
    ['8.8.8.8'],
    ['2606:2800:220:1::'],
    ['2606:4700:4700::1111'],
    // NAT64 and 6to4 forms of a public IPv4 address reach that address.
    ['64:ff9b::5db8:d70e'],
    ['2002:5db8:d70e::1'],
  ])('%s is public: allowed under either policy', (address) => {
    expect(addressProblem(address, STRICT)).toBeNull();
    expect(addressProblem(address, LOOPBACK)).toBeNull();
  });

  it.each([
    // [address, its class as the reason names it]
    ['10.0.0.7', 'a private address'],
    ['172.16.0.1', 'a private address'],
    ['172.31.255.255', 'a private address'],
    ['192.168.1.1', 'a private address'],
    ['169.254.1.1', 'a link-local address'],
    ['169.254.169.254', 'a link-local address (a cloud metadata service)'],
    ['100.64.0.1', 'a carrier-grade NAT (shared) address'],
    ['100.100.100.200', 'a carrier-grade NAT (shared) address (a cloud metadata service)'],
    ['224.0.0.1', 'a multicast address'],
    ['239.255.255.250', 'a multicast address'],
    ['0.0.0.0', 'an unspecified ("this network") address'],
    ['0.1.2.3', 'an unspecified ("this network") address'],
    ['255.255.255.255', 'the broadcast address'],
    ['240.0.0.1', 'a reserved or documentation address'],
    ['192.0.2.1', 'a reserved or documentation address'],
    ['198.51.100.1', 'a reserved or documentation address'],
    ['203.0.113.1', 'a reserved or documentation address'],
    ['fe80::1', 'a link-local address'],
    ['febf:ffff::1', 'a link-local address'],
    ['fc00::1', 'a unique-local address'],
    ['fd12:3456::1', 'a unique-local address'],
    ['fd00:ec2::254', 'a unique-local address (a cloud metadata service)'],
    ['ff02::1', 'a multicast address'],
    ['::', 'an unspecified ("this network") address'],
    ['2001:db8::1', 'a reserved or documentation address'],
    ['fec0::1', 'a site-local address'],
    ['2001::1', 'a Teredo address'],
    ['4000::1', 'not a global unicast address (outside 2000::/3)'],
    // IPv4 inside IPv6: mapped forms are refused whatever they map to; translation forms by what they embed.
    ['::ffff:127.0.0.1', 'an IPv4-mapped address (of 127.0.0.1, a loopback address), refused whatever it maps to'],
    ['::ffff:10.0.0.1', 'an IPv4-mapped address (of 10.0.0.1, a private address), refused whatever it maps to'],
    ['::ffff:169.254.169.254', 'an IPv4-mapped address (of 169.254.169.254, a link-local address), refused whatever it maps to'],
    ['::ffff:1.1.1.1', 'an IPv4-mapped address (of 1.1.1.1, a public address), refused whatever it maps to'],
    ['::7f00:1', 'an IPv4-compatible address (of 127.0.0.1), a deprecated form'],
    ['::a00:1', 'an IPv4-compatible address (of 10.0.0.1), a deprecated form'],
    // ipaddr.js reads the dotted spelling of an IPv4-compatible address as IPv4-mapped: refused either way.
    ['::127.0.0.1', 'an IPv4-mapped address (of 127.0.0.1, a loopback address), refused whatever it maps to'],
    ['64:ff9b::10.0.0.1', 'a NAT64 address embedding 10.0.0.1, a private address'],
    ['64:ff9b::127.0.0.1', 'a NAT64 address embedding 127.0.0.1, a loopback address'],
    ['64:ff9b::a9fe:a9fe', 'a NAT64 address embedding 169.254.169.254, a link-local address'],
    ['64:ff9b:1::1', 'a local-use NAT64 address (64:ff9b:1::/48)'],
    ['2002:a00:1::', 'a 6to4 address embedding 10.0.0.1, a private address'],
    ['2002:7f00:1::', 'a 6to4 address embedding 127.0.0.1, a loopback address'],
  ])('%s is refused as %s, with or without loopback allowed', (address, reason) => {
    expect(addressProblem(address, STRICT)).toBe(reason);
    expect(addressProblem(address, LOOPBACK)).toBe(reason);
  });

  it.each(['127.0.0.1', '127.255.255.254', '::1'])('loopback %s is allowed only when the operator allows it', (address) => {
    expect(addressProblem(address, STRICT)).toBe(
      'a loopback address, allowed only when the operator allows loopback (--webhooks-allow-loopback)',
    );
    expect(addressProblem(address, LOOPBACK)).toBeNull();
  });

  it.each(['example.com', '127.1', '0x7f.0.0.1', '0177.0.0.1', '2130706433', '[::1]', '1.2.3', '', '1.2.3.4 '])(
    '%j is not an address a socket takes: refused',
    (address) => {
      expect(addressProblem(address, LOOPBACK)).toBe('not an IP address');
    },
  );

  it('an address with a zone index is refused', () => {
    expect(addressProblem('fe80::1%eth0', LOOPBACK)).toBe('an address with a zone index');
  });
});

describe('urlProblem', () => {
  it.each([
    'https://example.com/hooks/risk',
    'https://example.com:443/hooks?x=1',
    'https://example.com./hooks', // a fully qualified name's root dot
    'https://bücher.example/hook', // an IDN host, sent in its ASCII form
    'https://93.184.215.14/hook',
    'https://[2606:2800:220:1::]/hook',
    'https://localhost/hook', // a name: judged by what it resolves to, at each delivery
  ])('%s is usable', (url) => {
    expect(urlProblem(url, STRICT)).toBeNull();
  });

  it.each([
    ['not a url', 'the URL contains spaces or control characters'],
    ['/relative/path', 'not an absolute URL (https://host/path)'],
    ['https://exa mple.com/', 'the URL contains spaces or control characters'],
    [' https://example.com/', 'the URL contains spaces or control characters'],
    ['https://example.com/\thook', 'the URL contains spaces or control characters'],
    ['https://[fe80::1%25eth0]/', 'not an absolute URL (https://host/path)'],
    ['https://ex<ample.com/', 'not an absolute URL (https://host/path)'],
    [
      'http://example.com/hook',
      'the scheme is http: a webhook URL is https (plain http is allowed only when the operator allows loopback (--webhooks-allow-loopback))',
    ],
    ['ftp://example.com/hook', 'the scheme is ftp: a webhook URL is https'],
    ['file:///etc/passwd', 'the scheme is file: a webhook URL is https'],
    ['https://user:secret@example.com/hook', 'the URL carries a user name or password, which a webhook does not send'],
    ['https://user@example.com/hook', 'the URL carries a user name or password, which a webhook does not send'],
    ['https://example.com:8443/hook', 'port 8443 is not allowed: a webhook URL is on port 443'],
    ['https://example.com:80/hook', 'port 80 is not allowed: a webhook URL is on port 443'],
  ])('%j is refused: %s', (url, reason) => {
    expect(urlProblem(url, STRICT)).toBe(reason);
  });

  it('a URL of 2,048 characters is usable, one longer is refused', () => {
    const base = 'https://example.com/';
    expect(urlProblem(base + 'a'.repeat(2048 - base.length), STRICT)).toBeNull();
    expect(urlProblem(base + 'a'.repeat(2049 - base.length), STRICT)).toBe('the URL is 2049 characters long, over the 2,048 allowed');
  });

  it('the length holds for the URL as sent: an IDN host grows in its ASCII form', () => {
    const url = `https://${'ü'.repeat(40)}.example/${'a'.repeat(1990)}`;
    expect(url.length).toBeLessThanOrEqual(2048);
    expect(urlProblem(url, STRICT)).toMatch(/^the URL is \d+ characters long as sent, over the 2,048 allowed$/);
  });

  it('the user name and password are not echoed', () => {
    expect(urlProblem('https://admin:hunter2@example.com/', STRICT)).not.toMatch(/admin|hunter2/);
  });

  it('ports the operator allows are usable for https; others are not', () => {
    const policy: AddressPolicy = { allowLoopback: false, ports: [8443, 9000] };
    expect(urlProblem('https://example.com:8443/hook', policy)).toBeNull();
    expect(urlProblem('https://example.com:9000/hook', policy)).toBeNull();
    expect(urlProblem('https://example.com/hook', policy)).toBeNull();
    expect(urlProblem('https://example.com:8080/hook', policy)).toBe(
      'port 8080 is not allowed: a webhook URL is on port 443 or 8443, 9000',
    );
    // Allowed ports do not admit plain http.
    expect(urlProblem('http://example.com:8443/hook', policy)).toMatch(/^the scheme is http: a webhook URL is https/);
  });

  it('allowing loopback admits plain http and any port, and loopback hosts', () => {
    expect(urlProblem('http://127.0.0.1:5173/hook', LOOPBACK)).toBeNull();
    expect(urlProblem('http://[::1]:8080/hook', LOOPBACK)).toBeNull();
    expect(urlProblem('https://example.com:8443/hook', LOOPBACK)).toBeNull();
    expect(urlProblem('http://localhost:3000/hook', LOOPBACK)).toBeNull();
    // Not other schemes, nor credentials.
    expect(urlProblem('ftp://127.0.0.1/hook', LOOPBACK)).toBe('the scheme is ftp: a webhook URL is https');
    expect(urlProblem('http://u:p@127.0.0.1/hook', LOOPBACK)).toBe(
      'the URL carries a user name or password, which a webhook does not send',
    );
  });

  it.each([
    // Every IPv4 spelling the URL parser accepts is judged as the dotted quad it means.
    ['https://127.0.0.1/', '127.0.0.1', 'a loopback address, allowed only when the operator allows loopback (--webhooks-allow-loopback)'],
    ['https://2130706433/', '127.0.0.1', 'a loopback address, allowed only when the operator allows loopback (--webhooks-allow-loopback)'],
    ['https://0x7f.1/', '127.0.0.1', 'a loopback address, allowed only when the operator allows loopback (--webhooks-allow-loopback)'],
    ['https://0177.0.0.1/', '127.0.0.1', 'a loopback address, allowed only when the operator allows loopback (--webhooks-allow-loopback)'],
    ['https://127.0.0.1./', '127.0.0.1', 'a loopback address, allowed only when the operator allows loopback (--webhooks-allow-loopback)'],
    ['https://[::1]/', '::1', 'a loopback address, allowed only when the operator allows loopback (--webhooks-allow-loopback)'],
    ['https://10.0.0.7/', '10.0.0.7', 'a private address'],
    ['https://0xa000007/', '10.0.0.7', 'a private address'],
    ['https://169.254.169.254/latest/meta-data/', '169.254.169.254', 'a link-local address (a cloud metadata service)'],
    ['https://100.100.100.200/', '100.100.100.200', 'a carrier-grade NAT (shared) address (a cloud metadata service)'],
    ['https://[fd00:ec2::254]/', 'fd00:ec2::254', 'a unique-local address (a cloud metadata service)'],
    [
      'https://[::ffff:127.0.0.1]/',
      '::ffff:7f00:1',
      'an IPv4-mapped address (of 127.0.0.1, a loopback address), refused whatever it maps to',
    ],
    [
      'https://[::ffff:a9fe:a9fe]/',
      '::ffff:a9fe:a9fe',
      'an IPv4-mapped address (of 169.254.169.254, a link-local address), refused whatever it maps to',
    ],
    ['https://[fe80::1]/', 'fe80::1', 'a link-local address'],
    ['https://[fc00::1]/', 'fc00::1', 'a unique-local address'],
    ['https://0.0.0.0/', '0.0.0.0', 'an unspecified ("this network") address'],
    ['https://[::]/', '::', 'an unspecified ("this network") address'],
    ['https://255.255.255.255/', '255.255.255.255', 'the broadcast address'],
  ])('an IP-literal host %s is judged as an address', (url, host, reason) => {
    expect(urlProblem(url, STRICT)).toBe(`the host ${host} is ${reason}: refused`);
  });

  it('allowing loopback admits a loopback literal but no other address that is not public', () => {
    expect(urlProblem('http://127.0.0.1:8080/', LOOPBACK)).toBeNull();
    expect(urlProblem('http://2130706433:8080/', LOOPBACK)).toBeNull();
    expect(urlProblem('http://[::1]:8080/', LOOPBACK)).toBeNull();
    expect(urlProblem('http://10.0.0.7/', LOOPBACK)).toBe('the host 10.0.0.7 is a private address: refused');
    expect(urlProblem('http://169.254.169.254/', LOOPBACK)).toBe(
      'the host 169.254.169.254 is a link-local address (a cloud metadata service): refused',
    );
    expect(urlProblem('http://0.0.0.0:8080/', LOOPBACK)).toBe('the host 0.0.0.0 is an unspecified ("this network") address: refused');
    expect(urlProblem('http://[::ffff:127.0.0.1]/', LOOPBACK)).toMatch(/^the host ::ffff:7f00:1 is an IPv4-mapped address/);
  });
});
