/**
 * What a production process refuses beyond the public dev secrets (test/unit/production-secrets.test.ts): provider
 * URLs that are the sandbox's, metrics open to anyone, mail in clear text; and the settings a deployment needs:
 * secrets read from files (`<NAME>_FILE`), passwords kept apart from their URLs, Temporal over TLS, mTLS or an API key.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadEnv } from '../../config/env.js';
import { temporalConnectionOptions } from '../../config/temporal.js';
import { startWorkerMetricsServer } from '../../observability/worker-metrics.js';
import { mailClientOptions } from '../../worker/providers.js';
import { REAL_SECRETS } from '../support/production-env.js';

/** A production configuration that loads: real secrets, real provider URLs, everything on loopback. */
const PRODUCTION: Record<string, string> = { NODE_ENV: 'production', ...REAL_SECRETS };

let work: string;
beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'production-config-'));
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

const secretFile = (name: string, content: string): string => {
  const path = join(work, name);
  writeFileSync(path, content);
  return path;
};

describe('the baseline', () => {
  test('a production configuration with real secrets and providers on private listeners loads', () => {
    expect(loadEnv(PRODUCTION).NODE_ENV).toBe('production');
  });
});

describe('secrets from files (<NAME>_FILE)', () => {
  test('a secret is read from its file, without the trailing newline', () => {
    const { GATEWAY_B_SECRET_KEY: _inline, ...rest } = PRODUCTION;
    const env = loadEnv({ ...rest, GATEWAY_B_SECRET_KEY_FILE: secretFile('gateway-b', 'from-a-file\n') });
    expect(env.GATEWAY_B_SECRET_KEY).toBe('from-a-file');
  });

  test('a multi-line PEM keeps its lines', () => {
    const { VIDEO_SIGNING_PRIVATE_KEY: pem = '', ...rest } = PRODUCTION;
    const env = loadEnv({ ...rest, VIDEO_SIGNING_PRIVATE_KEY_FILE: secretFile('video.pem', pem) });
    expect(env.VIDEO_SIGNING_PRIVATE_KEY).toBe(pem.replace(/\n$/, ''));
  });

  test('a file holding a public dev default is still refused', () => {
    const { SEATMAP_SECRET_KEY: _inline, ...rest } = PRODUCTION;
    expect(() =>
      loadEnv({ ...rest, SEATMAP_SECRET_KEY_FILE: secretFile('seatmap', 'dev-seatmap-secret-key\n') }),
    ).toThrow(/SEATMAP_SECRET_KEY still has its public development default/);
  });

  test('setting a variable and its _FILE both is refused, naming it', () => {
    expect(() => loadEnv({ ...PRODUCTION, GATEWAY_B_SECRET_KEY_FILE: secretFile('twice', 'other') })).toThrow(
      /GATEWAY_B_SECRET_KEY and GATEWAY_B_SECRET_KEY_FILE are both set/,
    );
  });

  test('an unreadable file is refused, naming the variable and the file', () => {
    const missing = join(work, 'no-such-secret');
    expect(() => loadEnv({ NODE_ENV: 'development', METRICS_TOKEN_FILE: missing })).toThrow(
      new RegExp(`METRICS_TOKEN_FILE: cannot read ${missing} \\(ENOENT\\)`),
    );
  });

  test('database and Redis passwords given apart (from files) go into their URLs', () => {
    const env = loadEnv({
      ...PRODUCTION,
      DATABASE_URL: 'postgres://ticketing@db:5432/ticketing',
      DATABASE_PASSWORD_FILE: secretFile('db-password', 'p@ss/word\n'),
      REDIS_URL: 'redis://redis:6379/0',
      REDIS_PASSWORD_FILE: secretFile('redis-password', 'redis-secret\n'),
    });
    expect(new URL(env.DATABASE_URL).username).toBe('ticketing');
    expect(decodeURIComponent(new URL(env.DATABASE_URL).password)).toBe('p@ss/word');
    expect(decodeURIComponent(new URL(env.REDIS_URL).password)).toBe('redis-secret');
    expect(new URL(env.REDIS_URL).pathname).toBe('/0');
  });
});

describe('sandbox providers', () => {
  test('production refuses providers left on the sandbox, naming each', () => {
    const { GATEWAY_B_BASE_URL: _unset, ...rest } = PRODUCTION;
    expect(() => loadEnv({ ...rest, SEATMAP_BASE_URL: 'http://127.0.0.1:4010/seatmap' })).toThrow(
      /GATEWAY_B_BASE_URL, SEATMAP_BASE_URL point at the sandbox/,
    );
  });

  test("a sandbox-hosted button script is refused too; the sandbox's own URL does not hide it", () => {
    expect(() =>
      loadEnv({
        ...PRODUCTION,
        SANDBOX_URL: 'http://sandbox:4010',
        GATEWAY_B_BUTTON_SCRIPT_URL: 'http://sandbox:4010/gateway-b/library/boldPaymentButton.js',
      }),
    ).toThrow(/GATEWAY_B_BUTTON_SCRIPT_URL point at the sandbox/);
  });

  test('ALLOW_SANDBOX_PROVIDERS=true lets a production rehearsal run against the sandbox', () => {
    const { GATEWAY_A_BASE_URL: _a, GATEWAY_B_BASE_URL: _b, SEATMAP_BASE_URL: _s, ...rest } = PRODUCTION;
    expect(() => loadEnv(rest)).toThrow(/point at the sandbox/);
    expect(loadEnv({ ...rest, ALLOW_SANDBOX_PROVIDERS: 'true' }).ALLOW_SANDBOX_PROVIDERS).toBe(true);
  });

  test('development keeps the sandbox by default', () => {
    expect(() => loadEnv({ NODE_ENV: 'development' })).not.toThrow();
  });
});

describe('PUBLIC_ORIGIN', () => {
  test('production refuses an origin the gateways and buyers cannot reach: unset (loopback), private, or plain http', () => {
    const { PUBLIC_ORIGIN: _set, ...unset } = PRODUCTION;
    expect(() => loadEnv(unset)).toThrow(/PUBLIC_ORIGIN=http:\/\/127\.0\.0\.1:3000 is a loopback or private address/);
    expect(() => loadEnv({ ...PRODUCTION, PUBLIC_ORIGIN: 'https://10.2.0.7' })).toThrow(
      /is a loopback or private address/,
    );
    expect(() => loadEnv({ ...PRODUCTION, PUBLIC_ORIGIN: 'http://tickets.example.com' })).toThrow(/is not https/);
  });

  test('a rehearsal against the sandbox may run on one machine; development keeps its loopback default', () => {
    expect(
      loadEnv({ ...PRODUCTION, PUBLIC_ORIGIN: 'http://127.0.0.1:3100', ALLOW_SANDBOX_PROVIDERS: 'true' }).PUBLIC_ORIGIN,
    ).toBe('http://127.0.0.1:3100');
    expect(loadEnv({ NODE_ENV: 'development' }).PUBLIC_ORIGIN).toBe('http://127.0.0.1:3000');
  });
});

describe('Worker Versioning', () => {
  test('production refuses versioned workers without an explicit build id: releases would share the default', () => {
    expect(() => loadEnv({ ...PRODUCTION, WORKER_VERSIONING: 'true' })).toThrow(
      /WORKER_VERSIONING=true needs TEMPORAL_BUILD_ID/,
    );
    expect(() => loadEnv({ ...PRODUCTION, WORKER_VERSIONING: 'true', TEMPORAL_BUILD_ID: '' })).toThrow(
      /needs TEMPORAL_BUILD_ID/,
    );
    expect(loadEnv({ ...PRODUCTION, WORKER_VERSIONING: 'true', TEMPORAL_BUILD_ID: 'v7' }).TEMPORAL_BUILD_ID).toBe('v7');
    // Unversioned, or in development, the package version stands in (an empty value counts as unset).
    expect(loadEnv(PRODUCTION).TEMPORAL_BUILD_ID).toBe(
      loadEnv({ NODE_ENV: 'development', TEMPORAL_BUILD_ID: '' }).TEMPORAL_BUILD_ID,
    );
  });
});

describe('metrics', () => {
  test('production refuses /metrics without a token on a public API listener', () => {
    expect(() => loadEnv({ ...PRODUCTION, API_HOST: '0.0.0.0' })).toThrow(
      /metrics would be open to anyone on API_HOST=0\.0\.0\.0; set METRICS_TOKEN/,
    );
  });

  test('and on a public worker metrics listener, unless that port is off', () => {
    expect(() => loadEnv({ ...PRODUCTION, WORKER_METRICS_HOST: '0.0.0.0' })).toThrow(/WORKER_METRICS_HOST=0\.0\.0\.0/);
    expect(() => loadEnv({ ...PRODUCTION, WORKER_METRICS_HOST: '0.0.0.0', WORKER_METRICS_PORT: '0' })).not.toThrow();
  });

  test('a token, or a private listener, is enough', () => {
    const token = 'm'.repeat(32);
    expect(
      loadEnv({ ...PRODUCTION, API_HOST: '0.0.0.0', WORKER_METRICS_HOST: '::', METRICS_TOKEN: token }),
    ).toBeTruthy();
    for (const host of ['127.0.0.1', '10.0.3.4', '172.20.0.2', '192.168.1.9', 'fd00::1', '::1']) {
      expect(() => loadEnv({ ...PRODUCTION, API_HOST: host, WORKER_METRICS_HOST: host })).not.toThrow();
    }
    for (const host of ['172.32.0.1', '8.8.8.8', 'api.example.com']) {
      expect(() => loadEnv({ ...PRODUCTION, API_HOST: host })).toThrow(/metrics would be open/);
    }
  });

  test("the Temporal SDK's exporter has no token: only a private interface is accepted", () => {
    expect(() =>
      loadEnv({ ...PRODUCTION, METRICS_TOKEN: 'm'.repeat(32), TEMPORAL_METRICS_BIND_ADDRESS: '0.0.0.0:9465' }),
    ).toThrow(/TEMPORAL_METRICS_BIND_ADDRESS=0\.0\.0\.0:9465/);
  });

  test("the worker's /metrics asks for the token; its /health does not", async () => {
    let up = false;
    const server = await startWorkerMetricsServer({
      host: '127.0.0.1',
      port: 0,
      sdkBindAddress: '',
      onError: () => undefined,
      token: 's'.repeat(32),
      healthy: () => up,
    });
    if (!server) throw new Error('the metrics server did not start');
    try {
      const base = `http://127.0.0.1:${server.port}`;
      expect((await fetch(`${base}/metrics`)).status).toBe(401);
      expect((await fetch(`${base}/metrics`, { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
      const scraped = await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${'s'.repeat(32)}` } });
      expect(scraped.status).toBe(200);
      expect(await scraped.text()).toMatch(/^# HELP /m);
      expect((await fetch(`${base}/health`)).status).toBe(503);
      up = true;
      expect((await fetch(`${base}/health`)).status).toBe(200);
    } finally {
      await server.close();
    }
  });
});

describe('mail', () => {
  test('a login without TLS is refused in any mode (the password would travel in clear text)', () => {
    expect(() => loadEnv({ NODE_ENV: 'development', SMTP_USER: 'tickets', SMTP_PASSWORD: 'secret' })).toThrow(
      /SMTP_USER with SMTP_TLS=none would send the mail password in clear text/,
    );
    expect(() => loadEnv({ NODE_ENV: 'development', SMTP_USER: 'tickets' })).toThrow(
      /SMTP_USER and SMTP_PASSWORD together/,
    );
  });

  test('production refuses plain SMTP to a public relay; STARTTLS or implicit TLS load', () => {
    expect(() => loadEnv({ ...PRODUCTION, SMTP_HOST: 'smtp.mail.example' })).toThrow(
      /SMTP_TLS=none to smtp\.mail\.example would send tickets in clear text/,
    );
    for (const mode of ['starttls', 'implicit']) {
      expect(loadEnv({ ...PRODUCTION, SMTP_HOST: 'smtp.mail.example', SMTP_TLS: mode }).SMTP_TLS).toBe(mode);
    }
  });

  test('SMTP_TLS picks the transport: STARTTLS required, implicit TLS, or plain; the login rides along', () => {
    const base = loadEnv({ NODE_ENV: 'development' });
    expect(mailClientOptions({ ...base, SMTP_TLS: 'starttls', SMTP_USER: 'u', SMTP_PASSWORD: 'p' })).toMatchObject({
      secure: false,
      ignoreTls: false,
      requireTls: true,
      auth: { user: 'u', pass: 'p' },
    });
    expect(mailClientOptions({ ...base, SMTP_TLS: 'implicit' })).toMatchObject({ secure: true, requireTls: false });
    expect(mailClientOptions(base)).toMatchObject({ secure: false, ignoreTls: true, requireTls: false });
    expect(mailClientOptions(base).auth).toBeUndefined();
  });
});

describe('Temporal connection', () => {
  const address = { TEMPORAL_ADDRESS: 'ticketing.a1b2c.tmprl.cloud:7233' };

  test('plain by default (the dev server, a private network)', () => {
    expect(temporalConnectionOptions(loadEnv({ NODE_ENV: 'development', ...address }))).toEqual({
      address: address.TEMPORAL_ADDRESS,
    });
  });

  test('an API key (Temporal Cloud) implies TLS', () => {
    const options = temporalConnectionOptions(loadEnv({ ...PRODUCTION, ...address, TEMPORAL_API_KEY: 'cloud-key' }));
    expect(options).toEqual({ address: address.TEMPORAL_ADDRESS, tls: {}, apiKey: 'cloud-key' });
  });

  test('mTLS: the client pair and a private CA, read from files, with the server name override', () => {
    const options = temporalConnectionOptions(
      loadEnv({
        ...PRODUCTION,
        ...address,
        TEMPORAL_TLS_CA_CERT_FILE: secretFile('ca.pem', 'CA PEM\n'),
        TEMPORAL_TLS_CLIENT_CERT_FILE: secretFile('client.pem', 'CLIENT CERT\n'),
        TEMPORAL_TLS_CLIENT_KEY_FILE: secretFile('client.key', 'CLIENT KEY\n'),
        TEMPORAL_TLS_SERVER_NAME: 'temporal.internal',
      }),
    );
    expect(options.tls?.serverNameOverride).toBe('temporal.internal');
    expect(Buffer.from(options.tls?.serverRootCACertificate ?? []).toString()).toBe('CA PEM');
    expect(Buffer.from(options.tls?.clientCertPair?.crt ?? []).toString()).toBe('CLIENT CERT');
    expect(Buffer.from(options.tls?.clientCertPair?.key ?? []).toString()).toBe('CLIENT KEY');
    expect(options.apiKey).toBeUndefined();
  });

  test('TEMPORAL_TLS=true alone checks the server against the system CAs', () => {
    expect(temporalConnectionOptions(loadEnv({ NODE_ENV: 'development', TEMPORAL_TLS: 'true' })).tls).toEqual({});
  });

  test('half a client pair is refused', () => {
    expect(() => loadEnv({ NODE_ENV: 'development', TEMPORAL_TLS_CLIENT_CERT: 'CERT' })).toThrow(
      /TEMPORAL_TLS_CLIENT_CERT and TEMPORAL_TLS_CLIENT_KEY together/,
    );
  });
});
