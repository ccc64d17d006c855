/**
 * docs/configuration.md, generated so that it cannot drift from the code: every variable of `config/env.ts` with
 * its type and default read from the zod schema and its meaning read from the doc comment above it (sections from
 * the `// ----- title` separators), then the variables the tooling reads outside that schema (TOOLING below).
 * `npm run docs:config` writes the file; test/unit/configuration-doc.test.ts compares it with what this renders.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { z } from 'zod';
import { devDefaultSecretsIn, EnvSchema } from '../../config/env.js';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const CONFIGURATION_DOC = join(ROOT, 'docs', 'configuration.md');
const ENV_SOURCE = join(ROOT, 'config', 'env.ts');

interface Setting {
  name: string;
  section: string;
  description: string;
}

/** The schema's keys in source order, each with its section and doc comment. */
export function settingsFromSource(source = readFileSync(ENV_SOURCE, 'utf8')): Setting[] {
  const file = ts.createSourceFile(ENV_SOURCE, source, ts.ScriptTarget.Latest, true);
  let object: ts.ObjectLiteralExpression | undefined;
  const visit = (node: ts.Node): void => {
    if (
      ts.isVariableDeclaration(node) &&
      node.name.getText(file) === 'EnvSchema' &&
      node.initializer &&
      ts.isCallExpression(node.initializer) &&
      node.initializer.arguments[0] &&
      ts.isObjectLiteralExpression(node.initializer.arguments[0])
    ) {
      object = node.initializer.arguments[0];
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  if (!object) throw new Error('config/env.ts: no `EnvSchema = z.object({ … })` found');
  const settings: Setting[] = [];
  let section = 'Service and connections';
  for (const property of object.properties) {
    const name = property.name?.getText(file) ?? '';
    const comments = ts.getLeadingCommentRanges(source, property.getFullStart()) ?? [];
    let description = '';
    for (const range of comments) {
      const text = source.slice(range.pos, range.end);
      const separator = /^\/\/\s*-{5,}\s*(.+)$/.exec(text);
      if (separator?.[1]) section = separator[1].trim();
      else if (text.startsWith('/**')) description = docText(text);
    }
    settings.push({ name, section, description });
  }
  return settings;
}

/** A `/** … *\/` comment as one line of markdown. */
const docText = (comment: string): string =>
  comment
    .replace(/^\/\*\*/, '')
    .replace(/\*\/$/, '')
    .split('\n')
    .map((line) => line.replace(/^\s*\*\s?/, '').trim())
    .filter(Boolean)
    .join(' ');

type JsonSchema = {
  type?: string;
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  format?: string;
};

const SAFE_MAX = Number.MAX_SAFE_INTEGER;

function typeText(schema: JsonSchema, defaultValue: unknown): string {
  if (typeof defaultValue === 'boolean') return '`true` or `false`';
  if (schema.enum) return `one of ${schema.enum.map((value) => `\`${String(value)}\``).join(', ')}`;
  if (schema.type === 'integer' || schema.type === 'number') {
    const min = schema.minimum;
    const max = schema.maximum !== undefined && schema.maximum < SAFE_MAX ? schema.maximum : undefined;
    const kind = schema.type === 'integer' ? 'integer' : 'number';
    if (min !== undefined && max !== undefined) return `${kind} ${min}–${max}`;
    if (min !== undefined) return `${kind} ≥ ${min}`;
    return kind;
  }
  if (schema.format === 'uri') return 'URL';
  if (schema.minLength) return `string, at least ${schema.minLength} characters`;
  return 'string';
}

/** 86400000 → "24 h", for the variables whose name says the unit. */
function durationNote(name: string, value: number): string {
  const ms = name.endsWith('_MS') ? value : name.endsWith('_SECONDS') ? value * 1000 : undefined;
  if (ms === undefined || ms < 1000) return '';
  const units: Array<[number, string]> = [
    [24 * 60 * 60_000, 'days'],
    [60 * 60_000, 'h'],
    [60_000, 'min'],
    [1000, 's'],
  ];
  for (const [size, unit] of units) {
    if (ms % size === 0 && ms >= size) {
      const count = ms / size;
      const label = unit === 'days' && count === 1 ? 'day' : unit;
      return ` (${count} ${label})`;
    }
  }
  return '';
}

function defaultText(name: string, value: unknown, publicSecret: boolean): string {
  if (value === undefined) return 'unset';
  if (value === '') return 'empty';
  const shown = `\`${String(value)}\`${typeof value === 'number' ? durationNote(name, value) : ''}`;
  return publicSecret ? `${shown} (public development value: refused in production)` : shown;
}

const cell = (text: string): string => text.replace(/\|/g, '\\|');

interface ToolingVariable {
  name: string;
  default: string;
  meaning: string;
}

/** Variables read outside config/env.ts: by `npm run dev`, `npm test`, the bench, the CLI and the build. */
export const TOOLING: Array<{ title: string; intro: string; variables: ToolingVariable[] }> = [
  {
    title: '`npm run dev` and the Temporal CLI',
    intro: 'Read by `scripts/dev.ts`, `scripts/bootstrap.sh` and `scripts/temporal.sh`.',
    variables: [
      { name: 'API_PORT', default: '`3000`', meaning: 'port of the API (also its setting above)' },
      { name: 'TEMPORAL_PORT', default: '`7233`', meaning: "port of the Temporal dev server's frontend" },
      { name: 'TEMPORAL_UI_PORT', default: '`8233`', meaning: 'port of the Temporal UI' },
      { name: 'SANDBOX_PORT', default: '`4010`', meaning: "port of the sandbox's HTTP providers and control API" },
      { name: 'SANDBOX_SMTP_PORT', default: '`2525`', meaning: "port of the sandbox's SMTP inbox" },
      {
        name: 'DEV_STATE_DIR',
        default: '`.dev`',
        meaning: 'where the dev stack keeps its logs, Temporal database, lock file and `demo.json`',
      },
      {
        name: 'PUBLIC_ORIGIN',
        default: '`http://127.0.0.1:<API_PORT>`',
        meaning: 'origin of the API as browsers reach it (also its setting above)',
      },
      {
        name: 'CODEC_OPERATOR_TOKEN',
        default: 'a random token per run',
        meaning: 'token of the codec endpoint; `npm run dev` prints it and writes it to `.dev/demo.json`',
      },
      {
        name: 'CODEC_CORS_ORIGINS',
        default: 'the Temporal UI on `TEMPORAL_UI_PORT`',
        meaning: 'browser origins allowed to call the codec endpoint (also its setting above)',
      },
      {
        name: 'TEMPORAL_BIN',
        default: '`~/.cache/ticketing/temporal-v1.5.1/temporal`',
        meaning: 'the Temporal CLI binary; built there with `go install` on first use',
      },
      {
        name: 'TEMPORAL_ADDRESS',
        default: '`127.0.0.1:<TEMPORAL_PORT>`',
        meaning: "where `npm run temporal` connects (also the processes' setting above)",
      },
      {
        name: 'TICKETING_SKIP_INSTALL',
        default: 'unset',
        meaning: '`1` skips the `npm ci` check of `npm run dev` and `npm test` when `node_modules` exists',
      },
    ],
  },
  {
    title: '`npm test`',
    intro:
      'Read by `scripts/test.ts` and the test support code ([testing.md](testing.md)). Each run gets its own database, Redis index, Temporal server and ports.',
    variables: [
      {
        name: 'TEST_DATABASE_URL',
        default: '`postgres://postgres@127.0.0.1:5432/ticketing_test_<run>`',
        meaning: "the run's database, created and dropped by the run",
      },
      { name: 'KEEP_TEST_DATABASE', default: 'unset', meaning: 'set: keep the run’s database after it ends' },
      { name: 'TEST_REDIS_URL', default: '`redis://127.0.0.1:6379/<1–15 by pid>`', meaning: "the run's Redis index" },
      { name: 'TEST_LOG_LEVEL', default: '`warn`', meaning: "log level of the run's worker and processes" },
      { name: 'TEST_API_LOG', default: 'unset', meaning: "a pino level: print the in-process API's logs" },
      { name: 'NODE_OPTIONS', default: 'set by the run', meaning: 'jest runs with `--experimental-vm-modules`' },
      {
        name: 'WORKFLOW_BUNDLE_PATH',
        default: 'built once per run',
        meaning: 'the workflow bundle every worker and replay of the run loads (also its setting above)',
      },
      { name: 'CHROMIUM_PATH', default: '`/usr/bin/chromium`', meaning: 'the browser of the PSE browser test' },
      {
        name: 'RECORD_WORKFLOW_HISTORIES',
        default: 'unset',
        meaning: '`1`: replay tests record their scenario histories into `test/replay/histories/`',
      },
      {
        name: 'RECORD_HISTORY_SUFFIX',
        default: 'unset',
        meaning: 'records a scenario again under a new name (a patch name) instead of refusing to overwrite',
      },
      { name: 'FLAKY_GATEWAY_A_FAILURES', default: '`0`', meaning: 'test worker: fail the first N gateway A calls' },
      { name: 'FLAKY_GATEWAY_B_DOWN', default: 'unset', meaning: 'test worker: `true` makes gateway B unreachable' },
      {
        name: 'SIM_CASES',
        default: '`400` (checkout), `200` (membership, event cancellation)',
        meaning: 'cases a simulation explores',
      },
      { name: 'SIM_SEED', default: '`1`', meaning: "the simulation's seed; a failing case prints its own" },
      {
        name: 'SIM_CONCURRENCY',
        default: '`40` (checkout), `30` (membership), `32` (event cancellation)',
        meaning: 'cases run at once',
      },
      { name: 'SIM_LOG_LEVEL', default: 'unset', meaning: "`debug` shows the Temporal runtime's logs" },
      {
        name: 'SIM_FAILURE_DIR',
        default: '`.dev/simulation-failures/` in `npm test`',
        meaning: "where failing cases' histories are written",
      },
      {
        name: 'SIM_KEEP_MARKER',
        default: 'unset',
        meaning: 'a patch id: also write the histories of runs that went through that versioned change',
      },
      {
        name: 'SIM_BLOCKING_OPENS',
        default: 'unset',
        meaning: '`true`: slow payment opens block the whole worker process (the starved-worker run)',
      },
      {
        name: 'SIM_WORKFLOW_TASK_TIMEOUT_MS',
        default: "the run's choice",
        meaning: 'workflow task timeout of the simulation',
      },
      {
        name: 'SIM_SLOW_OPEN_MAX_MS',
        default: "the run's choice",
        meaning: 'longest slow payment open the fault model plays',
      },
      {
        name: 'SIM_LOCAL_CARD_CHARGE',
        default: 'unset',
        meaning: '`1` lets half the checkout cases charge cards as a local activity first (`CARD_CHARGE_LOCAL`)',
      },
      {
        name: 'SIM_MINUTES',
        default: '`0` (no limit)',
        meaning: 'membership and event-cancellation simulations: stop starting cases after this many minutes',
      },
      {
        name: 'SIM_PENDING_SALES',
        default: 'unset',
        meaning: '`0`: the event-cancellation simulation leaves out PENDING sales in real checkouts',
      },
      {
        name: 'SIM_DATABASE_URL',
        default: 'a scratch database per run',
        meaning: 'event-cancellation simulation: a database to recreate and keep instead of a scratch one',
      },
    ],
  },
  {
    title: 'Workflow bundle',
    intro:
      'Read by `worker/build-workflow-bundle.ts`, for comparing bundles in the bench ([benchmarks.md](benchmarks.md)).',
    variables: [
      { name: 'WORKFLOW_STACK_TRACE_LIMIT', default: '`5`', meaning: 'stack-trace depth of the workflow realm' },
      {
        name: 'WORKFLOW_PRELOAD_MODULES',
        default: '`true`',
        meaning: '`false` builds the bundle whose executions each evaluate every workflow module',
      },
    ],
  },
  {
    title: '`npm run bench`',
    intro: 'Read by `bench/` ([benchmarks.md](benchmarks.md), [bench/README.md](../bench/README.md)).',
    variables: [
      {
        name: 'BENCH_DATABASE_URL',
        default: '`postgres://postgres@127.0.0.1:5432/ticketing_bench_test`',
        meaning: "the bench's database",
      },
      {
        name: 'BENCH_REPORTS_DATABASE_URL',
        default: '`postgres://postgres@127.0.0.1:5432/ticketing_reports_bench_test`',
        meaning: "the reports bench's database",
      },
      {
        name: 'BENCH_RECONCILER_DATABASE_URL',
        default: '`postgres://postgres@127.0.0.1:5432/ticketing_reconciler_bench_test`',
        meaning: "the reconciler bench's database",
      },
      { name: 'KEEP_BENCH_DATABASE', default: 'unset', meaning: "set: keep the bench's database after it ends" },
      { name: 'BENCH_REDIS_URL', default: '`redis://127.0.0.1:6379/15`', meaning: "the bench's Redis index" },
      { name: 'BENCH_POOL_MAX', default: '`20`', meaning: 'database pool of each bench process' },
      { name: 'BENCH_LOG_LEVEL', default: '`warn`', meaning: "log level of the bench's processes" },
      { name: 'BENCH_TEMPORAL_SHARDS', default: '`4`', meaning: 'history shards of `--temporal server`' },
      { name: 'BENCH_CPU_PROFILE_DIR', default: 'unset', meaning: 'write CPU profiles of every process there' },
      { name: 'BENCH_PROBE_FILE', default: 'set by the bench', meaning: "where a process's probe writes its figures" },
      {
        name: 'BENCH_NODE_FLAGS_<PROCESS>',
        default: 'unset',
        meaning: 'Node flags of one bench process, e.g. `BENCH_NODE_FLAGS_WORKER`, `BENCH_NODE_FLAGS_API`',
      },
      {
        name: 'TEMPORAL_SERVER_DIR',
        default: '`~/.cache/ticketing/temporal-server-<version>`',
        meaning: 'where `--temporal server` builds the Temporal server',
      },
      {
        name: 'TEMPORAL_UI_DIR',
        default: '`~/.cache/ticketing/temporal-ui-<version>`',
        meaning: 'where it builds the UI server',
      },
    ],
  },
  {
    title: 'Command-line client (`npx ticketing`)',
    intro: 'Read by `cli/` ([api-guide.md](api-guide.md#self-service-sign-up-and-the-command-line-client)).',
    variables: [
      {
        name: 'TICKETING_API_URL',
        default: 'the last login, else `http://127.0.0.1:3000`',
        meaning: "the service's base URL",
      },
      {
        name: 'TICKETING_CONFIG_DIR',
        default: '`$XDG_CONFIG_HOME/ticketing`, else `~/.config/ticketing` (`%APPDATA%\\ticketing` on Windows)',
        meaning: 'where the key is saved (`config.json`, mode 0600)',
      },
    ],
  },
  {
    title: 'OpenTelemetry',
    intro:
      'Read by `observability/tracing.ts` and the OpenTelemetry SDK in the API and the worker ([operations.md](operations.md#traces-and-request-ids)).',
    variables: [
      {
        name: 'OTEL_EXPORTER_OTLP_ENDPOINT',
        default: 'unset',
        meaning: 'set (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`): export traces there by OTLP; unset, no tracing starts',
      },
      {
        name: 'OTEL_EXPORTER_OTLP_PROTOCOL',
        default: '`http/protobuf`',
        meaning: '`http/protobuf` or `http/json` (also `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`)',
      },
      {
        name: 'OTEL_SERVICE_NAME',
        default: '`ticketing-api` / `ticketing-worker`',
        meaning: 'service name of the traces',
      },
      {
        name: 'OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG, OTEL_TRACES_EXPORTER, OTEL_SDK_DISABLED, OTEL_EXPORTER_OTLP_HEADERS, OTEL_BSP_*',
        default: "the SDK's",
        meaning: 'as the OpenTelemetry specification defines them; headers (credentials) are never logged',
      },
    ],
  },
];

/** The reference as markdown, before formatting. */
export function renderConfigurationDoc(): string {
  const settings = settingsFromSource();
  const shape = EnvSchema.shape as Record<string, z.ZodType>;
  const json = z.toJSONSchema(EnvSchema, { io: 'input', unrepresentable: 'any' }) as {
    properties: Record<string, JsonSchema>;
  };
  const publicSecrets = new Set(devDefaultSecretsIn(EnvSchema.parse({})));
  const missing = Object.keys(shape).filter((name) => !settings.some((setting) => setting.name === name));
  if (missing.length) throw new Error(`config/env.ts: keys not found in the source: ${missing.join(', ')}`);
  const undescribed = settings.filter((setting) => !setting.description).map((setting) => setting.name);
  if (undescribed.length) {
    throw new Error(
      `config/env.ts: give each of these a /** … */ comment saying what it is: ${undescribed.join(', ')}`,
    );
  }

  const sections = [...new Set(settings.map((setting) => setting.section))];
  const out: string[] = [
    '# Configuration',
    '',
    '<!-- Generated by `npm run docs:config` from config/env.ts and scripts/support/configuration-doc.ts: edit those, not this file. -->',
    '',
    'Every setting is an environment variable. The API, the worker and the scripts read the ones below through',
    '`config/env.ts` (`loadEnv`), which refuses to start on a value outside its type and names the variable. Every',
    "default is the local dev stack's, so `npm run dev` needs no `.env` file; production overrides them by variable and",
    'refuses to start while a secret still holds its public development value',
    '([operations.md](operations.md#production-secrets)). Deploying: [deployment.md](deployment.md).',
    '',
    '## Contents',
    '',
    ...sections.map((section) => `- [${capitalized(section)}](#${slug(capitalized(section))})`),
    `- [Variables the tooling reads](#${slug('Variables the tooling reads')})`,
    '',
  ];
  for (const section of sections) {
    out.push(`## ${capitalized(section)}`, '', '| variable | default | type | meaning |', '| --- | --- | --- | --- |');
    for (const setting of settings.filter((entry) => entry.section === section)) {
      const schema = shape[setting.name];
      if (!schema) continue;
      const value: unknown = schema.parse(undefined);
      const type = typeText(json.properties[setting.name] ?? {}, value);
      const shown = defaultText(setting.name, value, publicSecrets.has(setting.name));
      out.push(`| \`${setting.name}\` | ${cell(shown)} | ${cell(type)} | ${cell(setting.description)} |`);
    }
    out.push('');
  }
  out.push(
    '## Variables the tooling reads',
    '',
    'Outside `config/env.ts`: the scripts that start stacks, run tests and benchmarks, build the workflow bundle, and the',
    'command-line client. The sandbox documents its own in [sandbox/README.md](../sandbox/README.md).',
    '',
  );
  for (const group of TOOLING) {
    out.push(`### ${group.title}`, '', group.intro, '', '| variable | default | meaning |', '| --- | --- | --- |');
    for (const variable of group.variables) {
      const names = variable.name
        .split(', ')
        .map((name) => `\`${name}\``)
        .join(', ');
      out.push(`| ${names} | ${cell(variable.default)} | ${cell(variable.meaning)} |`);
    }
    out.push('');
  }
  return out.join('\n');
}

const capitalized = (text: string): string => text.charAt(0).toUpperCase() + text.slice(1);

/** GitHub's heading anchor. */
export const slug = (heading: string): string =>
  heading
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');

/** Markdown as biome formats it (tables aligned), so the committed file passes `biome check` unchanged. */
export function formatMarkdown(markdown: string, path = CONFIGURATION_DOC): string {
  const result = spawnSync(join(ROOT, 'node_modules', '.bin', 'biome'), ['format', `--stdin-file-path=${path}`], {
    input: markdown,
    encoding: 'utf8',
    cwd: ROOT,
  });
  if (result.status !== 0) throw new Error(`biome format failed: ${result.stderr}`);
  return result.stdout;
}

/** What docs/configuration.md must hold. */
export const configurationDoc = (): string => formatMarkdown(renderConfigurationDoc());
