/**
 * The `ticketing` commands (commander): login and logout through the device flow, events and sales lists, the sales
 * export. Data goes to stdout (a table, or JSON with `--json`); prompts, progress and errors go to stderr, so
 * `ticketing sales list --json | jq` and `ticketing sales export > sales.csv` stay clean.
 *
 * Exit codes: 0 done; 1 refused or failed, the reason on one line of stderr; 2 the command was typed wrong.
 */
import type { Writable } from 'node:stream';
import { Command, CommanderError, Option } from 'commander';
import ora, { type Ora } from 'ora';
import { z } from 'zod';
import { SALE_STATUSES } from '../domain/sale-state.js';
import { ApiClient, type ApiWarning, CLIENT_VERSION, dataOf, type Fetch, normalizeApiUrl } from './api-client.js';
import { configDirectory, deleteLogin, loadLogin, type StoredLogin, saveLogin } from './config.js';
import { type Clock, type DeviceAuthorization, deviceLogin, LOGIN_SCOPES, revokeKey } from './device-flow.js';
import { CliError, messageOf, NOT_LOGGED_IN, UsageError } from './errors.js';
import { EVENT_COLUMNS, EventsListOptions, listEvents } from './events.js';
import { plural, renderTable } from './output.js';
import { SALE_COLUMNS, type SaleRow, SalesFilterOptions, salePages, salesQuery } from './sales.js';
import { EXPORT_FORMATS, exportSales, fileSink, stdoutSink } from './sales-export.js';
import { terminalSafe } from './text.js';

/** Where a development stack listens (config/env.ts API_PORT and PUBLIC_ORIGIN defaults). */
export const DEFAULT_API_URL = 'http://127.0.0.1:3000';

export interface CliIo {
  stdout: Writable;
  stderr: Writable;
  env: NodeJS.ProcessEnv;
  /** Whether stderr is a terminal: progress spinners only draw there. */
  interactive: boolean;
  fetch?: Fetch;
  clock?: Clock;
}

const MeSchema = z.looseObject({
  name: z.string(),
  email: z.string(),
  activeWorkspaceId: z.string().nullable(),
  workspaces: z.array(z.looseObject({ id: z.string(), name: z.string() })),
});

const LoginOptions = z.object({
  apiUrl: z.string().optional(),
  scope: z.enum(LOGIN_SCOPES),
  workspace: z.string().trim().min(1).max(100).optional(),
});
const GlobalOptions = z.object({
  workspace: z.string().trim().min(1).max(100).optional(),
  strict: z.boolean().optional(),
});
const LogoutOptions = z.object({ local: z.boolean().optional() });
const JsonFlag = z.object({ json: z.boolean().optional() });
const ExportOptions = z.object({ format: z.enum(EXPORT_FORMATS), out: z.string().min(1).optional() });

/** Command options checked like any other input: a zod failure is a usage error naming the option. */
function parseOptions<T extends z.ZodType>(schema: T, values: unknown): z.infer<T> {
  const parsed = schema.safeParse(values);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const option = issue?.path.map((part) => `--${String(part).replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`);
  throw new UsageError(`${option?.join(' ') ?? 'options'}: ${issue?.message ?? 'invalid'}`);
}

export async function run(argv: readonly string[], io: CliIo): Promise<number> {
  const write = (stream: Writable, text: string) => void stream.write(text);
  const say = (text: string) => write(io.stdout, `${text}\n`);
  const tell = (text: string) => write(io.stderr, `${text}\n`);
  const configDir = () => configDirectory({ env: io.env });
  const spinner = (enabled: boolean): Ora =>
    ora({ stream: io.stderr, isSilent: !(enabled && io.interactive), discardStdin: false });

  async function signedIn(command: Command): Promise<ApiClient> {
    const login = await loadLogin(configDir());
    if (!login) throw new CliError(NOT_LOGGED_IN);
    const override = io.env.TICKETING_API_URL;
    // The key belongs to the server that issued it; sending it elsewhere because of a stray variable would leak it.
    if (override && normalizeApiUrl(override) !== normalizeApiUrl(login.apiUrl)) {
      throw new CliError(
        `The stored key is for ${login.apiUrl} but TICKETING_API_URL is ${override}: run \`ticketing login\` to use that server`,
      );
    }
    const { workspace, strict } = parseOptions(GlobalOptions, command.optsWithGlobals());
    return new ApiClient({
      ...login,
      workspace: workspace ?? login.workspace,
      ...(io.fetch ? { fetch: io.fetch } : {}),
      // The service answers with what it could do and says what it ignored (a workspace this key cannot reach is
      // replaced by the default one): data of another workspace must never pass silently for the one asked for.
      onWarning: (warning) => {
        const text = describeWarning(warning);
        if (strict) throw new CliError(`${text}; stopped (--strict), nothing was printed`);
        tell(`warning: ${text} (--strict makes this an error)`);
      },
    });
  }

  function showPrompt(authorization: DeviceAuthorization, expiresIn: string): void {
    tell('To log in, open this page in a browser:');
    tell(`  ${terminalSafe(authorization.verification_uri)}`);
    tell('and enter the code:');
    tell(`  ${terminalSafe(authorization.user_code)}`);
    if (authorization.verification_uri_complete) {
      tell(`Or open ${terminalSafe(authorization.verification_uri_complete)} to have the code filled in.`);
    }
    tell(`The code expires in ${expiresIn}.`);
  }

  async function login(options: z.infer<typeof LoginOptions>): Promise<void> {
    const previous = await loadLogin(configDir()).catch(() => null);
    const apiUrl = normalizeApiUrl(options.apiUrl ?? io.env.TICKETING_API_URL ?? previous?.apiUrl ?? DEFAULT_API_URL);
    const waiting = spinner(true);
    const result = await deviceLogin({
      apiUrl,
      scope: options.scope,
      ...(io.fetch ? { fetch: io.fetch } : {}),
      ...(io.clock ? { clock: io.clock } : {}),
      onPrompt: (authorization) => {
        showPrompt(authorization, durationText(authorization.expires_in));
        waiting.start('Waiting for approval…');
      },
    }).finally(() => waiting.stop());

    const stored: StoredLogin = {
      apiUrl,
      key: result.accessToken,
      ...(options.workspace ? { workspace: options.workspace } : {}),
    };
    const path = await saveLogin(configDir(), stored);
    const client = new ApiClient({ ...stored, ...(io.fetch ? { fetch: io.fetch } : {}) });
    const me = await client.get('/me', {}, dataOf(MeSchema)).then(
      (answer) => answer.data,
      () => null,
    );
    const active = me?.workspaces.find((workspace) => workspace.id === me.activeWorkspaceId);
    if (options.workspace && me && active?.id !== options.workspace) {
      tell(`Warning: workspace ${options.workspace} is not one of yours; your default workspace is used instead.`);
    }
    const who = me ? ` as ${terminalSafe(me.name)} <${terminalSafe(me.email)}>` : '';
    const where = active ? `, workspace "${terminalSafe(active.name)}"` : '';
    say(`Logged in to ${apiUrl}${who}${where} with a ${terminalSafe(result.scope)} key.`);
    say(`The key is saved in ${path} (readable only by you); \`ticketing logout\` forgets it.`);
  }

  const program = new Command('ticketing')
    .description('Command-line client of the ticketing service')
    .version(CLIENT_VERSION)
    .option('-w, --workspace <id>', 'act in this workspace (X-Workspace-Id) instead of the stored or default one')
    .option('--strict', 'fail instead of warning when the service ignores part of a request (an unreachable -w)')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride()
    .configureOutput({ writeOut: (text) => write(io.stdout, text), writeErr: (text) => write(io.stderr, text) });

  program
    .command('login')
    .description('log in with the device flow: approve a code in the browser; the key is saved for later commands')
    .option(
      '--api-url <url>',
      `the service's base URL (default: TICKETING_API_URL, the last login, ${DEFAULT_API_URL})`,
    )
    .addOption(new Option('--scope <scope>', 'what the key may do').choices(LOGIN_SCOPES).default('write'))
    .action(async (_options: unknown, command: Command) => {
      await login(parseOptions(LoginOptions, command.optsWithGlobals()));
    });

  program
    .command('logout')
    .description('revoke the saved key at the service, then forget it')
    .option('--local', 'only forget the saved key, without revoking it (when the service cannot be reached)')
    .action(async (options: unknown) => {
      const { local } = parseOptions(LogoutOptions, options);
      const directory = configDir();
      // A file this client cannot read holds no key it could revoke: forgetting it is all logout can do.
      const login = await loadLogin(directory).catch(() => null);
      if (login && !local) await revokeKey(login.apiUrl, login.key, io.fetch ?? fetch);
      if (!(await deleteLogin(directory))) return say('Not logged in.');
      if (login && !local) say(`Logged out: the key is revoked at ${login.apiUrl} and removed from ${directory}.`);
      else {
        say(`Logged out; removed the key from ${directory}.`);
        tell('The key was not revoked: it works until it is revoked (DELETE /api/v1/api-keys/{id}) or expires.');
      }
    });

  const events = program.command('events').description('events of the workspace');
  events
    .command('list')
    .description('list events, newest first (every page, or --limit)')
    .option('--status <status>', 'DRAFT, PUBLISHED or CANCELLED')
    .option('--limit <n>', 'stop after n events')
    .option('--json', 'print the events as JSON')
    .action(async (options: unknown, command: Command) => {
      const { json } = parseOptions(JsonFlag, options);
      const filters = parseOptions(EventsListOptions, options);
      const rows = await listEvents(await signedIn(command), filters);
      if (json) say(JSON.stringify(rows, null, 2));
      else say(rows.length ? renderTable(rows, EVENT_COLUMNS) + plural(rows.length, 'event', 'events') : 'No events.');
    });

  const salesFilters = (command: Command): Command =>
    command
      .addOption(new Option('--status <status>', 'sale status').choices(SALE_STATUSES))
      .option('--event <id>', 'only sales of this event')
      .option('--from <day|time>', 'created on or after: a day (UTC) like 2026-11-01, or an ISO 8601 time')
      .option('--to <day|time>', 'created on or before: a day (UTC, the whole day) or an ISO 8601 time')
      .option('--limit <n>', 'stop after n sales');

  const sales = program.command('sales').description('sales of the workspace');
  salesFilters(sales.command('list').description('list sales, newest first (every page, or --limit)'))
    .option('--json', 'print the sales as JSON')
    .action(async (options: unknown, command: Command) => {
      const { json } = parseOptions(JsonFlag, options);
      const query = salesQuery(parseOptions(SalesFilterOptions, options));
      const client = await signedIn(command);
      const progress = spinner(!json).start('Fetching sales…');
      const rows: SaleRow[] = [];
      try {
        for await (const page of salePages(client, query)) {
          rows.push(...page);
          progress.text = `Fetching sales… ${rows.length}`;
        }
      } finally {
        progress.stop();
      }
      if (json) say(JSON.stringify(rows, null, 2));
      else
        say(rows.length ? renderTable(rows, SALE_COLUMNS) + plural(rows.length, 'sale', 'sales') : 'No sales match.');
    });

  salesFilters(sales.command('export').description('write every matching sale as CSV or JSON, to a file or stdout'))
    .addOption(new Option('--format <format>', 'file format').choices(EXPORT_FORMATS).default('csv'))
    .option('--out <file>', 'write to this file instead of stdout')
    .action(async (options: unknown, command: Command) => {
      const { format, out } = parseOptions(ExportOptions, options);
      const query = salesQuery(parseOptions(SalesFilterOptions, options));
      const client = await signedIn(command);
      const progress = spinner(true).start('Exporting sales…');
      try {
        const count = await exportSales(client, query, out ? fileSink(out) : stdoutSink(io.stdout), {
          format,
          byteOrderMark: out !== undefined && format === 'csv',
          onProgress: (written) => {
            progress.text = `Exporting sales… ${written}`;
          },
        });
        const done = `Exported ${plural(count, 'sale', 'sales')}${out ? ` to ${out}` : ''}`;
        if (progress.isEnabled) progress.succeed(done);
        else if (out) tell(done);
      } finally {
        if (progress.isSpinning) progress.stop();
      }
    });

  try {
    await program.parseAsync([...argv], { from: 'user' });
    return 0;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 2;
    if (error instanceof CliError) {
      tell(`error: ${error.message}`);
      return error.exitCode;
    }
    tell(`error: unexpected failure: ${terminalSafe(messageOf(error))}`);
    return 1;
  }
}

/** One line for a warning of the list envelope (contract part 2), naming the workspace that answered instead. */
function describeWarning(warning: ApiWarning): string {
  const shown = warning.activeWorkspaceName
    ? `; showing workspace "${warning.activeWorkspaceName}" (${warning.activeWorkspaceId ?? '?'}) instead`
    : '';
  return terminalSafe(`${warning.message}${shown} (${warning.code})`);
}

function durationText(seconds: number): string {
  if (seconds < 90) return plural(Math.round(seconds), 'second', 'seconds');
  return plural(Math.round(seconds / 60), 'minute', 'minutes');
}
