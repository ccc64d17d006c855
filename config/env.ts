import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { z } from 'zod';
import { providerTaskQueueOf } from '../workflows/definitions.js';
import { isRsaPrivateKey } from './video-signing-key.js';

/** The package version, the default build id (from source, config/, and compiled, dist/config/, alike). */
function packageVersion(): string {
  for (const path of ['../package.json', '../../package.json']) {
    try {
      const parsed = JSON.parse(readFileSync(new URL(path, import.meta.url), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (parsed.name === 'ticketing-service' && parsed.version) return parsed.version;
    } catch {
      // not in this layout: the next one
    }
  }
  return 'unknown';
}

/**
 * Process configuration, read once from the environment. Every default is the local dev stack's, so a
 * newcomer needs no .env file; production overrides each by variable.
 */
export const EnvSchema = z.object({
  /** `production` refuses public development secrets and test-only overrides; `test` is what `npm test` runs. */
  NODE_ENV: z.enum(['development', 'test', 'production']).default('development'),
  /** pino level of the API's and the worker's JSON logs. */
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Interface the API listens on. */
  API_HOST: z.string().default('127.0.0.1'),
  /** Port the API listens on (`npm run dev` moves the whole stack's ports with it and the other `*_PORT`s). */
  API_PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  /** Origin the service is reached at; used for absolute links (return URLs, waiting room, docs). */
  PUBLIC_ORIGIN: z.string().url().default('http://127.0.0.1:3000'),
  /**
   * Origin gateways use to reach our notification endpoints, when it differs from the browsers' (inside a
   * container network, for example). Defaults to PUBLIC_ORIGIN.
   */
  GATEWAY_NOTIFICATION_ORIGIN: z.string().url().optional(),
  /** PostgreSQL connection string of the application database (API, worker and scripts). */
  DATABASE_URL: z.string().default('postgres://postgres@127.0.0.1:5432/ticketing'),
  /**
   * The database password, when it is kept apart from DATABASE_URL (a secret file: DATABASE_PASSWORD_FILE); it
   * replaces the URL's password, so the URL itself holds no secret.
   */
  DATABASE_PASSWORD: z.preprocess((value) => (value === '' ? undefined : value), z.string().optional()),
  /** Connections each process keeps at most in its PostgreSQL pool. */
  DATABASE_POOL_MAX: z.coerce.number().int().min(1).default(20),
  /**
   * The longest a query waits for a pooled connection (a free one, or a new one being opened). Past it the API answers
   * 503 SERVICE_UNAVAILABLE and a worker step fails its attempt, to be retried: nothing waits without bound on a
   * saturated pool or a database that does not answer. Below the 15 s of a checkout's database step, so an attempt the
   * workflow has given up on does not start its transaction later.
   */
  DATABASE_CONNECT_TIMEOUT_MS: z.coerce.number().int().min(100).default(10_000),
  /** Redis connection string: rate limits, idempotency records, the waiting room and the reconciler's dedupe. */
  REDIS_URL: z.string().default('redis://127.0.0.1:6379/0'),
  /** Redis' password (`requirepass`) kept apart from REDIS_URL, as DATABASE_PASSWORD is; it replaces the URL's. */
  REDIS_PASSWORD: z.preprocess((value) => (value === '' ? undefined : value), z.string().optional()),
  /** `host:port` of the Temporal frontend. */
  TEMPORAL_ADDRESS: z.string().default('127.0.0.1:7233'),
  /** Temporal namespace of every execution. */
  TEMPORAL_NAMESPACE: z.string().default('default'),
  /**
   * TLS to the Temporal frontend (a self-hosted cluster behind TLS, Temporal Cloud). Implied by any of the settings
   * below; the server's certificate is checked against the system's CAs unless TEMPORAL_TLS_CA_CERT names another.
   */
  TEMPORAL_TLS: z.stringbool().default(false),
  /** Host name the server's certificate is checked against (SNI), when it differs from TEMPORAL_ADDRESS's host. */
  TEMPORAL_TLS_SERVER_NAME: z.preprocess((value) => (value === '' ? undefined : value), z.string().optional()),
  /** PEM of the CA that signed the server's certificate (a private CA); TEMPORAL_TLS_CA_CERT_FILE reads it from a file. */
  TEMPORAL_TLS_CA_CERT: z.preprocess((value) => (value === '' ? undefined : value), z.string().optional()),
  /** mTLS: this client's certificate and private key (PEM), set together (or their `_FILE` variants). */
  TEMPORAL_TLS_CLIENT_CERT: z.preprocess((value) => (value === '' ? undefined : value), z.string().optional()),
  /** mTLS: the private key (PEM) of TEMPORAL_TLS_CLIENT_CERT (or TEMPORAL_TLS_CLIENT_KEY_FILE). */
  TEMPORAL_TLS_CLIENT_KEY: z.preprocess((value) => (value === '' ? undefined : value), z.string().optional()),
  /** API key of a Temporal Cloud namespace (sent as a Bearer token over TLS); an alternative to mTLS. */
  TEMPORAL_API_KEY: z.preprocess((value) => (value === '' ? undefined : value), z.string().optional()),
  /** Task queue of checkouts and every other workflow but webhook deliveries (see TEMPORAL_WEBHOOK_TASK_QUEUE). */
  TEMPORAL_TASK_QUEUE: z.string().default('ticketing'),
  /**
   * Checkouts start under a fairness key naming the 10 s in which they began (api/services/task-fairness.ts), so a
   * new buyer's reservation is not dispatched behind a backlog of earlier checkouts' tasks (expiring holds). Needs
   * the Temporal server's `matching.enableFairness`. `false` only to measure the difference (bench
   * --compare-fairness).
   */
  CHECKOUT_FAIRNESS_KEYS: z.stringbool().default(true),
  /**
   * Worker Versioning: workers poll as deployment version TEMPORAL_DEPLOYMENT_NAME / TEMPORAL_BUILD_ID; checkouts and
   * other bounded runs stay on the version they started on, memberships and settlements move to the current one. Set
   * it on the API too (checkouts then carry only what the current version knows). See docs/deployment.md.
   */
  WORKER_VERSIONING: z.stringbool().default(false),
  /** The worker deployment this service's workers belong to (one per task queue set, shared by every release). */
  TEMPORAL_DEPLOYMENT_NAME: z.string().min(1).default('ticketing'),
  /**
   * This release's build id within the deployment: one per image (CI sets the image tag or commit). Every replica of
   * a release must share it; a new release must change it. Default: the package version (empty counts as unset).
   * Production with WORKER_VERSIONING refuses the default: two images of one package version would share a build id
   * and run each other's pinned executions.
   */
  TEMPORAL_BUILD_ID: z.preprocess(
    (value) => (value === '' ? undefined : value),
    z.string().min(1).default(packageVersion()),
  ),
  /**
   * With versioning on, a worker whose deployment has no current version yet (its first release, or a switch from
   * unversioned workers) makes its own version current once it polls. Later releases are made current by the operator
   * (`npm run temporal -- worker deployment set-current-version`, docs/deployment.md), never by a worker.
   */
  TEMPORAL_DEPLOYMENT_ADOPT_FIRST_VERSION: z.stringbool().default(true),
  /**
   * Workflow executions the worker keeps in memory. Checkouts stay open for the late-payment grace period, so an
   * unbounded cache grows with every sale of the day; an evicted execution is rebuilt from its history on its next task.
   */
  WORKER_MAX_CACHED_WORKFLOWS: z.coerce.number().int().min(10).default(300),
  /**
   * A workflow bundle built beforehand (`npx tsx worker/build-workflow-bundle.ts <file>`, as an image build or the test
   * run does once for all its workers and replays); unset, the worker builds its own at start.
   */
  WORKFLOW_BUNDLE_PATH: z.preprocess((value) => (value === '' ? undefined : value), z.string().optional()),
  /** Live keys look like `<prefix>_live_<secret>` (contract 5.1). */
  API_KEY_PREFIX: z
    .string()
    .regex(/^[a-z]{2,10}$/)
    .default('tkt'),
  // ---------------------------------------------------------------- self-service sign-up and device login
  /** How long a sign-up's email verification link works. */
  SIGN_UP_LINK_TTL_SECONDS: z.coerce
    .number()
    .int()
    .min(1)
    .default(24 * 60 * 60),
  /** Lifetime of a device authorization request (RFC 8628 `expires_in`); tests shorten it to reach expired_token. */
  DEVICE_CODE_TTL_SECONDS: z.coerce.number().int().min(1).max(3600).default(600),
  /** Seconds a device client waits between polls (RFC 8628 `interval`); each early poll adds 5 for that request. */
  DEVICE_CODE_INTERVAL_SECONDS: z.coerce.number().int().min(1).max(60).default(5),
  // ---------------------------------------------------------------- secrets, proxies and request limits
  /** 32-byte key (hex or base64) that encrypts stored signing secrets. Dev default is public on purpose. */
  SECRETS_ENCRYPTION_KEY: z.string().default('6465762d6f6e6c792d6b65792d646f2d6e6f742d7573652d696e2d70726f6421'),
  /**
   * Keys of the payload codec that encrypts workflow payloads (buyer data in Temporal histories, config/payload-codec.ts):
   * `<id>:<base64 32-byte key>` pairs, comma separated. New payloads use PAYLOAD_CODEC_ACTIVE_KEY; each payload names
   * its key id, so a retired key stays listed while retained histories use it. Dev default is public on purpose.
   */
  PAYLOAD_CODEC_KEYS: z.string().default('dev-1:ZGV2LW9ubHktY29kZWMta2V5LW5vdC1mb3ItcHJvZCE='),
  /** Id (in PAYLOAD_CODEC_KEYS) of the key that encrypts new payloads. */
  PAYLOAD_CODEC_ACTIVE_KEY: z.string().default('dev-1'),
  /**
   * Bearer token of the operators who decode payloads through the codec endpoint (`/codec/decode`, used by the
   * Temporal UI and CLI). Unset: the endpoint refuses every call.
   */
  CODEC_OPERATOR_TOKEN: z.preprocess((value) => (value === '' ? undefined : value), z.string().min(32).optional()),
  /** Browser origins of the Temporal UI allowed to call the codec endpoint with credentials (CORS), comma separated. */
  CODEC_CORS_ORIGINS: z.string().default('http://127.0.0.1:8233,http://localhost:8233'),
  /**
   * Which proxies may set X-Forwarded-For (the client address the rate limits count): `loopback` by default; set the
   * load balancer's addresses or hop count in production. Trusting every sender would let clients dodge limits.
   */
  TRUST_PROXY: z.string().default('loopback'),
  /** Largest request body the API reads; bigger ones get 413. */
  MAX_BODY_BYTES: z.coerce.number().int().min(1024).default(1_048_576),
  /** Requests per minute per client (IPv4 address or IPv6 /64) on the public API (config/rate-limits.ts). */
  PUBLIC_RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).default(120),
  /** Requests per minute per API key on the organizer API; the contract gives no value (config/rate-limits.ts). */
  ORGANIZER_RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).default(1200),
  // ---------------------------------------------------------------- metrics and load shedding (observability/)
  /** Port of the worker's Prometheus endpoint (`GET /metrics`, observability/worker-metrics.ts); 0 turns it off. */
  WORKER_METRICS_PORT: z.coerce.number().int().min(0).max(65535).default(9464),
  /** Interface that endpoint listens on: loopback by default, `0.0.0.0` when Prometheus scrapes from elsewhere. */
  WORKER_METRICS_HOST: z.string().min(1).default('127.0.0.1'),
  /**
   * `host:port` of the Temporal SDK's own Prometheus exporter (worker slots, task latencies, sticky cache); empty
   * turns it off. The worker's /metrics includes what it exports, so Prometheus scrapes WORKER_METRICS_PORT only.
   */
  TEMPORAL_METRICS_BIND_ADDRESS: z
    .string()
    .regex(/^$|^(\[[0-9a-fA-F:]+\]|[^:\s]+):\d{1,5}$/, 'must be host:port, or empty to turn it off')
    .default('127.0.0.1:9465'),
  /**
   * When set, the API's and the worker's `GET /metrics` ask for `Authorization: Bearer <METRICS_TOKEN>`; unset, they
   * are open, which production accepts only on private listeners (loopback or a private address).
   */
  METRICS_TOKEN: z.preprocess((value) => (value === '' ? undefined : value), z.string().min(16).optional()),
  /**
   * Load shedding (api/plugins/load-shedding.ts): above either threshold the API answers 503 SERVICE_UNAVAILABLE with
   * Retry-After instead of queueing requests without bound; /health and /metrics always answer. 0 turns one off.
   * Mean event-loop delay (ms) over the last sample: every request waits at least that long before it even starts.
   */
  LOAD_SHED_MAX_EVENT_LOOP_DELAY_MS: z.coerce.number().min(0).default(500),
  /** Share (0–1) of the last sample the event loop was busy: near 1, work arrives faster than it is done. */
  LOAD_SHED_MAX_EVENT_LOOP_UTILIZATION: z.coerce.number().min(0).max(1).default(0.98),
  /** How often the event loop is sampled (ms); a sample decides until the next one. */
  LOAD_SHED_SAMPLE_INTERVAL_MS: z.coerce.number().int().min(10).default(1000),
  /** Seconds a shed client is told to wait (Retry-After). */
  LOAD_SHED_RETRY_AFTER_SECONDS: z.coerce.number().int().min(1).default(5),
  /**
   * How long a buyer admitted by a waiting room has to reserve before the turn lapses and its slot goes to the next
   * buyer (docs/waiting-room.md). Every API process of a deployment must share one value.
   */
  WAITING_ROOM_TURN_MS: z.coerce
    .number()
    .int()
    .min(1000)
    .default(2 * 60_000),
  /**
   * Standing polls (`GET /queue/{date}`) one turn token may make per 10 seconds (config/rate-limits.ts): counted per
   * token, not per address, so a crowd behind one NAT polls freely while a token polling faster than the cadence the
   * room asks for (pollAfterMs, 800 ms) gets 429. The default leaves a browser that follows it twice its cadence.
   */
  WAITING_ROOM_POLLS_PER_10_SECONDS: z.coerce.number().int().min(1).default(25),
  /**
   * Waiting-room requests one API process holds at once: long polls (`GET /queue/{date}?waitMs=…`) held open, and
   * joins and polls being answered. Unset: as many as 30% of the process's heap limit holds at 20 KB each (about 3,900
   * with the API's 256 MB heap; a held long poll measured 16.4 KB; api/services/waiting-room-watch.ts). Three
   * quarters of it may be held long polls; a poll past that is answered at once and its `pollAfterMs` asks the buyer
   * back after about half its estimated wait (0.8–60 s). A room request past the whole budget gets 503 with a Retry-After of 1–5 s. The
   * process never runs out of heap under a crowd, and more API replicas hold more of it.
   */
  WAITING_ROOM_REQUESTS_PER_PROCESS: z.coerce.number().int().min(1).optional(),
  /**
   * Connections one API process keeps open at once; past it a new connection is closed at once and the client
   * connects again. Unset: as many as 20% of the process's heap limit holds at 6 KB each (about 8,700 with the API's
   * 256 MB heap): a crowd of 20,000 browsers each holding a connection ran a process out of heap.
   */
  API_MAX_CONNECTIONS: z.coerce.number().int().min(1).optional(),
  // ---------------------------------------------------------------- providers: gateways, seat map, mail
  /** The local sandbox that stands in for every provider whose base URL is unset (sandbox/README.md). */
  SANDBOX_URL: z.string().url().default('http://127.0.0.1:4010'),
  /**
   * Production refuses provider URLs that are the sandbox's (unset, or on SANDBOX_URL's origin): a real deployment
   * charging through the stand-in would sell tickets nobody paid for. `true` lets a production-mode rehearsal (a
   * staging stack, the deployment smoke test) run against the sandbox on purpose.
   */
  ALLOW_SANDBOX_PROVIDERS: z.stringbool().default(false),
  /** Gateway A's API; unset means the local sandbox's stand-in, `<SANDBOX_URL>/gateway-a`. */
  GATEWAY_A_BASE_URL: z.string().url().optional(),
  /** Gateway B's API; unset means the local sandbox's stand-in, `<SANDBOX_URL>/gateway-b`. */
  GATEWAY_B_BASE_URL: z.string().url().optional(),
  /** The seat-map provider's API; unset means the local sandbox's stand-in, `<SANDBOX_URL>/seatmap`. */
  SEATMAP_BASE_URL: z.string().url().optional(),
  /**
   * Gateway A access token (`Authorization: Bearer`). This and the other provider credentials default to the sandbox's
   * public dev values (sandbox/config.ts), never real ones.
   */
  GATEWAY_A_ACCESS_TOKEN: z.string().default('TEST-4010000000000000-000000-sandbox-access-token-dev'),
  /** Gateway A public key, handed to browsers to tokenize cards. */
  GATEWAY_A_PUBLIC_KEY: z.string().default('TEST-sandbox-public-key-dev'),
  /**
   * Currencies gateway A's merchant account charges in, comma-separated ISO 4217 codes. Gateway A charges a card in
   * its account's currency whatever the sale's, so a sale in any other currency is refused on gateway A's rails
   * (409 PAYMENT_UNAVAILABLE, reason currency_not_supported) rather than charged in the wrong money.
   */
  GATEWAY_A_CURRENCIES: z
    .string()
    .regex(/^[A-Z]{3}(,[A-Z]{3})*$/, 'comma-separated ISO 4217 codes, e.g. COP or COP,USD')
    .default('COP'),
  /** Key of gateway A's `x-signature` on payment notifications. */
  GATEWAY_A_WEBHOOK_SECRET: z.string().default('dev-gateway-a-webhook-secret'),
  /** Gateway B identity key. */
  GATEWAY_B_API_KEY: z.string().default('dev-gateway-b-api-key'),
  /** Gateway B secret key: integrity signatures of the payment button and of its notifications. */
  GATEWAY_B_SECRET_KEY: z.string().default('dev-gateway-b-secret-key'),
  /** How gateway B's payment button renders (its `data-render-mode`). */
  GATEWAY_B_RENDER_MODE: z.string().default('embedded'),
  /**
   * Where browsers load gateway B's button script on the storefront's hosted payment page. Unset: the gateway's own
   * library when GATEWAY_B_BASE_URL names the real gateway, else the sandbox's stand-in under the gateway B base URL.
   */
  GATEWAY_B_BUTTON_SCRIPT_URL: z.string().url().optional(),
  /** Credential of the seat-map provider (HTTP Basic user name). */
  SEATMAP_SECRET_KEY: z.string().default('dev-seatmap-secret-key'),
  /** Mail relay for sign-in codes, tickets and notices (the sandbox's inbox in development). */
  SMTP_HOST: z.string().default('127.0.0.1'),
  /** Port of that relay. */
  SMTP_PORT: z.coerce.number().int().default(2525),
  /**
   * `none`: plain SMTP (the sandbox, or a relay on a private network); `starttls`: upgrade with STARTTLS and refuse to
   * send if the server does not offer it (port 587); `implicit`: TLS from the first byte (port 465).
   */
  SMTP_TLS: z.enum(['none', 'starttls', 'implicit']).default('none'),
  /** SMTP login (AUTH), set together; refused without TLS, which would send the password in clear text. */
  SMTP_USER: z.preprocess((value) => (value === '' ? undefined : value), z.string().optional()),
  /** SMTP login password, with SMTP_USER (or SMTP_PASSWORD_FILE). */
  SMTP_PASSWORD: z.preprocess((value) => (value === '' ? undefined : value), z.string().optional()),
  /** PEM of a private CA the SMTP server's certificate is checked against; unset, the system's CAs. */
  SMTP_TLS_CA_CERT: z.preprocess((value) => (value === '' ? undefined : value), z.string().optional()),
  /** Sender of every email. */
  MAIL_FROM: z.string().default('Tickets <tickets@ticketing.local>'),
  // ---------------------------------------------------------------- payments, cancellations and memberships
  /** How long a closed sale keeps listening for a late payment before giving up (it is then resumed on demand). */
  LATE_PAYMENT_GRACE_MS: z.coerce
    .number()
    .int()
    .min(0)
    .default(24 * 60 * 60 * 1000),
  /**
   * `true`: card charges run first as a local activity inside the pay update (one workflow task less per card purchase),
   * falling back to the task-queue activity after 5 s or a failure. Off by default: the bench measured no CPU or
   * throughput gain on a 2-core box. The two faults found on it are fixed: a charge made by a workflow task that was
   * lost with its update stranded the approved payment (starved-worker simulation, seeds 139, 153, 319; the charge is
   * now recorded before it leaves, patch checkout-local-charge-recorded-first), and such an update answered 500 (now
   * 503, retryable). Checkouts keep the choice they started with.
   */
  CARD_CHARGE_LOCAL: z.stringbool().default(false),
  /**
   * Shortens every payment window to this many ms, for tests and demos only; refused in production, where the
   * date's paymentWindowMinutes (never below 10) always applies.
   */
  PAYMENT_WINDOW_OVERRIDE_MS: z.coerce.number().int().min(1000).optional(),
  /** After an event's sales are undone, how long its cancellation waits before a last look for late confirmations. */
  EVENT_CANCELLATION_FINAL_SWEEP_MS: z.coerce
    .number()
    .int()
    .min(0)
    .default(60 * 60 * 1000),
  /**
   * Length of every membership period, for tests and demos. This and the other MEMBERSHIP_* durations are ignored in
   * production; unset, workflows/membership-definitions.ts applies calendar periods and its defaults.
   */
  MEMBERSHIP_PERIOD_MS: z.coerce.number().int().min(1000).optional(),
  /** How long a membership signup's payment link stays open (production: 30 min). */
  MEMBERSHIP_SIGNUP_WINDOW_MS: z.coerce.number().int().min(1000).optional(),
  /** How long before a period ends its renewal is asked for (production: 7 days). */
  MEMBERSHIP_RENEWAL_NOTICE_MS: z.coerce.number().int().min(0).optional(),
  /** Time between renewal reminders (production: 2 days). */
  MEMBERSHIP_REMINDER_INTERVAL_MS: z.coerce.number().int().min(500).optional(),
  /** First wait before a membership asks the gateway about an open payment link (production: 30 s, then doubling). */
  MEMBERSHIP_PAYMENT_POLL_MS: z.coerce.number().int().min(500).optional(),
  /** How long after a payment request closes it is asked about once more (production: 10 s). */
  MEMBERSHIP_LATE_ASK_MS: z.coerce.number().int().min(0).optional(),
  /**
   * Hosts a checkout returnUrl may point to for buyers who signed in with an emailed code; others are ignored, not
   * refused. Exact hosts, or `*.example.com` for subdomains; https only except on loopback (domain/return-url.ts).
   * Sessions from an enterprise SSO exchange use that enterprise's own allowlist instead (entities/enterprise.ts).
   */
  RETURN_URL_ALLOWED_HOSTS: z.string().default('127.0.0.1,localhost'),
  // ---------------------------------------------------------------- organizer webhooks (sales operations)
  /**
   * Global switch for organizer webhook delivery. `false` is the contract's "delivery is paused" state: endpoints can
   * be registered, listed, edited and deleted, events wait in the outbox, and nothing is sent until it is `true`.
   */
  WEBHOOK_DELIVERY_ENABLED: z.stringbool().default(true),
  /**
   * Lets webhook URLs point at private, loopback and link-local addresses (on-premise installs whose receivers live
   * on the internal network, and tests with a local receiver). Never set it on a multi-tenant deployment: it turns
   * webhooks into a way to reach internal services (SSRF).
   */
  WEBHOOK_ALLOW_PRIVATE_TARGETS: z.stringbool().default(false),
  /** An endpoint is paused after this many consecutive failed delivery attempts. */
  WEBHOOK_PAUSE_AFTER_FAILURES: z.coerce.number().int().min(1).default(10),
  /** Attempts per event, the first POST included. */
  WEBHOOK_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(20).default(6),
  /** Wait before the first retry; later waits double up to WEBHOOK_RETRY_MAX_MS. */
  WEBHOOK_RETRY_INITIAL_MS: z.coerce.number().int().min(100).default(5_000),
  /** The longest wait between two delivery attempts. */
  WEBHOOK_RETRY_MAX_MS: z.coerce
    .number()
    .int()
    .min(100)
    .default(10 * 60_000),
  /** A receiver must answer 2xx within this time (contract part 6: 5 seconds). */
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).default(5_000),
  /**
   * Task queue of webhook deliveries and the outbox dispatcher, served by a worker of its own so that slow receivers
   * can never hold the slots checkouts need. Default `<TEMPORAL_TASK_QUEUE>-webhooks` (see webhookTaskQueue).
   */
  TEMPORAL_WEBHOOK_TASK_QUEUE: z.string().min(1).optional(),
  /**
   * Delivery attempts that worker runs at once (each may wait WEBHOOK_TIMEOUT_MS on a receiver). At least 2: the
   * dispatcher's long poll always holds one.
   */
  WEBHOOK_WORKER_MAX_ACTIVITIES: z.coerce.number().int().min(2).default(20),
  /** Workflow tasks that worker runs at once. */
  WEBHOOK_WORKER_MAX_WORKFLOW_TASKS: z.coerce.number().int().min(2).default(10),
  /**
   * Provider calls no buyer waits on (refunds, mass-refund pages, membership polls and last asks) run on
   * `<TEMPORAL_TASK_QUEUE>-providers`, at most this many activity starts per second across every worker (the server
   * enforces it). Gateway A publishes no hard limit; the commonly cited per-token envelope is 25 requests/s, so the
   * default stays under it. Raise it with the provider's written consent.
   */
  PROVIDER_ACTIVITIES_PER_SECOND: z.coerce.number().positive().default(20),
  /** Slots of the provider worker (a mass-refund page holds one for minutes). */
  PROVIDER_WORKER_MAX_ACTIVITIES: z.coerce.number().int().min(2).default(20),
  /**
   * Refund requests to gateway A (the payment read and the refund each count) per second across every worker
   * process: a token bucket in Redis (activities/gateway-budget.ts) that each request takes from, with a burst of one
   * second's worth. PROVIDER_ACTIVITIES_PER_SECOND spaces activities, and a mass-refund page is one activity that
   * sends hundreds of requests; this spaces the requests. Gateway A publishes no hard limit; the commonly cited
   * per-access-token envelope is 25 requests/s (burst 50), answered 429 with Retry-After above it. While Redis is
   * unavailable each process keeps this rate on its own.
   */
  GATEWAY_A_REQUESTS_PER_SECOND: z.coerce.number().positive().default(25),
  /**
   * The same budget for gateway B's refunds (the transaction read and the void). Gateway B documents no per-merchant
   * rate either; 10 requests/s is a cautious figure for a regional gateway's merchant API (its refunds are few: a
   * void is possible only the day of the charge), well above what its mass refunds need.
   */
  GATEWAY_B_REQUESTS_PER_SECOND: z.coerce.number().positive().default(10),
  // ---------------------------------------------------------------- reconciler (workflows/reconciler.ts)
  /**
   * Whether workers keep the `reconciler` Schedule running. `false` pauses it (with a note saying so) instead of
   * deleting it, so switching it back on resumes the same Schedule and its history.
   */
  RECONCILER_ENABLED: z.stringbool().default(true),
  /** Seconds between reconciler runs; a run still going when the next is due makes that one skip. */
  RECONCILER_INTERVAL_SECONDS: z.coerce.number().int().min(10).default(60),
  /** Whether this worker sweeps lapsed holds; the test stack turns it off so tests own who closes their sales. */
  LAPSED_HOLD_SWEEP_ENABLED: z.stringbool().default(true),
  /** How often the worker closes reservations whose payment window passed and puts their stock back (worker/lapsed-hold-sweep.ts). */
  LAPSED_HOLD_SWEEP_MS: z.coerce.number().int().min(50).max(60_000).default(250),
  /** Reservations the lapsed-hold sweep closes per round at most. */
  LAPSED_HOLD_SWEEP_BATCH: z.coerce.number().int().min(1).max(20_000).default(2000),
  // ---------------------------------------------------------------- settlements (workflows/settlement*.ts)
  /** Whether workers keep the `settlement-sweep` Schedule running; `false` pauses it (with a note), never deletes it. */
  SETTLEMENTS_SCHEDULE_ENABLED: z.stringbool().default(true),
  /** Seconds between sweeps for ended event dates to settle. */
  SETTLEMENTS_SWEEP_INTERVAL_SECONDS: z.coerce.number().int().min(10).default(300),
  /** A date is settled once it ended this long ago, so late payments and same-night refunds land first. */
  SETTLEMENT_AFTER_END_MS: z.coerce
    .number()
    .int()
    .min(0)
    .default(6 * 60 * 60_000),
  /** How long a SENT statement waits for the organizer's objections before the transfer is requested. */
  SETTLEMENT_OBJECTION_WINDOW_MS: z.coerce
    .number()
    .int()
    .min(1000)
    .default(3 * 24 * 60 * 60_000),
  // ---------------------------------------------------------------- video provider (member content playback)
  /** The video provider's API (signing keys); unset means the sandbox's stand-in, `<SANDBOX_URL>/video`. */
  VIDEO_API_BASE_URL: z.string().url().optional(),
  /** Where players fetch a playback id (`<base>/<playbackId>?token=…`); unset means the sandbox, `<SANDBOX_URL>/video/play`. */
  VIDEO_PLAYBACK_BASE_URL: z.string().url().optional(),
  /** Id the provider gave our playback signing key; it is the `kid` of every playback token. */
  VIDEO_SIGNING_KEY_ID: z.preprocess((value) => (value === '' ? undefined : value), z.string().max(200).optional()),
  /**
   * RSA private key (2048 bits or more) of that signing key: a PEM, the base64 of a PEM as the provider returns it,
   * or a JWK. Required with VIDEO_SIGNING_KEY_ID in production; elsewhere, when both are unset, the API creates a
   * development key at the provider on first use.
   */
  VIDEO_SIGNING_PRIVATE_KEY: z.preprocess(
    (value) => (value === '' ? undefined : value),
    z
      .string()
      .refine(isRsaPrivateKey, 'must be an RSA private key of 2048 bits or more (PEM, base64 PEM or JWK)')
      .optional(),
  ),
  /** Access token id of the provider's API, used only to create that development key. Sandbox value by default. */
  VIDEO_API_TOKEN_ID: z.string().default('dev-video-token-id'),
  /** Secret of that access token. Sandbox value by default. */
  VIDEO_API_TOKEN_SECRET: z.string().default('dev-video-token-secret'),
  /** Lifetime of a playback token: long enough to start a player, short enough that a shared link soon dies. */
  VIDEO_PLAYBACK_TOKEN_TTL_SECONDS: z.coerce.number().int().min(30).max(86_400).default(600),
});

export type Env = z.infer<typeof EnvSchema>;

/**
 * Secrets whose defaults are public (they are in this repository for the sandbox and demos): a production process
 * that still runs with one of them would sign, encrypt or authenticate with a key anyone can read.
 */
const DEV_DEFAULT_SECRETS = [
  'SECRETS_ENCRYPTION_KEY',
  'PAYLOAD_CODEC_KEYS',
  'GATEWAY_A_ACCESS_TOKEN',
  'GATEWAY_A_WEBHOOK_SECRET',
  'GATEWAY_B_API_KEY',
  'GATEWAY_B_SECRET_KEY',
  'SEATMAP_SECRET_KEY',
] as const satisfies readonly (keyof Env)[];

/** The names of the secrets `env` still holds at their public development default. */
export function devDefaultSecretsIn(env: Env): string[] {
  const defaults = EnvSchema.parse({});
  return DEV_DEFAULT_SECRETS.filter((name) => env[name] === defaults[name]);
}

/**
 * `<NAME>_FILE` names a file holding the value of `<NAME>` (Docker and Kubernetes secrets mounted as files), for every
 * variable of the schema. Setting both is refused: which one wins would be a guess. One trailing newline (what
 * `echo` and editors add) is dropped; the rest of the file is the value as written.
 */
export function withFileVariables(source: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const resolved: NodeJS.ProcessEnv = { ...source };
  const problems: string[] = [];
  for (const name of Object.keys(EnvSchema.shape)) {
    const file = source[`${name}_FILE`];
    if (file === undefined || file === '') continue;
    if (source[name] !== undefined && source[name] !== '') {
      problems.push(`${name} and ${name}_FILE are both set; set one`);
      continue;
    }
    try {
      resolved[name] = readFileSync(file, 'utf8').replace(/\r?\n$/, '');
    } catch (error) {
      problems.push(`${name}_FILE: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? String(error)})`);
    }
  }
  if (problems.length > 0) throw new Error(`Invalid configuration: ${problems.join('; ')}`);
  return resolved;
}

/** Loopback, or an address of a private network (RFC 1918, IPv6 unique-local and link-local): not reachable from outside. */
export function isPrivateListener(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (bare === 'localhost' || bare === '::1') return true;
  if (isIP(bare) === 4) {
    const [a = 0, b = 0] = bare.split('.').map(Number);
    return a === 127 || a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168);
  }
  if (isIP(bare) === 6) return /^f[cd]/.test(bare) || /^fe[89ab]/.test(bare);
  return false;
}

const originOf = (url: string): string => new URL(url).origin;

/**
 * The provider settings that still point at the sandbox: unset (so derived from SANDBOX_URL) or on its origin. The
 * video API is left out: production never calls it (it signs playback with the key it was given).
 */
export function sandboxProvidersIn(env: Env): string[] {
  const sandbox = originOf(env.SANDBOX_URL);
  const providers = {
    GATEWAY_A_BASE_URL: env.GATEWAY_A_BASE_URL,
    GATEWAY_B_BASE_URL: env.GATEWAY_B_BASE_URL,
    SEATMAP_BASE_URL: env.SEATMAP_BASE_URL,
    VIDEO_PLAYBACK_BASE_URL: env.VIDEO_PLAYBACK_BASE_URL,
  };
  const named = Object.entries(providers)
    .filter(([, url]) => url === undefined || originOf(url) === sandbox)
    .map(([name]) => name);
  if (env.GATEWAY_B_BUTTON_SCRIPT_URL !== undefined && originOf(env.GATEWAY_B_BUTTON_SCRIPT_URL) === sandbox) {
    named.push('GATEWAY_B_BUTTON_SCRIPT_URL');
  }
  return named;
}

/**
 * The listeners that would serve metrics to anyone who reaches them: without METRICS_TOKEN, the API's and the worker's
 * /metrics on a public interface; the Temporal SDK's exporter has no token at all, so only its interface counts.
 */
export function openMetricsListenersIn(env: Env): string[] {
  const open: string[] = [];
  if (env.METRICS_TOKEN === undefined) {
    if (!isPrivateListener(env.API_HOST)) open.push(`API_HOST=${env.API_HOST}`);
    if (env.WORKER_METRICS_PORT !== 0 && !isPrivateListener(env.WORKER_METRICS_HOST)) {
      open.push(`WORKER_METRICS_HOST=${env.WORKER_METRICS_HOST}`);
    }
  }
  const sdkHost = env.TEMPORAL_METRICS_BIND_ADDRESS.slice(0, env.TEMPORAL_METRICS_BIND_ADDRESS.lastIndexOf(':'));
  if (env.TEMPORAL_METRICS_BIND_ADDRESS !== '' && !isPrivateListener(sdkHost)) {
    open.push(`TEMPORAL_METRICS_BIND_ADDRESS=${env.TEMPORAL_METRICS_BIND_ADDRESS}`);
  }
  return open;
}

/**
 * Why buyers and the gateways could not use PUBLIC_ORIGIN from outside (null when they can): plain http (the gateways
 * call https notification URLs only), or a loopback or private host. Left unset, it is the loopback default.
 */
export function unreachablePublicOrigin(origin: string): string | null {
  const url = new URL(origin);
  if (isPrivateListener(url.hostname)) return 'is a loopback or private address';
  if (url.protocol !== 'https:') return 'is not https';
  return null;
}

/** The configuration's contradictions, in any mode. */
function inconsistencies(env: Env): string[] {
  const problems: string[] = [];
  if ((env.VIDEO_SIGNING_KEY_ID === undefined) !== (env.VIDEO_SIGNING_PRIVATE_KEY === undefined)) {
    problems.push('set VIDEO_SIGNING_KEY_ID and VIDEO_SIGNING_PRIVATE_KEY together');
  }
  if ((env.TEMPORAL_TLS_CLIENT_CERT === undefined) !== (env.TEMPORAL_TLS_CLIENT_KEY === undefined)) {
    problems.push('set TEMPORAL_TLS_CLIENT_CERT and TEMPORAL_TLS_CLIENT_KEY together (mTLS needs both)');
  }
  if ((env.SMTP_USER === undefined) !== (env.SMTP_PASSWORD === undefined)) {
    problems.push('set SMTP_USER and SMTP_PASSWORD together');
  }
  if (env.SMTP_USER !== undefined && env.SMTP_TLS === 'none') {
    problems.push('SMTP_USER with SMTP_TLS=none would send the mail password in clear text; set SMTP_TLS');
  }
  return problems;
}

/** What a production process refuses to start with (each line names the variables to change). */
function productionRefusals(env: Env, source: NodeJS.ProcessEnv): string[] {
  const refusals: string[] = [];
  if (env.WORKER_VERSIONING && (source.TEMPORAL_BUILD_ID ?? '') === '') {
    refusals.push(
      "WORKER_VERSIONING=true needs TEMPORAL_BUILD_ID set to this image's release (RELEASE=<tag> with docker compose): " +
        "two releases sharing the default build id would run each other's pinned executions",
    );
  }
  const publicSecrets = devDefaultSecretsIn(env);
  if (publicSecrets.length > 0) {
    refusals.push(
      `${publicSecrets.join(', ')} still ${publicSecrets.length === 1 ? 'has its' : 'have their'} ` +
        'public development default; set real secrets before starting with NODE_ENV=production',
    );
  }
  if (env.PAYMENT_WINDOW_OVERRIDE_MS !== undefined) {
    refusals.push('PAYMENT_WINDOW_OVERRIDE_MS is for tests and demos and is refused in production');
  }
  // A development key lives only in one process's memory and at the sandbox; production signs with a key it owns.
  if (env.VIDEO_SIGNING_PRIVATE_KEY === undefined && env.VIDEO_SIGNING_KEY_ID === undefined) {
    refusals.push(
      'VIDEO_SIGNING_KEY_ID and VIDEO_SIGNING_PRIVATE_KEY are required in production (the key the video provider issued for signed playback)',
    );
  }
  const sandbox = env.ALLOW_SANDBOX_PROVIDERS ? [] : sandboxProvidersIn(env);
  if (sandbox.length > 0) {
    refusals.push(
      `${sandbox.join(', ')} point at the sandbox (unset, or on SANDBOX_URL's origin); set the real providers' URLs, ` +
        'or ALLOW_SANDBOX_PROVIDERS=true for a rehearsal against the sandbox',
    );
  }
  const unreachableOrigin = env.ALLOW_SANDBOX_PROVIDERS ? null : unreachablePublicOrigin(env.PUBLIC_ORIGIN);
  if (unreachableOrigin) {
    refusals.push(
      `PUBLIC_ORIGIN=${env.PUBLIC_ORIGIN} ${unreachableOrigin}: the gateways' notifications and the buyers' return ` +
        "links would not reach the API; set the load balancer's https origin, or ALLOW_SANDBOX_PROVIDERS=true for a rehearsal",
    );
  }
  const openMetrics = openMetricsListenersIn(env);
  if (openMetrics.length > 0) {
    refusals.push(
      `metrics would be open to anyone on ${openMetrics.join(', ')}; set METRICS_TOKEN, or listen on loopback or a private address`,
    );
  }
  if (env.SMTP_TLS === 'none' && !isPrivateListener(env.SMTP_HOST)) {
    refusals.push(
      `SMTP_TLS=none to ${env.SMTP_HOST} would send tickets in clear text; set SMTP_TLS=starttls (or implicit)`,
    );
  }
  return refusals;
}

/** The password given apart (DATABASE_PASSWORD, REDIS_PASSWORD) put into its URL. */
function withPassword(url: string, password: string | undefined): string {
  if (password === undefined) return url;
  const parsed = new URL(url);
  parsed.password = encodeURIComponent(password);
  return parsed.href;
}

export function loadEnv(source: NodeJS.ProcessEnv = process.env): Env {
  const resolved = withFileVariables(source);
  const parsed = EnvSchema.safeParse(resolved);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; ');
    throw new Error(`Invalid configuration: ${problems}`);
  }
  const env = parsed.data;
  const problems = [
    ...inconsistencies(env),
    ...(env.NODE_ENV === 'production' ? productionRefusals(env, resolved) : []),
  ];
  if (problems.length > 0) throw new Error(`Invalid configuration: ${problems.join('; ')}`);
  return {
    ...env,
    DATABASE_URL: withPassword(env.DATABASE_URL, env.DATABASE_PASSWORD),
    REDIS_URL: withPassword(env.REDIS_URL, env.REDIS_PASSWORD),
  };
}

/** The task queue of webhook deliveries and the dispatcher (TEMPORAL_WEBHOOK_TASK_QUEUE, by default derived). */
export const webhookTaskQueue = (env: Pick<Env, 'TEMPORAL_TASK_QUEUE' | 'TEMPORAL_WEBHOOK_TASK_QUEUE'>): string =>
  env.TEMPORAL_WEBHOOK_TASK_QUEUE ?? `${env.TEMPORAL_TASK_QUEUE}-webhooks`;

/** The rate-limited queue of provider calls no buyer waits on (see providerTaskQueueOf). */
export const providerTaskQueue = (env: Pick<Env, 'TEMPORAL_TASK_QUEUE'>): string =>
  providerTaskQueueOf(env.TEMPORAL_TASK_QUEUE);

/** Where each external provider lives: its configured URL, or the sandbox's stand-in. */
export function providerUrls(env: Env): { gatewayA: string; gatewayB: string; seatMap: string } {
  const sandbox = env.SANDBOX_URL.replace(/\/$/, '');
  return {
    gatewayA: env.GATEWAY_A_BASE_URL ?? `${sandbox}/gateway-a`,
    gatewayB: env.GATEWAY_B_BASE_URL ?? `${sandbox}/gateway-b`,
    seatMap: env.SEATMAP_BASE_URL ?? `${sandbox}/seatmap`,
  };
}
