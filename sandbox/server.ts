import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyBaseLogger } from 'fastify';
import { resolveSecrets, type SandboxSecrets, type SandboxSecretsOverride } from './config.js';
import { registerControl } from './control.js';
import { Faults, type FaultTarget, RateLimits } from './faults.js';
import { GatewayASandbox } from './gateway-a.js';
import { GatewayBSandbox } from './gateway-b.js';
import { Notifier } from './notifier.js';
import { SeatMapSandbox } from './seatmap.js';
import { MailInbox, startSmtp } from './smtp.js';
import { VideoSandbox, videoCredentialsFromEnv } from './video.js';

/**
 * Local stand-ins for the external providers (gateway A, gateway B, the seat-map provider, an SMTP inbox), in one
 * process with in-memory state, plus the control API that drives them. See sandbox/README.md.
 */

export interface StartSandboxOptions {
  /** 0 picks a free port. */
  httpPort: number;
  /** 0 picks a free port. */
  smtpPort: number;
  /** Interface to bind; default 127.0.0.1. */
  host?: string;
  /** Origin browsers use to reach the sandbox (init_point links); default the bound HTTP address. */
  publicUrl?: string;
  /** Where gateway B webhooks go (the API's webhook endpoint); null sends none. Changeable via the control API. */
  gatewayBWebhookUrl?: string | null;
  /** Credentials; anything not given keeps its dev default. */
  secrets?: SandboxSecretsOverride;
  /** Request and delivery logs; silent when omitted. */
  logger?: FastifyBaseLogger;
  /** Delay a `slow` fault adds unless the fault call names one; default 5000 ms. */
  slowDelayMs?: number;
  /** Deadline of one notification delivery attempt; default 5000 ms. */
  notificationTimeoutMs?: number;
  /** Waits before background retries of a failed delivery; default 1 s, 5 s, 15 s. */
  notificationRetryDelaysMs?: number[];
}

export interface SandboxHandle {
  /** e.g. `http://127.0.0.1:4010`. Provider base URLs are `${httpUrl}/gateway-a`, `/gateway-b`, `/seatmap`. */
  httpUrl: string;
  httpPort: number;
  smtpPort: number;
  secrets: SandboxSecrets;
  close(): Promise<void>;
}

const FAULT_PREFIXES: ReadonlyArray<[string, FaultTarget]> = [
  ['/gateway-a/', 'gateway-a'],
  ['/gateway-b/', 'gateway-b'],
  ['/seatmap/', 'seatmap'],
];

export async function startSandbox(options: StartSandboxOptions): Promise<SandboxHandle> {
  const host = options.host ?? '127.0.0.1';
  const secrets = resolveSecrets(options.secrets);
  const app = options.logger ? Fastify({ loggerInstance: options.logger }) : Fastify({ logger: false });
  const log = app.log;

  const faults = new Faults(options.slowDelayMs ?? 5000);
  const rateLimits = new RateLimits();
  const notifier = new Notifier({
    log,
    losing: () => faults.get('notifications').mode === 'down',
    timeoutMs: options.notificationTimeoutMs ?? 5000,
    retryDelaysMs: options.notificationRetryDelaysMs ?? [1000, 5000, 15_000],
  });
  let httpUrl = '';
  const gatewayA = new GatewayASandbox({
    secrets: secrets.gatewayA,
    notifier,
    publicUrl: () => (options.publicUrl ?? httpUrl).replace(/\/+$/, ''),
  });
  const gatewayB = new GatewayBSandbox({
    secrets: secrets.gatewayB,
    notifier,
    webhookUrl: options.gatewayBWebhookUrl ?? null,
  });
  const seatmap = new SeatMapSandbox(secrets.seatmap);
  const video = new VideoSandbox(videoCredentialsFromEnv(process.env));
  const inbox = new MailInbox();
  const startedAt = new Date();
  let smtpPort = 0;

  // HTML forms of the bank page.
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(typeof body === 'string' ? body : body.toString('utf8'))));
  });

  const faultTarget = (url: string): FaultTarget | null =>
    FAULT_PREFIXES.find(([prefix]) => url.startsWith(prefix))?.[1] ?? null;
  app.addHook('onRequest', async (request, reply) => {
    const target = faultTarget(request.url);
    if (target && faults.get(target).mode === 'down') {
      await reply
        .code(503)
        .header('retry-after', '5')
        .send({ message: `${target} is unavailable (sandbox fault)`, error: 'service_unavailable', status: 503 });
      return reply;
    }
    if (target === 'gateway-a' || target === 'gateway-b') {
      const retryAfter = rateLimits.admit(target);
      if (retryAfter !== null) {
        await reply
          .code(429)
          .header('retry-after', String(retryAfter))
          .send({
            message: 'Too many requests',
            error: 'too_many_requests',
            status: 429,
            cause: [{ code: 'too_many_requests', description: 'Too many requests', data: null }],
          });
        return reply;
      }
    }
  });
  // A slow provider lags once it has the whole request, as a real one does: a request whose caller gives up (or
  // dies) while waiting is still carried out, so a refund can happen at the gateway with nobody left to hear of it.
  app.addHook('preHandler', async (request) => {
    const target = faultTarget(request.url);
    if (target) await faults.delay(target);
  });

  gatewayA.register(app);
  gatewayB.register(app);
  seatmap.register(app);
  video.register(app);
  registerControl(app, {
    gatewayA,
    gatewayB,
    seatmap,
    inbox,
    faults,
    rateLimits,
    notifier,
    info: () => ({ httpUrl, smtpPort, startedAt }),
  });

  const stopTimers = (): void => {
    faults.close();
    notifier.close();
    gatewayA.close();
    seatmap.close();
  };

  await app.listen({ port: options.httpPort, host });
  const address = app.server.address() as AddressInfo;
  const urlHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  httpUrl = `http://${urlHost}:${address.port}`;

  let smtp: Awaited<ReturnType<typeof startSmtp>>;
  try {
    smtp = await startSmtp({ port: options.smtpPort, host, inbox, faults, log });
  } catch (error) {
    stopTimers();
    await app.close();
    throw error;
  }
  smtpPort = smtp.port;

  let closing: Promise<void> | null = null;
  return {
    httpUrl,
    httpPort: address.port,
    smtpPort,
    secrets,
    close() {
      closing ??= (async () => {
        stopTimers();
        await Promise.all([app.close(), smtp.close()]);
      })();
      return closing;
    },
  };
}
