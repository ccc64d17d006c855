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
  // Most suites wait on timers, gateways and workflows more than they compute: a third worker overlaps those waits
  // (the jest phase took 432 s with two and 320 s with three on the 2-core box).
  maxWorkers: 3,
};
