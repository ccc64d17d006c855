/**
 * The little HTTP client the commands share: the B2B API under {apiUrl}/api/v1 with the stored key (contract 5.2),
 * responses checked against the shapes the client relies on, the contract's error body turned into one line, and
 * list pagination (contract 4.0: `limit` and `cursor`, `page.nextCursor` / `page.hasMore`) followed for the caller.
 */
import { z } from 'zod';
import { CliError, KEY_REFUSED, networkReason, UsageError } from './errors.js';
import { terminalSafe } from './text.js';

export type Fetch = typeof fetch;
export type Query = Record<string, string | number | undefined>;

export const CLIENT_VERSION = '0.1.0';
export const USER_AGENT = `ticketing-cli/${CLIENT_VERSION}`;
const REQUEST_TIMEOUT_MS = 30_000;
/** The contract's largest page (part 8). */
export const MAX_PAGE_SIZE = 100;

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * The service's base URL as the user may type it (`https://tickets.example.com`, with or without a trailing
 * `/api/v1`), reduced to the origin and path prefix every request is built on. The key travels with every
 * request, so plain http is accepted only for this machine.
 */
export function normalizeApiUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new UsageError(`API URL "${raw}" is not a URL (example: https://tickets.example.com)`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new UsageError(`API URL must start with https:// (got ${url.protocol})`);
  }
  if (url.protocol === 'http:' && !LOOPBACK_HOSTS.has(url.hostname)) {
    throw new UsageError('API URL must use https: the API key would travel in clear over plain http');
  }
  if (url.username || url.password || url.search || url.hash) {
    throw new UsageError('API URL takes no user name, password, query or fragment');
  }
  const path = url.pathname.replace(/\/+$/, '').replace(/\/api\/v1$/, '');
  return `${url.origin}${path}`;
}

export const ErrorBodySchema = z.object({
  error: z.object({ code: z.string(), message: z.string(), retryable: z.boolean().optional(), details: z.unknown() }),
});
const FieldProblemsSchema = z.object({ fields: z.array(z.object({ field: z.string(), message: z.string() })) });

const PageSchema = z.object({ nextCursor: z.string().nullable(), hasMore: z.boolean() });

export const listOf = <T extends z.ZodType>(item: T) => z.object({ data: z.array(item), page: PageSchema });

/** A warning of the list envelope (contract part 2): what the service ignored or chose, e.g. an unreachable workspace. */
const WarningSchema = z.looseObject({
  code: z.string(),
  message: z.string(),
  activeWorkspaceId: z.string().optional(),
  activeWorkspaceName: z.string().optional(),
});
export type ApiWarning = z.infer<typeof WarningSchema>;
const WarningsSchema = z.looseObject({ warnings: z.array(WarningSchema).optional() });
export const dataOf = <T extends z.ZodType>(item: T) => z.object({ data: item });

/** One line out of the contract's error body (part 7.1); VALIDATION_FAILED names every refused field. */
export function describeErrorBody(status: number, body: unknown): string {
  const parsed = ErrorBodySchema.safeParse(body);
  if (!parsed.success) return `The service answered HTTP ${status}`;
  const { code, message, details } = parsed.data.error;
  const fields = FieldProblemsSchema.safeParse(details);
  const more = fields.success ? fields.data.fields.slice(1).map((f) => `${f.field}: ${f.message}`) : [];
  return terminalSafe(`${[message, ...more].join('; ')} (${code})`);
}

export interface ApiClientOptions {
  apiUrl: string;
  key: string;
  workspace?: string | undefined;
  fetch?: Fetch;
  /** Told each distinct warning the service answers with, once; may throw to stop the command. */
  onWarning?: (warning: ApiWarning) => void;
}

export class ApiClient {
  readonly apiUrl: string;
  readonly #key: string;
  readonly #workspace: string | undefined;
  readonly #fetch: Fetch;
  readonly #onWarning: ((warning: ApiWarning) => void) | undefined;
  readonly #warned = new Set<string>();

  constructor(options: ApiClientOptions) {
    this.apiUrl = normalizeApiUrl(options.apiUrl);
    this.#key = options.key;
    this.#workspace = options.workspace;
    this.#fetch = options.fetch ?? fetch;
    this.#onWarning = options.onWarning;
  }

  url(path: string, query: Query = {}): URL {
    const url = new URL(`${this.apiUrl}/api/v1${path}`);
    for (const [name, value] of Object.entries(query)) {
      if (value !== undefined) url.searchParams.set(name, String(value));
    }
    return url;
  }

  /** GET a JSON resource and check it has the shape `schema` describes. */
  async get<T extends z.ZodType>(path: string, query: Query, schema: T): Promise<z.infer<T>> {
    const url = this.url(path, query);
    let response: Response;
    try {
      response = await this.#fetch(url, {
        headers: {
          accept: 'application/json',
          authorization: `Bearer ${this.#key}`,
          'user-agent': USER_AGENT,
          ...(this.#workspace ? { 'x-workspace-id': this.#workspace } : {}),
        },
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    } catch (error) {
      throw new CliError(`Cannot reach ${this.apiUrl}: ${networkReason(error)}`, { cause: error });
    }
    const body: unknown = await response.json().catch(() => undefined);
    if (response.status === 401) throw new CliError(KEY_REFUSED);
    if (!response.ok) throw new CliError(describeErrorBody(response.status, body));
    for (const warning of WarningsSchema.safeParse(body).data?.warnings ?? []) {
      const seen = `${warning.code}:${warning.message}`;
      if (this.#warned.has(seen)) continue;
      this.#warned.add(seen);
      this.#onWarning?.(warning);
    }
    const parsed = schema.safeParse(body);
    if (!parsed.success) {
      throw new CliError(`Unexpected answer from GET ${url.pathname}: ${z.prettifyError(parsed.error).split('\n')[0]}`);
    }
    return parsed.data;
  }

  /**
   * Every row of a list, page after page, until the list ends or `limit` rows came. Pages are yielded as they
   * arrive, so a long export writes while it downloads. Newest-first keyset cursors (api/http/pagination.ts) never
   * repeat a row, but a cursor that comes back unchanged would loop forever, so that is an error.
   */
  async *pages<T extends z.ZodType>(
    path: string,
    query: Query,
    item: T,
    options: { limit?: number | undefined } = {},
  ): AsyncGenerator<Array<z.infer<T>>> {
    const schema = listOf(item);
    let remaining = options.limit ?? Number.POSITIVE_INFINITY;
    let cursor: string | undefined;
    const seen = new Set<string>();
    while (remaining > 0) {
      const size = Math.min(MAX_PAGE_SIZE, remaining);
      const { data, page } = await this.get(path, { ...query, limit: size, cursor }, schema);
      const rows = data.slice(0, size);
      remaining -= rows.length;
      if (rows.length > 0) yield rows;
      if (!page.hasMore || page.nextCursor === null || rows.length === 0) return;
      if (seen.has(page.nextCursor)) throw new CliError(`GET ${path} returned the same page cursor twice; stopped`);
      seen.add(page.nextCursor);
      cursor = page.nextCursor;
    }
  }
}
