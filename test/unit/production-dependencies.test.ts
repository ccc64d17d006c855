/**
 * The production image installs `dependencies` only (`npm ci --omit=dev`, Dockerfile stage prod-deps), while every
 * test here runs with the devDependencies installed too: a runtime import of a devDependency would pass every test
 * and crash the image at start. This walks what the image compiles (tsconfig.build.json) and every module it reaches
 * through relative imports, and checks each package it loads at run time.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { ROOT } from '../deployment/compose-file.js';

interface PackageJson {
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
}

const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as PackageJson;
const build = JSON.parse(readFileSync(join(ROOT, 'tsconfig.build.json'), 'utf8')) as { include: string[] };

function sourcesUnder(path: string): string[] {
  if (!existsSync(path)) return [];
  if (statSync(path).isFile()) return path.endsWith('.ts') ? [path] : [];
  return readdirSync(path).flatMap((entry) => sourcesUnder(join(path, entry)));
}

/** Module specifiers a file loads when it runs: static imports and re-exports that are not type-only, and import(). */
function runtimeSpecifiers(source: string): string[] {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');
  const found: string[] = [];
  for (const match of code.matchAll(/^\s*(import|export)\s+(type\s+)?([^'";]*?)\s*from\s*['"]([^'"]+)['"]/gm)) {
    if (match[2]) continue;
    found.push(match[4] as string);
  }
  for (const match of code.matchAll(/^\s*import\s+['"]([^'"]+)['"]/gm)) found.push(match[1] as string);
  for (const match of code.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)) found.push(match[1] as string);
  return found;
}

const packageOf = (specifier: string): string =>
  specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : (specifier.split('/')[0] as string);

test('everything the production image runs loads only production dependencies', () => {
  const queue = build.include.flatMap((entry) => sourcesUnder(join(ROOT, entry)));
  const seen = new Set<string>();
  const loadedBy = new Map<string, string>();
  while (queue.length > 0) {
    const file = queue.pop() as string;
    if (seen.has(file)) continue;
    seen.add(file);
    for (const specifier of runtimeSpecifiers(readFileSync(file, 'utf8'))) {
      if (specifier.startsWith('.')) {
        const target = resolve(dirname(file), specifier.replace(/\.js$/, '.ts'));
        if (existsSync(target)) queue.push(target);
        continue;
      }
      if (specifier.startsWith('node:') || builtinModules.includes(specifier)) continue;
      if (!loadedBy.has(packageOf(specifier))) loadedBy.set(packageOf(specifier), relative(ROOT, file));
    }
  }
  expect(seen.size).toBeGreaterThan(200);
  const notProduction = [...loadedBy]
    .filter(([name]) => !(name in manifest.dependencies))
    .map(([name, file]) => `${name} (loaded by ${file})`);
  expect(notProduction).toEqual([]);
});
