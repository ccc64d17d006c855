import { type DestinationStream, type Logger, type LoggerOptions, pino } from 'pino';

/**
 * Paths that may carry credentials or card data. pino removes them before a line is written, so a secret
 * never reaches a log sink even when a whole request or payload object is logged by mistake.
 */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers["x-customer-session"]',
  'req.headers["x-purchase-session"]',
  'req.headers.cookie',
  'headers.authorization',
  'headers["x-api-key"]',
  '*.apiKey',
  '*.secret',
  '*.signingSecret',
  '*.token',
  '*.cardToken',
  '*.cardNumber',
  '*.securityCode',
  '*.password',
  '*.code',
];

/**
 * The one log format of every process (API, worker, sandbox): ISO time, the service's name, secrets redacted. The API
 * hands this same logger to Fastify, so its request lines look like every other line.
 */
export function createLogger(options: {
  level?: LoggerOptions['level'];
  name: string;
  /** Paths redacted beside REDACTED_PATHS (a process's own secret headers). */
  redact?: string[];
  /** Where lines go: standard output unless a test reads them. */
  destination?: DestinationStream;
}): Logger {
  return pino(
    {
      name: options.name,
      level: options.level ?? 'info',
      redact: { paths: [...REDACTED_PATHS, ...(options.redact ?? [])], censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
      base: { service: options.name },
      serializers: { req: requestForLog },
    },
    options.destination,
  );
}

/** What a request line says about the request: never its query values (a buyer's search term, a link's token). */
function requestForLog(request: {
  method?: string;
  url?: string;
  ip?: string;
  host?: string;
  socket?: { remotePort?: number };
}) {
  return {
    method: request.method,
    url: request.url === undefined ? undefined : withoutQueryValues(request.url),
    host: request.host,
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
  };
}

/** `/path?q=ana&limit=5` → `/path?q=[redacted]&limit=[redacted]`: which parameters were sent, not their values. */
export function withoutQueryValues(url: string): string {
  const at = url.indexOf('?');
  if (at < 0) return url;
  const names = [...new Set(new URLSearchParams(url.slice(at + 1)).keys())];
  return `${url.slice(0, at)}?${names.map((name) => `${encodeURIComponent(name)}=[redacted]`).join('&')}`;
}
