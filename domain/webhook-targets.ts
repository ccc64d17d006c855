/**
 * Where an organizer webhook may deliver (contract 4.15: http or https, publicly reachable; localhost, private and
 * link-local addresses rejected). The same rules run when a webhook is created or edited and again at every delivery
 * against the address the name resolves to then, so a name that later re-points at an internal address (DNS
 * rebinding) is still refused. Name resolution is injected: the API and the worker pass the system resolver, tests
 * pass their own. Nothing here performs I/O by itself.
 */
import { BlockList, isIP } from 'node:net';

/** Addresses no webhook may reach: loopback, private, link-local, unspecified, carrier-grade NAT, multicast, reserved. */
const BLOCKED = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], // "this network", including 0.0.0.0
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, cloud metadata endpoints
  ['172.16.0.0', 12],
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.168.0.0', 16],
  ['198.18.0.0', 15], // benchmarking
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved and broadcast
] as const) {
  BLOCKED.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['fc00::', 7], // unique local (private)
  ['fe80::', 10], // link-local
  ['ff00::', 8], // multicast
  ['100::', 64], // discard-only
] as const) {
  BLOCKED.addSubnet(network, prefix, 'ipv6');
}

/**
 * An IPv6 literal as its eight 16-bit groups, whatever its spelling (compressed, leading zeros, a trailing dotted
 * IPv4). Comparing groups instead of text is what makes `::ffff:0:7f00:1`, `::127.0.0.1` and `::7f00:1` all land in
 * the same rule. Null when `address` is not valid IPv6.
 */
function ipv6Groups(address: string): number[] | null {
  if (isIP(address) !== 6) return null;
  let text = address.toLowerCase();
  const dotted = /(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const parse = (part: string): number[] => (part === '' ? [] : part.split(':').map((g) => Number.parseInt(g, 16)));
  const left = parse(head);
  if (tail === undefined) return left.length === 8 ? left : null;
  const right = parse(tail);
  const missing = 8 - left.length - right.length;
  if (missing < 0) return null;
  return [...left, ...new Array<number>(missing).fill(0), ...right];
}

const ipv4From = (high: number, low: number): string => [high >> 8, high & 255, low >> 8, low & 255].join('.');

/**
 * What an IPv6 address really reaches when it carries an IPv4 one, since stacks, tunnels and NAT64 gateways hand
 * those packets to the IPv4 destination:
 * - `::ffff:0:0/96` (IPv4-mapped) and `::ffff:0:0:0/96` (IPv4-translated, RFC 2765): the embedded IPv4.
 * - `64:ff9b::/96` (well-known NAT64 prefix, RFC 6052): the embedded IPv4.
 * - `2002::/16` (6to4, RFC 3056): the IPv4 in bits 16–47. Only an embedded non-public IPv4 is refused; a 6to4 address
 *   over a public IPv4 reaches that public host, so it stays allowed like the IPv4 itself would be.
 * Returns 'blocked' for ranges refused outright, whatever they embed:
 * - `::/96` (IPv4-compatible, deprecated by RFC 4291, also covers `::` and `::1`): no public host uses it, and some
 *   stacks still route it to the IPv4 address.
 * - `64:ff9b:1::/48` (local-use NAT64, RFC 8215): translated inside the operator's own network.
 */
function embeddedIpv4(groups: number[]): string | 'blocked' | null {
  const [g0, g1, g2, g3, g4, g5, g6 = 0, g7 = 0] = groups;
  const zerosTo = (n: number) => groups.slice(0, n).every((g) => g === 0);
  if (zerosTo(6)) return 'blocked';
  if (zerosTo(5) && g5 === 0xffff) return ipv4From(g6, g7);
  if (zerosTo(4) && g4 === 0xffff && g5 === 0) return ipv4From(g6, g7);
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 0 && g3 === 0 && g4 === 0 && g5 === 0) return ipv4From(g6, g7);
  if (g0 === 0x64 && g1 === 0xff9b && g2 === 1) return 'blocked';
  if (g0 === 0x2002 && g1 !== undefined && g2 !== undefined) return ipv4From(g1, g2);
  return null;
}

/** True when `address` (an IP literal) is loopback, private, link-local or otherwise not a public destination. */
export function isBlockedAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '').split('%')[0] ?? '';
  const family = isIP(bare);
  if (family === 4) return BLOCKED.check(bare, 'ipv4');
  if (family === 6) {
    const groups = ipv6Groups(bare);
    if (!groups) return true;
    const v4 = embeddedIpv4(groups);
    if (v4 === 'blocked') return true;
    if (v4 && BLOCKED.check(v4, 'ipv4')) return true;
    return BLOCKED.check(bare, 'ipv6');
  }
  return true; // not an IP literal: never trusted as a destination
}

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to every address it has (like `dns.lookup(host, { all: true })`). */
export type HostResolver = (hostname: string) => Promise<ResolvedAddress[]>;

export type TargetRejection =
  | 'invalid_url'
  | 'scheme_not_allowed'
  | 'credentials_in_url'
  | 'localhost'
  | 'private_address'
  | 'resolves_to_private_address'
  | 'unresolvable';

export type TargetCheck =
  | { ok: true; url: URL; hostname: string; addresses: ResolvedAddress[] }
  | { ok: false; reason: TargetRejection; message: string };

const reject = (reason: TargetRejection, message: string): TargetCheck => ({ ok: false, reason, message });

/** The syntax rules, without resolving anything: http(s), no credentials, not a localhost name. */
export function parseWebhookUrl(
  raw: string,
): { ok: true; url: URL; hostname: string } | Extract<TargetCheck, { ok: false }> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: 'invalid_url', message: 'url must be an absolute URL' };
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    return { ok: false, reason: 'scheme_not_allowed', message: 'url must use http or https' };
  }
  if (url.username !== '' || url.password !== '') {
    return { ok: false, reason: 'credentials_in_url', message: 'url must not carry credentials' };
  }
  const hostname = url.hostname
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '')
    .toLowerCase();
  if (hostname === 'localhost' || hostname.endsWith('.localhost')) {
    return { ok: false, reason: 'localhost', message: 'localhost is not a publicly reachable address' };
  }
  return { ok: true, url, hostname };
}

/**
 * Checks a webhook URL and the addresses its host resolves to. With `allowPrivate` (on-premise installs, tests) the
 * address rules are skipped but the URL rules still apply. `requireResolution: false` accepts a name that does not
 * resolve yet (at registration, DNS may not be set up); delivery always requires it.
 */
export async function checkWebhookTarget(
  raw: string,
  options: { resolve: HostResolver; allowPrivate?: boolean; requireResolution?: boolean },
): Promise<TargetCheck> {
  const parsed = parseWebhookUrl(raw);
  if (!parsed.ok) {
    if (parsed.reason === 'localhost' && options.allowPrivate) {
      // fall through to resolution below
    } else {
      return parsed;
    }
  }
  const url = new URL(raw);
  const hostname = url.hostname
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '')
    .toLowerCase();
  const literal = isIP(hostname);
  if (literal !== 0) {
    if (!options.allowPrivate && isBlockedAddress(hostname)) {
      return reject('private_address', `${hostname} is a loopback, private or link-local address`);
    }
    return { ok: true, url, hostname, addresses: [{ address: hostname, family: literal === 4 ? 4 : 6 }] };
  }
  let addresses: ResolvedAddress[];
  try {
    addresses = await options.resolve(hostname);
  } catch {
    addresses = [];
  }
  if (addresses.length === 0) {
    if (options.requireResolution === false) return { ok: true, url, hostname, addresses: [] };
    return reject('unresolvable', `${hostname} does not resolve`);
  }
  if (!options.allowPrivate) {
    const blocked = addresses.find((entry) => isBlockedAddress(entry.address));
    if (blocked) {
      return reject(
        'resolves_to_private_address',
        `${hostname} resolves to ${blocked.address}, a loopback, private or link-local address`,
      );
    }
  }
  return { ok: true, url, hostname, addresses };
}
