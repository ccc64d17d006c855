// Jest runs TypeScript as native ESM through SWC; imports keep their `.js` suffix as Node's ESM resolution requires.
/** @type {import('jest').Config} */
export default {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  transform: {
    '^.+\\.ts$': [
      '@swc/jest',
      {
        jsc: { parser: { syntax: 'typescript', decorators: false }, target: 'es2023' },
        module: { type: 'es6' },
        sourceMaps: 'inline',
      },
    ],
  },
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  testMatch: ['<rootDir>/test/**/*.test.ts'],
  // The real stack (Postgres, Redis, Temporal, worker, sandbox) is started by scripts/test.ts around this run.
  testTimeout: 60_000,
  // Two, on the 2-core box: three took the jest phase from 432 s to 320 s, but starved the stack enough that the
  // browser test's page timed out and workflow tasks of the simulation ran past their 10 s timeout.
  maxWorkers: 2,
};
