/**
 * `npm run docs:config`: writes docs/configuration.md from config/env.ts (scripts/support/configuration-doc.ts).
 * `--check` writes nothing and exits 1 when the committed file differs from what it would write.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { CONFIGURATION_DOC, configurationDoc } from './support/configuration-doc.js';

const expected = configurationDoc();
if (process.argv.includes('--check')) {
  const committed = readFileSync(CONFIGURATION_DOC, 'utf8');
  if (committed !== expected) {
    console.error('docs/configuration.md is out of date: run npm run docs:config');
    process.exit(1);
  }
  console.log('docs/configuration.md is up to date');
} else {
  writeFileSync(CONFIGURATION_DOC, expected);
  console.log('wrote docs/configuration.md');
}
