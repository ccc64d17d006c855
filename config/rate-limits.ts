import type { Env } from './env.js';

/**
 * Every rate limit of the service, by name. Routes refer to a limit by its name only, so the numbers live here and
 * nowhere else. Each limit is a fixed window of `windowSeconds`, counted in Redis (shared by every API process); while
 * Redis is down or slow, each process judges the hit by its own counts, kept in step with Redis's answers
 * (api/plugins/rate-limit.ts).
 */
export interface RateLimitSpec {
  /** Hits allowed per key per window. */
  points: number;
  windowSeconds: number;
  /** What one hit is and what it is counted per, for the 429 message ("At most 10 payment opens per buyer …"). */
  counts: string;
}

export const RATE_LIMIT_NAMES = [
  'publicApi',
  'organizerApiKey',
  'signInRequestPerClient',
  'signInRequestPerEmailAndClient',
  'signInVerifyPerClient',
  'signInVerifyPerEmailAndClient',
  'paymentOpen',
  'paymentCard',
  'purchaseSessionOpen',
  'queueJoin',
  'queueStanding',
  'ticketResendPerClient',
  'ticketResendPerTicket',
  'signUpPerClient',
  'signUpPerEmailAndClient',
  'organizerSignInRequestPerClient',
  'organizerSignInRequestPerEmailAndClient',
  'organizerSignInVerifyPerClient',
  'organizerSignInVerifyPerEmailAndClient',
  'deviceCodePerClient',
  'deviceUserCodePerClient',
] as const;

export type RateLimitName = (typeof RATE_LIMIT_NAMES)[number];
export type RateLimits = Readonly<Record<RateLimitName, RateLimitSpec>>;
/** Changes to some limits' numbers, for tests that need small limits and for deployments. */
export type RateLimitOverrides = Partial<
  Record<RateLimitName, Partial<Pick<RateLimitSpec, 'points' | 'windowSeconds'>>>
>;

/**
 * Longest wait for Redis on one limit check before the process judges the hit by its own counts instead: a hung Redis
 * must not hold every request of the service. A fallback cannot grant more than Redis would have (the process's
 * counts include every hit it made and Redis's last answer), so a short wait costs no accuracy to one process.
 */
export const RATE_LIMIT_REDIS_TIMEOUT_MS = 250;

type LimitEnv = Pick<
  Env,
  'PUBLIC_RATE_LIMIT_PER_MINUTE' | 'ORGANIZER_RATE_LIMIT_PER_MINUTE' | 'WAITING_ROOM_POLLS_PER_10_SECONDS'
>;

const defaults = (env: LimitEnv): RateLimits => ({
  // Contract 4.18 and 8: "strict per-IP limit", value not given; the env sets it (IPv6 clients count per /64).
  publicApi: { points: env.PUBLIC_RATE_LIMIT_PER_MINUTE, windowSeconds: 60, counts: 'public API requests per client' },
  // Contract 8: "B2B rate limit: 429 exists; values and scope: not shown". Our choice: per API key, since one key is
  // one integration (5.1). 1200 a minute (20 a second sustained) covers a door check-in integration scanning a large
  // venue's entrance rush with one key, and still stops a runaway loop within a second of its start.
  organizerApiKey: {
    points: env.ORGANIZER_RATE_LIMIT_PER_MINUTE,
    windowSeconds: 60,
    counts: 'organizer API requests per API key',
  },
  signInRequestPerClient: { points: 30, windowSeconds: 600, counts: 'sign-in code requests per client' },
  // Per email and client together: a budget per email alone could be spent by anyone, locking the buyer out.
  signInRequestPerEmailAndClient: {
    points: 5,
    windowSeconds: 600,
    counts: 'sign-in codes for one email per client',
  },
  signInVerifyPerClient: { points: 60, windowSeconds: 900, counts: 'sign-in attempts per client' },
  signInVerifyPerEmailAndClient: {
    points: 10,
    windowSeconds: 900,
    counts: 'sign-in attempts for one email per client',
  },
  // Contract 8: 10 per minute per buyer, for POST /customer/orders/{id}/payment and /payment/pse together.
  paymentOpen: { points: 10, windowSeconds: 60, counts: 'payment opens per buyer' },
  paymentCard: { points: 10, windowSeconds: 60, counts: 'card payments per buyer' },
  purchaseSessionOpen: { points: 20, windowSeconds: 60, counts: 'purchase sessions opened per buyer' },
  queueJoin: { points: 30, windowSeconds: 60, counts: 'waiting-room joins per date per client' },
  // Per turn token instead of the per-address publicApi: a crowd behind one NAT shares an address, never a token. A
  // short window, so the limit is a cadence: a token over it waits seconds, not the rest of a minute.
  queueStanding: {
    points: env.WAITING_ROOM_POLLS_PER_10_SECONDS,
    windowSeconds: 10,
    counts: 'waiting-room standing polls per turn',
  },
  ticketResendPerClient: { points: 5, windowSeconds: 600, counts: 'ticket resend requests per client' },
  // Over this one the request is still accepted (the answer must not reveal the code exists); no email is sent.
  ticketResendPerTicket: { points: 3, windowSeconds: 3600, counts: 'ticket emails per ticket' },
  signUpPerClient: { points: 10, windowSeconds: 3600, counts: 'sign-ups per client' },
  // Per email and client together, as for sign-in codes: a budget per email alone could be spent by anyone, blocking
  // the owner from signing up for the window. Each sign-up mails the address, so this (with signUpPerClient) is also
  // what bounds flooding someone's inbox: 3 mails an hour per sending address.
  signUpPerEmailAndClient: { points: 3, windowSeconds: 3600, counts: 'sign-ups for one email per client' },
  // Organizer sign-in on the web pages: the buyers' numbers, counted apart so neither audience spends the other's.
  organizerSignInRequestPerClient: {
    points: 30,
    windowSeconds: 600,
    counts: 'organizer sign-in code requests per client',
  },
  organizerSignInRequestPerEmailAndClient: {
    points: 5,
    windowSeconds: 600,
    counts: 'organizer sign-in codes for one email per client',
  },
  organizerSignInVerifyPerClient: { points: 60, windowSeconds: 900, counts: 'organizer sign-in attempts per client' },
  organizerSignInVerifyPerEmailAndClient: {
    points: 10,
    windowSeconds: 900,
    counts: 'organizer sign-in attempts for one email per client',
  },
  deviceCodePerClient: { points: 30, windowSeconds: 600, counts: 'device login requests per client' },
  // RFC 8628 section 5.1: user codes are short, so guessing them on the verification page must be slow.
  deviceUserCodePerClient: { points: 30, windowSeconds: 600, counts: 'device code entries per client' },
});

/** The limits of this process: the defaults, the env's numbers, then `overrides`. */
export function rateLimitsFrom(env: LimitEnv, overrides: RateLimitOverrides = {}): RateLimits {
  const limits = defaults(env);
  return Object.fromEntries(
    RATE_LIMIT_NAMES.map((name) => {
      const spec = { ...limits[name], ...overrides[name] };
      if (!Number.isInteger(spec.points) || spec.points < 1) {
        throw new Error(`rate limit ${name}: points must be a whole number ≥ 1, got ${spec.points}`);
      }
      // Redis expiries are whole seconds (rate-limiter-flexible sets them with EX).
      if (!Number.isInteger(spec.windowSeconds) || spec.windowSeconds < 1) {
        throw new Error(`rate limit ${name}: windowSeconds must be a whole number ≥ 1, got ${spec.windowSeconds}`);
      }
      return [name, spec];
    }),
  ) as Record<RateLimitName, RateLimitSpec>;
}
