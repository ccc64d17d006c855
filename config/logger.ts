import { type Logger, type LoggerOptions, pino } from 'pino';

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

export function createLogger(options: { level?: LoggerOptions['level']; name: string }): Logger {
  return pino({
    name: options.name,
    level: options.level ?? 'info',
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
    base: { service: options.name },
  });
}
