import { z } from 'zod';
import { isRsaPrivateKey } from './video-signing-key.js';

/**
 * Process configuration, read once from the environment. Every default is the local dev stack's, so a
 * newcomer needs no .env file; production overrides each by variable.
 */
const EnvSchema = z.object({
  NODE_ENV: z.enum(['development', 'test', 'production']).default('development'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  API_HOST: z.string().default('127.0.0.1'),
  API_PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  /** Origin the service is reached at; used for absolute links (return URLs, waiting room, docs). */
  PUBLIC_ORIGIN: z.string().url().default('http://127.0.0.1:3000'),
  /**
   * Origin gateways use to reach our notification endpoints, when it differs from the browsers' (inside a
   * container network, for example). Defaults to PUBLIC_ORIGIN.
   */
  GATEWAY_NOTIFICATION_ORIGIN: z.string().url().optional(),
  DATABASE_URL: z.string().default('postgres://postgres@127.0.0.1:5432/ticketing'),
  DATABASE_POOL_MAX: z.coerce.number().int().min(1).default(20),
  /**
   * The longest a query waits for a pooled connection (a free one, or a new one being opened). Past it the API answers
   * 503 SERVICE_UNAVAILABLE and a worker step fails its attempt, to be retried: nothing waits without bound on a
   * saturated pool or a database that does not answer. Below the 15 s of a checkout's database step, so an attempt the
   * workflow has given up on does not start its transaction later.
   */
  DATABASE_CONNECT_TIMEOUT_MS: z.coerce.number().int().min(100).default(10_000),
  REDIS_URL: z.string().default('redis://127.0.0.1:6379/0'),
  TEMPORAL_ADDRESS: z.string().default('127.0.0.1:7233'),
  TEMPORAL_NAMESPACE: z.string().default('default'),
  TEMPORAL_TASK_QUEUE: z.string().default('ticketing'),
  /**
   * Workflow executions the worker keeps in memory. Checkouts stay open for the late-payment grace period, so an
   * unbounded cache grows with every sale of the day; an evicted execution is rebuilt from its history on its next task.
   */
  WORKER_MAX_CACHED_WORKFLOWS: z.coerce.number().int().min(10).default(300),
  /**
   * A workflow bundle built beforehand (`tsx worker/build-workflow-bundle.ts <file>`, as an image build or the test
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
  /** 32-byte key (hex or base64) that encrypts stored signing secrets. Dev default is public on purpose. */
  SECRETS_ENCRYPTION_KEY: z.string().default('6465762d6f6e6c792d6b65792d646f2d6e6f742d7573652d696e2d70726f6421'),
  /**
   * Keys of the payload codec that encrypts workflow payloads (buyer data in Temporal histories, config/payload-codec.ts):
   * `<id>:<base64 32-byte key>` pairs, comma separated. New payloads use PAYLOAD_CODEC_ACTIVE_KEY; each payload names
   * its key id, so a retired key stays listed while retained histories use it. Dev default is public on purpose.
   */
  PAYLOAD_CODEC_KEYS: z.string().default('dev-1:ZGV2LW9ubHktY29kZWMta2V5LW5vdC1mb3ItcHJvZCE='),
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
  /** When set, the API's `GET /metrics` asks for `Authorization: Bearer <METRICS_TOKEN>`; unset, it is open. */
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
  SANDBOX_URL: z.string().url().default('http://127.0.0.1:4010'),
  /** Provider base URLs; unset means the local sandbox (`<SANDBOX_URL>/gateway-a`, …). */
  GATEWAY_A_BASE_URL: z.string().url().optional(),
  GATEWAY_B_BASE_URL: z.string().url().optional(),
  SEATMAP_BASE_URL: z.string().url().optional(),
  /** Provider credentials. The defaults are the sandbox's public dev values (sandbox/config.ts), never real ones. */
  GATEWAY_A_ACCESS_TOKEN: z.string().default('TEST-4010000000000000-000000-sandbox-access-token-dev'),
  GATEWAY_A_PUBLIC_KEY: z.string().default('TEST-sandbox-public-key-dev'),
  GATEWAY_A_WEBHOOK_SECRET: z.string().default('dev-gateway-a-webhook-secret'),
  GATEWAY_B_API_KEY: z.string().default('dev-gateway-b-api-key'),
  GATEWAY_B_SECRET_KEY: z.string().default('dev-gateway-b-secret-key'),
  GATEWAY_B_RENDER_MODE: z.string().default('embedded'),
  /**
   * Where browsers load gateway B's button script on the storefront's hosted payment page. Unset: the gateway's own
   * library when GATEWAY_B_BASE_URL names the real gateway, else the sandbox's stand-in under the gateway B base URL.
   */
  GATEWAY_B_BUTTON_SCRIPT_URL: z.string().url().optional(),
  SEATMAP_SECRET_KEY: z.string().default('dev-seatmap-secret-key'),
  SMTP_HOST: z.string().default('127.0.0.1'),
  SMTP_PORT: z.coerce.number().int().default(2525),
  MAIL_FROM: z.string().default('Tickets <tickets@ticketing.local>'),
  /** How long a closed sale keeps listening for a late payment before giving up (it is then resumed on demand). */
  LATE_PAYMENT_GRACE_MS: z.coerce
    .number()
    .int()
    .min(0)
    .default(24 * 60 * 60 * 1000),
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
  /** Membership durations for tests and demos; ignored in production (workflows/membership-definitions.ts defaults). */
  MEMBERSHIP_PERIOD_MS: z.coerce.number().int().min(1000).optional(),
  MEMBERSHIP_SIGNUP_WINDOW_MS: z.coerce.number().int().min(1000).optional(),
  MEMBERSHIP_RENEWAL_NOTICE_MS: z.coerce.number().int().min(0).optional(),
  MEMBERSHIP_REMINDER_INTERVAL_MS: z.coerce.number().int().min(500).optional(),
  MEMBERSHIP_PAYMENT_POLL_MS: z.coerce.number().int().min(500).optional(),
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
  /** Attempts per event (first POST included) and the first backoff; later waits double up to WEBHOOK_RETRY_MAX_MS. */
  WEBHOOK_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(20).default(6),
  WEBHOOK_RETRY_INITIAL_MS: z.coerce.number().int().min(100).default(5_000),
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
   * Slots of that worker: delivery attempts (each may wait WEBHOOK_TIMEOUT_MS on a receiver) and workflow tasks. At
   * least 2 activities: the dispatcher's long poll always holds one.
   */
  WEBHOOK_WORKER_MAX_ACTIVITIES: z.coerce.number().int().min(2).default(20),
  WEBHOOK_WORKER_MAX_WORKFLOW_TASKS: z.coerce.number().int().min(2).default(10),
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
  /** Access token of the provider's API, used only to create that development key. Sandbox values by default. */
  VIDEO_API_TOKEN_ID: z.string().default('dev-video-token-id'),
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

export function loadEnv(source: NodeJS.ProcessEnv = process.env): Env {
  const parsed = EnvSchema.safeParse(source);
  if (parsed.success && parsed.data.NODE_ENV === 'production') {
    const publicSecrets = devDefaultSecretsIn(parsed.data);
    if (publicSecrets.length > 0) {
      throw new Error(
        `Invalid configuration: ${publicSecrets.join(', ')} still ${publicSecrets.length === 1 ? 'has its' : 'have their'} ` +
          'public development default; set real secrets before starting with NODE_ENV=production',
      );
    }
  }
  if (parsed.success && parsed.data.NODE_ENV === 'production' && parsed.data.PAYMENT_WINDOW_OVERRIDE_MS !== undefined) {
    throw new Error(
      'Invalid configuration: PAYMENT_WINDOW_OVERRIDE_MS is for tests and demos and is refused in production',
    );
  }
  if (
    parsed.success &&
    (parsed.data.VIDEO_SIGNING_KEY_ID === undefined) !== (parsed.data.VIDEO_SIGNING_PRIVATE_KEY === undefined)
  ) {
    throw new Error('Invalid configuration: set VIDEO_SIGNING_KEY_ID and VIDEO_SIGNING_PRIVATE_KEY together');
  }
  // A development key lives only in one process's memory and at the sandbox; production signs with a key it owns.
  if (parsed.success && parsed.data.NODE_ENV === 'production' && parsed.data.VIDEO_SIGNING_PRIVATE_KEY === undefined) {
    throw new Error(
      'Invalid configuration: VIDEO_SIGNING_KEY_ID and VIDEO_SIGNING_PRIVATE_KEY are required in production (the key the video provider issued for signed playback)',
    );
  }
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`).join('; ');
    throw new Error(`Invalid configuration: ${problems}`);
  }
  return parsed.data;
}

/** The task queue of webhook deliveries and the dispatcher (TEMPORAL_WEBHOOK_TASK_QUEUE, by default derived). */
export const webhookTaskQueue = (env: Pick<Env, 'TEMPORAL_TASK_QUEUE' | 'TEMPORAL_WEBHOOK_TASK_QUEUE'>): string =>
  env.TEMPORAL_WEBHOOK_TASK_QUEUE ?? `${env.TEMPORAL_TASK_QUEUE}-webhooks`;

/** Where each external provider lives: its configured URL, or the sandbox's stand-in. */
export function providerUrls(env: Env): { gatewayA: string; gatewayB: string; seatMap: string } {
  const sandbox = env.SANDBOX_URL.replace(/\/$/, '');
  return {
    gatewayA: env.GATEWAY_A_BASE_URL ?? `${sandbox}/gateway-a`,
    gatewayB: env.GATEWAY_B_BASE_URL ?? `${sandbox}/gateway-b`,
    seatMap: env.SEATMAP_BASE_URL ?? `${sandbox}/seatmap`,
  };
}
