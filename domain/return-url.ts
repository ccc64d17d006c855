/**
 * Where a checkout may send the buyer's browser back to (contract 4.2: returnUrl is "validated against the
 * enterprise domain allowlist and the workspace owning the event; if invalid it is ignored and the purchase
 * proceeds"). Every place that accepts a returnUrl asks `returnUrlForOrder`, so the rule lives here only.
 *
 * An allowlist is a list of host patterns:
 * - `shop.example.com`: that host only (any port). `example.com` does not let `evil-example.com` or
 *   `shop.example.com` through.
 * - `*.example.com`: any subdomain of example.com, at any depth, but not example.com itself. The part after `*.`
 *   must have at least two labels, so `*.com` is refused.
 * Hosts are compared in the form browsers resolve: lower case, internationalised names in punycode
 * (`bücher.example` and `xn--bcher-kva.example` are one host), a trailing dot dropped.
 *
 * A URL is accepted only over https, except on loopback hosts (localhost, 127.0.0.0/8, [::1]) where http is allowed
 * for local development; never with userinfo (`https://good.com@evil.com` goes to evil.com, and nobody needs a
 * password in a return link).
 */

export type HostPattern = { kind: 'exact'; host: string } | { kind: 'subdomains'; suffix: string };

/** Longest stored returnUrl (contract part 8); a URL that grows past it once normalised is ignored, not truncated. */
export const RETURN_URL_MAX_LENGTH = 2048;

const HOST_CHARACTERS = /^[a-z0-9_.-]+$/;
const IPV4 = /^\d{1,3}(?:\.\d{1,3}){3}$/;
const IPV6_LITERAL = /^\[[0-9a-f:.]+\]$/i;

/** A host as browsers resolve it (lower case, punycode, no trailing dot), or null when `raw` is not a bare host. */
function canonicalHost(raw: string): string | null {
  const trimmed = raw.trim();
  // Anything that would make the URL parser read a path, userinfo, port, query or fragment is not a host.
  if (trimmed === '' || /[\s/\\@?#%]/.test(trimmed)) return null;
  if (trimmed.includes(':') && !IPV6_LITERAL.test(trimmed)) return null;
  let url: URL;
  try {
    url = new URL(`https://${trimmed}/`);
  } catch {
    return null;
  }
  if (url.port !== '' || url.username !== '' || url.password !== '' || url.pathname !== '/') return null;
  const host = url.hostname.replace(/\.$/, '');
  if (host === '' || host.startsWith('.') || host.includes('..')) return null;
  return IPV6_LITERAL.test(host) || HOST_CHARACTERS.test(host) ? host : null;
}

/** One allowlist entry (`shop.example.com` or `*.example.com`), or null when it is not one. */
export function parseHostPattern(entry: string): HostPattern | null {
  const trimmed = entry.trim();
  if (trimmed.startsWith('*.')) {
    const suffix = canonicalHost(trimmed.slice(2));
    if (suffix === null || !suffix.includes('.') || IPV4.test(suffix) || IPV6_LITERAL.test(suffix)) return null;
    return { kind: 'subdomains', suffix };
  }
  const host = canonicalHost(trimmed);
  return host ? { kind: 'exact', host } : null;
}

/** The canonical text of a pattern, as stored and shown (`*.example.com`, `xn--bcher-kva.example`). */
export const formatHostPattern = (pattern: HostPattern): string =>
  pattern.kind === 'exact' ? pattern.host : `*.${pattern.suffix}`;

/**
 * Parses a whole allowlist, refusing it when any entry is not a host pattern: a typo must be seen when the list is
 * configured, not discovered as buyers silently losing their return link.
 */
export function parseHostPatterns(entries: readonly string[]): HostPattern[] {
  const invalid = entries.filter((entry) => parseHostPattern(entry) === null);
  if (invalid.length > 0) {
    throw new Error(
      `not a host pattern (use "shop.example.com" or "*.example.com"): ${invalid.map((e) => JSON.stringify(e)).join(', ')}`,
    );
  }
  return entries.map((entry) => parseHostPattern(entry) as HostPattern);
}

/** A comma-separated list (RETURN_URL_ALLOWED_HOSTS), empty entries skipped. */
export const parseHostList = (text: string): HostPattern[] =>
  parseHostPatterns(
    text
      .split(',')
      .map((entry) => entry.trim())
      .filter(Boolean),
  );

const isLoopback = (host: string): boolean =>
  host === 'localhost' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host);

const matches = (host: string, pattern: HostPattern): boolean =>
  pattern.kind === 'exact' ? host === pattern.host : host.endsWith(`.${pattern.suffix}`);

/** `raw` in normalised form when it is an absolute URL the allowlist permits; null otherwise. */
export function acceptedReturnUrl(raw: string, allowlist: readonly HostPattern[]): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return null;
  }
  if (url.username !== '' || url.password !== '') return null;
  const host = url.hostname.replace(/\.$/, '');
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && isLoopback(host))) return null;
  if (!allowlist.some((pattern) => matches(host, pattern))) return null;
  return url.href.length <= RETURN_URL_MAX_LENGTH ? url.href : null;
}

/** Where the buyer's session came from, as far as returnUrl is concerned. */
export type ReturnUrlAuthority =
  /** A session from an enterprise exchange: that enterprise's allowlist, for the workspaces it serves only. */
  | { kind: 'enterprise'; allowlist: readonly HostPattern[]; servedWorkspaceIds: readonly string[] }
  /** A first-party sign-in: the service-wide list (RETURN_URL_ALLOWED_HOSTS). */
  | { kind: 'service'; allowlist: readonly HostPattern[] };

/**
 * The returnUrl to keep on an order for an event of `eventWorkspaceId`, or null to ignore it (the purchase then
 * proceeds and the buyer lands on the service's own order page). An enterprise's allowlist only ever covers the
 * workspaces that enterprise serves.
 */
export function returnUrlForOrder(raw: string, authority: ReturnUrlAuthority, eventWorkspaceId: string): string | null {
  if (authority.kind === 'enterprise' && !authority.servedWorkspaceIds.includes(eventWorkspaceId)) return null;
  return acceptedReturnUrl(raw, authority.allowlist);
}

/** The host of a URL for logs (never the whole URL, whose query may carry a shop's tokens), or null. */
export function hostForLog(raw: string): string | null {
  try {
    return new URL(raw).hostname;
  } catch {
    return null;
  }
}
