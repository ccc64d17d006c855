/**
 * A production process refuses the secrets whose defaults are public (they ship in this repository for the sandbox),
 * naming each one it still holds, and starts once every one is set.
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { loadEnv } from '../../config/env.js';
import { REAL_SECRETS } from '../support/production-env.js';

describe('production refuses public development secrets', () => {
  test('every dev-default secret is named in the refusal', () => {
    expect(() => loadEnv({ NODE_ENV: 'production' })).toThrow(
      /SECRETS_ENCRYPTION_KEY, PAYLOAD_CODEC_KEYS, GATEWAY_A_ACCESS_TOKEN, GATEWAY_A_WEBHOOK_SECRET, GATEWAY_B_API_KEY, GATEWAY_B_SECRET_KEY, SEATMAP_SECRET_KEY still have their public development default/,
    );
  });

  test('one leftover dev secret is enough to refuse, and it alone is named', () => {
    const { GATEWAY_B_SECRET_KEY: _kept, ...others } = REAL_SECRETS;
    expect(() => loadEnv({ NODE_ENV: 'production', ...others })).toThrow(
      /Invalid configuration: GATEWAY_B_SECRET_KEY still has its public development default/,
    );
  });

  test('with real secrets production loads; development and test keep the defaults', () => {
    expect(loadEnv({ NODE_ENV: 'production', ...REAL_SECRETS }).NODE_ENV).toBe('production');
    expect(loadEnv({ NODE_ENV: 'development' }).GATEWAY_B_SECRET_KEY).toBe('dev-gateway-b-secret-key');
  });

  test('the API process itself refuses to start, naming the variable', () => {
    const { SEATMAP_SECRET_KEY: _kept, ...others } = REAL_SECRETS;
    const root = fileURLToPath(new URL('../..', import.meta.url));
    const started = spawnSync(process.execPath, ['--import', 'tsx', 'api/main.ts'], {
      cwd: root,
      env: { PATH: process.env.PATH, NODE_ENV: 'production', ...others },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(started.status).not.toBe(0);
    expect(started.stderr).toMatch(/SEATMAP_SECRET_KEY still has its public development default/);
  });
});
