/**
 * The API and the worker run with the same V8 heap settings wherever they start (config/node-flags.ts): the scripts
 * that start them take the flags from there; docker-compose.yml, the image's default command and package.json's
 * scripts spell them out, and must spell the same ones.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { nativeEnvFor, nodeFlagsFor, PROCESS_NATIVE_ENV, PROCESS_NODE_FLAGS } from '../../config/node-flags.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');

/**
 * Every `node … --import tsx <entry>` (source) and `node … dist/<entry>.js` (compiled, the production image) command
 * line in a file, as [entry as in the sources, flags before the entry].
 */
function nodeCommands(text: string): Array<{ entry: string; flags: string[] }> {
  const commands: Array<{ entry: string; flags: string[] }> = [];
  for (const match of text.matchAll(
    /"?node"?,? ((?:"?--[\w-]+=?\w*"?,? )*)(?:"?--import"?,? "?tsx"?,? )?"?((?:dist\/)?(?:api|worker)\/main\.[tj]s)/g,
  )) {
    const flags = (match[1] ?? '')
      .split(/[\s,]+/)
      .map((flag) => flag.replaceAll('"', ''))
      .filter(Boolean);
    commands.push({ entry: (match[2] ?? '').replace(/^dist\//, '').replace(/\.js$/, '.ts'), flags });
  }
  return commands;
}

test('the API and the worker have bounded heaps; other processes keep V8 defaults', () => {
  expect(nodeFlagsFor('api/main.ts')).toEqual(PROCESS_NODE_FLAGS.api);
  expect(nodeFlagsFor('worker/main.ts')).toEqual(PROCESS_NODE_FLAGS.worker);
  expect(nodeFlagsFor('sandbox/main.ts')).toEqual([]);
  for (const flags of Object.values(PROCESS_NODE_FLAGS)) {
    expect(flags.some((flag) => flag.startsWith('--max-old-space-size='))).toBe(true);
  }
});

test.each(['docker-compose.yml', 'Dockerfile', 'package.json'])(
  '%s starts the API and the worker with those flags',
  (file) => {
    const commands = nodeCommands(read(file));
    expect(commands.length).toBeGreaterThan(0);
    for (const { entry, flags } of commands)
      expect({ entry, flags }).toEqual({ entry, flags: [...nodeFlagsFor(entry)] });
  },
);

test('docker-compose.yml starts every API and worker service through node with the flags (none bypass them)', () => {
  const compose = read('docker-compose.yml');
  const starts = compose.split('\n').filter((line) => /(api|worker)\/main\.[tj]s/.test(line));
  expect(starts.length).toBe(nodeCommands(compose).length);
  // The dev stack's (TypeScript through tsx) and the production profile's (compiled JavaScript).
  expect(starts.length).toBe(4);
  expect(nodeCommands(compose).filter(({ entry }) => entry === 'worker/main.ts')).toHaveLength(2);
});

test('the API and the worker start with the C allocator settings wherever they start; other processes without', () => {
  expect(nativeEnvFor('api/main.ts')).toEqual(PROCESS_NATIVE_ENV);
  expect(nativeEnvFor('worker/main.ts')).toEqual(PROCESS_NATIVE_ENV);
  expect(nativeEnvFor('sandbox/main.ts')).toEqual({});
  const settings = Object.entries(PROCESS_NATIVE_ENV);
  expect(settings.length).toBeGreaterThan(0);
  // The image's stages that run them (the dev stack's and production's), which docker-compose.yml builds.
  const stages = read('Dockerfile').split(/^FROM /m);
  for (const target of ['sandbox', 'runtime']) {
    const stage = stages.find((text) => new RegExp(`^\\S+ AS ${target}\\b`).test(text)) ?? '';
    for (const [name, value] of settings)
      expect({ target, env: stage.includes(`ENV ${name}=${value}`) }).toEqual({ target, env: true });
  }
  const scripts = JSON.parse(read('package.json')).scripts as Record<string, string>;
  for (const name of ['api', 'worker']) {
    for (const [variable, value] of settings) expect(scripts[name]).toContain(`${variable}=${value} node `);
  }
  for (const file of ['scripts/test.ts', 'scripts/dev.ts', 'bench/lib/stack.ts', 'test/faults/harness.ts']) {
    expect({ file, applied: read(file).includes('...nativeEnvFor(entry)') }).toEqual({ file, applied: true });
  }
});
