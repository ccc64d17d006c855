/**
 * package.json overrides the kysely MikroORM pins (0.29.6) with the first release that gives the pool back a
 * connection whose begin, commit or rollback failed (see test/integration/database-connection-loss.test.ts). The
 * override must neither be lost (the leak returns) nor outlive its reason (it would hold MikroORM on an older kysely
 * than the one it asks for after an upgrade).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const FIRST_RELEASE_WITHOUT_THE_LEAK = '0.29.9';
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

const readJson = (path: string): Record<string, unknown> =>
  JSON.parse(readFileSync(`${ROOT}/${path}`, 'utf8')) as Record<string, unknown>;

/** Orders "major.minor.patch" versions numerically (a range's leading ^ or ~ is ignored). */
function compareVersions(left: string, right: string): number {
  const parts = (version: string) =>
    version
      .replace(/^[\^~]/, '')
      .split('.')
      .map(Number);
  const [a, b] = [parts(left), parts(right)];
  for (let index = 0; index < 3; index += 1) {
    const difference = (a[index] ?? 0) - (b[index] ?? 0);
    if (difference !== 0) return difference;
  }
  return 0;
}

test('the installed kysely gives a failed transaction its connection back', () => {
  const installed = String(readJson('node_modules/kysely/package.json').version);
  expect(compareVersions(installed, FIRST_RELEASE_WITHOUT_THE_LEAK)).toBeGreaterThanOrEqual(0);
});

test('the override is still needed: MikroORM itself asks for a kysely with the leak', () => {
  const wanted = (readJson('node_modules/@mikro-orm/sql/package.json').dependencies as Record<string, string>).kysely;
  const override = (readJson('package.json').overrides as Record<string, string> | undefined)?.kysely;
  expect(override).toBe(FIRST_RELEASE_WITHOUT_THE_LEAK);
  // When this fails, MikroORM ships a fixed kysely: drop the override from package.json and this test.
  expect(compareVersions(String(wanted), FIRST_RELEASE_WITHOUT_THE_LEAK)).toBeLessThan(0);
});

test('versions compare numerically', () => {
  expect(compareVersions('0.29.10', '0.29.9')).toBeGreaterThan(0);
  expect(compareVersions('^0.29.6', '0.29.9')).toBeLessThan(0);
  expect(compareVersions('0.30.0', '0.29.9')).toBeGreaterThan(0);
  expect(compareVersions('0.29.9', '0.29.9')).toBe(0);
});
