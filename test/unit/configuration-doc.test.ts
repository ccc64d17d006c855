/**
 * docs/configuration.md cannot drift: it must be exactly what `npm run docs:config` writes from config/env.ts today,
 * and every variable a script, the bench, the CLI or the test stack reads from the environment must be named in it.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { CONFIGURATION_DOC, configurationDoc, ROOT } from '../../scripts/support/configuration-doc.js';

/** Variables of the operating system or the shell, not of this project. */
const SYSTEM = new Set(['USER', 'HOME', 'PATH', 'XDG_CONFIG_HOME', 'APPDATA']);
/** Where the tooling reads variables outside config/env.ts; the sandbox documents its own in sandbox/README.md. */
const TOOLING_DIRS = ['scripts', 'bench', 'cli', 'worker', 'test/support', 'test/simulation', 'test/replay'];

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(join(ROOT, path)).isDirectory()) return entry === 'results' ? [] : sourceFiles(path);
    return /\.(ts|mjs|sh)$/.test(entry) ? [path] : [];
  });
}

describe('docs/configuration.md', () => {
  test('is what npm run docs:config writes from config/env.ts (run it after changing a setting)', () => {
    const committed = readFileSync(CONFIGURATION_DOC, 'utf8');
    expect(committed).toBe(configurationDoc());
  });

  test('names every variable the scripts, the bench, the CLI and the test stack read', () => {
    const doc = readFileSync(CONFIGURATION_DOC, 'utf8');
    const read = new Map<string, string>();
    for (const file of TOOLING_DIRS.flatMap(sourceFiles)) {
      const source = readFileSync(join(ROOT, file), 'utf8');
      const pattern = /process\.env\.([A-Z][A-Z0-9_]+)|\benv\.([A-Z][A-Z0-9_]+)|\$\{([A-Z][A-Z0-9_]+):-/g;
      for (const match of source.matchAll(pattern)) {
        const name = match[1] ?? match[2] ?? match[3];
        if (name && !SYSTEM.has(name) && !read.has(name)) read.set(name, relative(ROOT, join(ROOT, file)));
      }
    }
    expect(read.size).toBeGreaterThan(30);
    const unnamed = [...read]
      .filter(([name]) => !doc.includes(`\`${name}\``))
      .map(([name, file]) => `${name} (${file})`);
    expect(unnamed).toEqual([]);
  });
});
