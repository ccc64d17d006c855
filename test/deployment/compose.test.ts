/**
 * docker-compose.yml, linted without a Docker engine: it validates against the compose specification's JSON schema,
 * and its production profile has the shape of a deployment on its own (issue 33): no dev service beside it, health
 * checks and restart policies everywhere, readiness gates, secrets from files, nothing published that should not be,
 * compiled JavaScript from the runtime image, and a configuration the production refusals accept.
 */
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv2020 as Ajv } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { loadEnv } from '../../config/env.js';
import { type ComposeService, composeSpecSchema, ROOT, readCompose, readEnvFile, servicesOf } from './compose-file.js';

const compose = readCompose();
const production = servicesOf(compose, 'production');
const monitoring = servicesOf(compose, 'monitoring');
const dev = servicesOf(compose, 'dev');

/** One-shot jobs: the others wait for their successful exit, not for a health check. */
const isOneShot = (name: string) => ['migrate', 'seed', 'migrate-production'].includes(name);

describe('the compose specification', () => {
  test('docker-compose.yml validates against the official compose-spec JSON schema', () => {
    const ajv = new Ajv({ strict: false, allErrors: true });
    addFormats.default(ajv);
    const validate = ajv.compile(composeSpecSchema());
    const valid = validate(compose);
    expect(validate.errors ?? []).toEqual([]);
    expect(valid).toBe(true);
  });

  test('the schema check catches a mistake (a misspelt key, a bad condition)', () => {
    const ajv = new Ajv({ strict: false });
    addFormats.default(ajv);
    const validate = ajv.compile(composeSpecSchema());
    const broken = structuredClone(compose) as unknown as { services: Record<string, Record<string, unknown>> };
    (broken.services['api-production'] ?? {}).healthchek = { test: ['CMD', 'true'] };
    expect(validate(broken)).toBe(false);
    const badCondition = structuredClone(compose) as unknown as { services: Record<string, Record<string, unknown>> };
    (badCondition.services['api-production'] ?? {}).depends_on = {
      'worker-production': { condition: 'service_ready' },
    };
    expect(validate(badCondition)).toBe(false);
  });
});

describe('profiles', () => {
  test('every service belongs to exactly one profile, so `--profile production up` starts no dev service', () => {
    for (const [name, service] of Object.entries(compose.services)) {
      expect({ name, profiles: service.profiles?.length }).toEqual({ name, profiles: 1 });
    }
    expect(Object.keys(production).length).toBeGreaterThan(0);
    expect(Object.keys(dev).length).toBeGreaterThan(0);
  });

  test('`docker compose up` alone still starts the dev stack: .env selects the dev profile', () => {
    expect(readEnvFile(join(ROOT, '.env'))).toEqual({ COMPOSE_PROFILES: 'dev' });
  });

  test('the dev stack publishes on loopback only, and its long-running services have health checks', () => {
    for (const [name, service] of Object.entries(dev)) {
      for (const port of service.ports ?? []) {
        expect({ name, port }).toEqual({ name, port: expect.stringMatching(/^127\.0\.0\.1:/) });
      }
      if (!isOneShot(name))
        expect({ name, check: (service.healthcheck?.test?.length ?? 0) > 0 }).toEqual({ name, check: true });
    }
  });

  test('production and monitoring services depend only on production services', () => {
    for (const [name, service] of Object.entries({ ...production, ...monitoring })) {
      for (const dependency of Object.keys(service.depends_on ?? {})) {
        expect({ name, dependency, profile: compose.services[dependency]?.profiles }).toEqual({
          name,
          dependency,
          profile: compose.services[name]?.profiles,
        });
      }
    }
  });

  test("no production service names a dev service's host (the shared database, Redis, Temporal or the sandbox)", () => {
    const devHosts = Object.keys(dev);
    for (const [name, service] of Object.entries(production)) {
      for (const [key, value] of Object.entries(service.environment ?? {})) {
        const hosts = [...String(value).matchAll(/\/\/(?:[^@/]*@)?([a-z0-9-]+)[:/]|^([a-z0-9-]+):\d+$/g)].map(
          (match) => match[1] ?? match[2],
        );
        for (const host of hosts)
          expect({ name, key, host, dev: devHosts.includes(host ?? '') }).toMatchObject({ dev: false });
      }
    }
  });
});

describe('the production profile', () => {
  const longRunning = Object.entries({ ...production, ...monitoring }).filter(([name]) => !isOneShot(name));

  test('has its own PostgreSQL for the app and for Temporal, its own Redis, the Temporal server and UI, the API and N workers', () => {
    expect(Object.keys(production).sort()).toEqual(
      [
        'api-production',
        'migrate-production',
        'postgres-production',
        'redis-production',
        'temporal-postgres',
        'temporal-server',
        'temporal-ui-production',
        'worker-production',
        'worker-production-next',
      ].sort(),
    );
    expect(production['temporal-server']?.environment).toMatchObject({
      POSTGRES_HOST: 'temporal-postgres',
      TEMPORAL_DB: 'temporal',
      TEMPORAL_VISIBILITY_DB: 'temporal_visibility',
    });
    expect(production['worker-production']?.deploy?.replicas).toBe('2');
    expect(readCompose({ WORKER_REPLICAS: '5' }).services['worker-production']?.deploy?.replicas).toBe('5');
  });

  test('every long-running service has a health check and a restart policy', () => {
    for (const [name, service] of longRunning) {
      expect({
        name,
        check: (service.healthcheck?.test?.length ?? 0) > 0,
        disabled: service.healthcheck?.disable,
      }).toEqual({
        name,
        check: true,
        disabled: undefined,
      });
      expect({ name, restart: service.restart }).toMatchObject({
        restart: expect.stringMatching(/^(always|unless-stopped)$/),
      });
    }
  });

  test('services start once what they need is healthy (or, for migrations, done)', () => {
    for (const [name, service] of Object.entries({ ...production, ...monitoring })) {
      for (const [dependency, { condition }] of Object.entries(service.depends_on ?? {})) {
        expect({ name, dependency, condition }).toEqual({
          name,
          dependency,
          condition: isOneShot(dependency) ? 'service_completed_successfully' : 'service_healthy',
        });
      }
    }
    // Ready needs a worker polling the task queue (api/routes/health.ts): the API waits for a healthy worker.
    expect(production['api-production']?.depends_on?.['worker-production']?.condition).toBe('service_healthy');
  });

  test('nothing is published but the API; the Temporal UI and monitoring only on loopback', () => {
    for (const [name, service] of Object.entries({ ...production, ...monitoring })) {
      for (const port of service.ports ?? []) {
        if (name === 'api-production') continue;
        expect({ name, port }).toEqual({ name, port: expect.stringMatching(/^127\.0\.0\.1:/) });
      }
    }
    for (const name of [
      'postgres-production',
      'temporal-postgres',
      'redis-production',
      'temporal-server',
      'worker-production',
    ]) {
      expect({ name, ports: production[name]?.ports }).toEqual({ name, ports: undefined });
    }
  });

  test('Redis asks for a password, read from its secret file', () => {
    const redis = production['redis-production'];
    expect(redis?.command?.join(' ')).toMatch(/--requirepass "\$\(cat \/run\/secrets\/redis_password\)"/);
    expect(redis?.secrets).toContain('redis_password');
  });

  test('the API and the workers run compiled JavaScript from the runtime image, in production mode', () => {
    for (const name of ['api-production', 'worker-production', 'migrate-production']) {
      const service = production[name] as ComposeService;
      expect({ name, build: service.build }).toEqual({ name, build: { context: '.', target: 'runtime' } });
      expect(service.command?.at(-1) === 'up' ? service.command.at(-2) : service.command?.at(-1)).toMatch(
        /^dist\/.+\.js$/,
      );
      expect(service.command).not.toContain('tsx');
      expect(service.environment?.NODE_ENV).toBe('production');
    }
    const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
    expect(dockerfile).toMatch(/FROM node:24-bookworm-slim AS runtime/);
    expect(dockerfile).toMatch(/HEALTHCHECK[\s\S]*\/health\/ready/);
  });

  test('Worker Versioning is on: each release polls as build id RELEASE, the next release beside it with none by default', () => {
    const released = readCompose({ RELEASE: 'v1', NEXT_RELEASE: 'v2', NEXT_WORKER_REPLICAS: '2' });
    const services = servicesOf(released, 'production');
    for (const name of ['api-production', 'worker-production', 'migrate-production']) {
      expect({ name, env: services[name]?.environment }).toMatchObject({
        name,
        env: { WORKER_VERSIONING: 'true', TEMPORAL_BUILD_ID: 'v1' },
      });
      expect({ name, image: services[name]?.image }).toEqual({ name, image: 'ticketing:v1' });
    }
    const next = services['worker-production-next'];
    expect(next).toMatchObject({
      image: 'ticketing:v2',
      command: services['worker-production']?.command,
      environment: { WORKER_VERSIONING: 'true', TEMPORAL_BUILD_ID: 'v2' },
      deploy: { replicas: '2' },
    });
    expect(production['worker-production-next']?.deploy?.replicas).toBe('0');
    // Without RELEASE the build id is empty, and a production process refuses it (test/unit/production-config.test.ts).
    expect(production['worker-production']?.environment?.TEMPORAL_BUILD_ID).toBe('');
  });

  test("what the operator sets in deploy/production.env is never replaced by a service's `environment:`", () => {
    // Compose gives `environment:` precedence over `env_file:`: a key in both silently drops the operator's value.
    const operatorKeys = Object.keys(readEnvFile(join(ROOT, 'deploy', 'production.env.example')));
    for (const [name, service] of Object.entries(production)) {
      if (!service.env_file?.some((file) => file.path === './deploy/production.env')) continue;
      const replaced = operatorKeys.filter((key) => key in (service.environment ?? {}));
      expect({ name, replaced }).toEqual({ name, replaced: [] });
    }
    // The Temporal UI reads the same file for PUBLIC_ORIGIN (its codec endpoint is <PUBLIC_ORIGIN>/codec).
    expect(production['temporal-ui-production']?.env_file).toEqual([
      { path: './deploy/production.env', required: false },
    ]);
    expect(readFileSync(join(ROOT, 'ops', 'temporal', 'entrypoint.sh'), 'utf8')).toMatch(
      /endpoint: "\$\{TEMPORAL_CODEC_ENDPOINT:-\$\{PUBLIC_ORIGIN:\+\$\{PUBLIC_ORIGIN%\/\}\/codec\}\}"/,
    );
  });

  test('secrets come from files: each *_FILE is a secret the service mounts and the file declares', () => {
    for (const [name, service] of Object.entries(production)) {
      for (const [key, value] of Object.entries(service.environment ?? {})) {
        if (!key.endsWith('_FILE')) continue;
        const secret = /^\/run\/secrets\/([a-z_]+)$/.exec(value)?.[1];
        expect({ name, key, mounted: service.secrets?.includes(secret ?? '') }).toEqual({ name, key, mounted: true });
        expect(compose.secrets[secret ?? '']?.file).toBe(`./deploy/secrets/${secret}`);
      }
      // No secret inline: a password, token or key is a *_FILE (PAYLOAD_CODEC_ACTIVE_KEY is a key id, not a key).
      const inline = Object.keys(service.environment ?? {}).filter(
        (key) =>
          /PASSWORD|SECRET|TOKEN|_KEY$|_KEYS$/.test(key) &&
          !key.endsWith('_FILE') &&
          key !== 'PAYLOAD_CODEC_ACTIVE_KEY',
      );
      expect({ name, inline }).toEqual({ name, inline: [] });
    }
  });

  test('with the example env file and real secret files, the API and worker configuration passes every production refusal', () => {
    const work = mkdtempSync(join(tmpdir(), 'compose-production-'));
    try {
      const secretValues: Record<string, string> = {
        postgres_password: 'pg-password',
        redis_password: 'redis-password',
        secrets_encryption_key: 'b2'.repeat(32),
        payload_codec_keys: `prod-1:${Buffer.alloc(32, 9).toString('base64')}`,
        codec_operator_token: 'c'.repeat(48),
        metrics_token: 'm'.repeat(48),
        gateway_a_access_token: 'APP_USR-real',
        gateway_a_webhook_secret: 'real-webhook-secret',
        gateway_b_api_key: 'real-identity-key',
        gateway_b_secret_key: 'real-secret-key',
        seatmap_secret_key: 'real-seatmap-key',
        video_signing_private_key: generateKeyPairSync('rsa', { modulusLength: 2048 })
          .privateKey.export({ type: 'pkcs8', format: 'pem' })
          .toString(),
        smtp_password: 'relay-password',
      };
      for (const [name, value] of Object.entries(secretValues)) writeFileSync(join(work, name), `${value}\n`);
      const example = readEnvFile(join(ROOT, 'deploy', 'production.env.example'));
      // A release (RELEASE): without one, versioned production processes refuse to start (tested beside).
      const released = servicesOf(readCompose({ RELEASE: 'v1' }), 'production');
      for (const name of ['api-production', 'worker-production']) {
        const environment = Object.fromEntries(
          Object.entries(released[name]?.environment ?? {}).map(([key, value]) => [
            key,
            value.replace(/^\/run\/secrets\//, `${work}/`),
          ]),
        );
        // Compose gives `environment:` precedence over `env_file:`.
        const env = loadEnv({ ...example, ...environment });
        expect(env.NODE_ENV).toBe('production');
        expect(decodeURIComponent(new URL(env.DATABASE_URL).password)).toBe('pg-password');
        expect(env.METRICS_TOKEN).toBe('m'.repeat(48));
        expect(env.SMTP_TLS).toBe('starttls');
        // What the operator set reaches the process: no `environment:` entry replaces it.
        expect(env.PUBLIC_ORIGIN).toBe(example.PUBLIC_ORIGIN);
        expect(env.PAYLOAD_CODEC_ACTIVE_KEY).toBe(example.PAYLOAD_CODEC_ACTIVE_KEY);
        expect(env.CODEC_CORS_ORIGINS).toBe(example.CODEC_CORS_ORIGINS);
      }
      // Without the example's providers, the same services refuse to start.
      expect(() =>
        loadEnv(
          Object.fromEntries(
            Object.entries(released['api-production']?.environment ?? {}).map(([key, value]) => [
              key,
              value.replace(/^\/run\/secrets\//, `${work}/`),
            ]),
          ),
        ),
      ).toThrow(/point at the sandbox/);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });
});
