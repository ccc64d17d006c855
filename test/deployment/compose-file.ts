/**
 * docker-compose.yml as Compose reads it: YAML with anchors and merge keys, then `${VAR:-default}` interpolation from
 * the given variables (the defaults when unset) and `$$` as a literal `$`. Shared by the compose lint and the smoke
 * test that runs the production profile's processes.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface ComposeService {
  profiles?: string[];
  image?: string;
  build?: string | { context: string; target?: string };
  command?: string[];
  environment?: Record<string, string>;
  env_file?: Array<{ path: string; required?: boolean }>;
  ports?: string[];
  secrets?: string[];
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test?: string[]; disable?: boolean };
  restart?: string;
  deploy?: { replicas?: string | number };
}

export interface ComposeFile {
  services: Record<string, ComposeService>;
  secrets: Record<string, { file: string }>;
  volumes: Record<string, unknown>;
  [extension: `x-${string}`]: unknown;
}

function interpolate(value: unknown, variables: Record<string, string | undefined>): unknown {
  if (typeof value === 'string') {
    return value.replace(
      /\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}/g,
      (match, name?: string, fallback?: string) => {
        if (match === '$$') return '$';
        const set = name === undefined ? undefined : variables[name];
        return set !== undefined && set !== '' ? set : (fallback ?? '');
      },
    );
  }
  if (Array.isArray(value)) return value.map((each) => interpolate(each, variables));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, each]) => [key, interpolate(each, variables)]));
  }
  return value;
}

/** The compose file, its YAML merged and interpolated (by default with no variables set: every default applies). */
export function readCompose(variables: Record<string, string | undefined> = {}): ComposeFile {
  const parsed: unknown = parse(readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8'), { merge: true });
  return interpolate(parsed, variables) as ComposeFile;
}

/** The services of a profile, by name. */
export function servicesOf(compose: ComposeFile, profile: string): Record<string, ComposeService> {
  return Object.fromEntries(
    Object.entries(compose.services).filter(([, service]) => service.profiles?.includes(profile) ?? false),
  );
}

/** KEY=value lines of an env file (comments and blank lines skipped), as Compose reads `env_file`. */
export function readEnvFile(path: string): Record<string, string> {
  const entries: Record<string, string> = {};
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    const match = /^\s*([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line);
    if (match?.[1]) entries[match[1]] = match[2] ?? '';
  }
  return entries;
}

/**
 * The compose specification's JSON schema, from the compose-spec/compose-go Go module (the loader Docker Compose uses,
 * which embeds the official schema): fetched with `go mod download` into the Go module cache on first use, like the
 * Temporal server's modules (scripts/support/temporal-server.ts), so the repository carries no copy of it.
 */
export const COMPOSE_GO_MODULE = 'github.com/compose-spec/compose-go/v2@v2.16.2';

export function composeSpecSchema(): Record<string, unknown> {
  const modules = execFileSync('go', ['env', 'GOMODCACHE'], { encoding: 'utf8' }).trim();
  const file = join(modules, COMPOSE_GO_MODULE, 'schema', 'compose-spec.json');
  if (!existsSync(file)) execFileSync('go', ['mod', 'download', COMPOSE_GO_MODULE], { cwd: '/', stdio: 'ignore' });
  return JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
}
