import type { LookupAddress } from 'node:dns';
import { lookup } from 'node:dns/promises';
import type { HostResolver } from '../domain/webhook-targets.js';

/** Longest wait for the system resolver: a slow DNS server must not hold a webhook registration or delivery. */
export const DNS_DEADLINE_MS = 3_000;

type LookupAll = (hostname: string) => Promise<LookupAddress[]>;

/**
 * A resolver answering every address of the name (IPv4 and IPv6) from `lookupAll`, or rejecting once `deadlineMs`
 * have passed; the timer is cleared either way. A rejection reads as "does not resolve" to checkWebhookTarget.
 */
export function resolverWithDeadline(lookupAll: LookupAll, deadlineMs: number): HostResolver {
  return async (hostname) => {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`DNS timeout after ${deadlineMs} ms`)), deadlineMs);
    });
    try {
      const found = await Promise.race([lookupAll(hostname), deadline]);
      return found.map((entry) => ({ address: entry.address, family: entry.family === 6 ? 6 : 4 }));
    } finally {
      clearTimeout(timer);
    }
  };
}

/**
 * The system resolver (getaddrinfo, so /etc/hosts counts as it does for every other connection) with the deadline.
 * Webhook registration (the API) and every delivery attempt (the worker) check targets with it.
 */
export const systemResolver: HostResolver = resolverWithDeadline(
  (hostname) => lookup(hostname, { all: true, verbatim: true }),
  DNS_DEADLINE_MS,
);
