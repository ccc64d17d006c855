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

/** IPv4 addresses carried inside IPv6 (mapped ::ffff:a.b.c.d, NAT64 64:ff9b::a.b.c.d) are judged as IPv4. */
function embeddedIpv4(address: string): string | null {
  const lower = address.toLowerCase();
  const dotted = /^(?:::ffff:|64:ff9b::)(\d{1,3}(?:\.\d{1,3}){3})$/.exec(lower);
  if (dotted?.[1]) return dotted[1];
  const hex = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
  if (hex?.[1] && hex[2]) {
    const high = Number.parseInt(hex[1], 16);
    const low = Number.parseInt(hex[2], 16);
    return [high >> 8, high & 255, low >> 8, low & 255].join('.');
  }
  return null;
}

/** True when `address` (an IP literal) is loopback, private, link-local or otherwise not a public destination. */
export function isBlockedAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '').split('%')[0] ?? '';
  const family = isIP(bare);
  if (family === 4) return BLOCKED.check(bare, 'ipv4');
  if (family === 6) {
    const v4 = embeddedIpv4(bare);
    if (v4) return BLOCKED.check(v4, 'ipv4');
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
