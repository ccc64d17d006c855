import type { LogLevel, LogMetadata, Logger as TemporalLogger } from '@temporalio/common';
import type { Logger } from 'pino';

const PINO_METHOD: Record<LogLevel, 'trace' | 'debug' | 'info' | 'warn' | 'error'> = {
  TRACE: 'trace',
  DEBUG: 'debug',
  INFO: 'info',
  WARN: 'warn',
  ERROR: 'error',
};

/**
 * The Temporal SDK's runtime logger (and the native core's logs, when forwarded) written through our pino logger, so
 * the worker has one log format: JSON lines with ISO time, `service` and the same redaction as everything else.
 * The SDK passes errors under `error`; pino serializes an Error (stack included) on one line only under `err`.
 */
export function temporalRuntimeLogger(logger: Logger): TemporalLogger {
  const write = (level: LogLevel, message: string, meta?: LogMetadata): void => {
    const { error, ...fields } = meta ?? {};
    const extra = error instanceof Error ? { ...fields, err: error } : meta;
    logger[PINO_METHOD[level]]({ component: 'temporal-sdk', ...extra }, message);
  };
  return {
    log: write,
    trace: (message, meta) => write('TRACE', message, meta),
    debug: (message, meta) => write('DEBUG', message, meta),
    info: (message, meta) => write('INFO', message, meta),
    warn: (message, meta) => write('WARN', message, meta),
    error: (message, meta) => write('ERROR', message, meta),
  };
}
