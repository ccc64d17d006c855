/**
 * `ticketing sales export`: every matching sale written as CSV or JSON while the pages arrive, to a file or stdout.
 * A file is written under a temporary name and renamed when the last page is in, so an interrupted export never
 * leaves a file that looks complete.
 */
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import type { Writable } from 'node:stream';
import { CSV_BOM, type CsvValue, csvLine } from '../api/reports/csv.js';
import type { ApiClient } from './api-client.js';
import { SALE_EXPORT_COLUMNS, type SaleRow, type SalesQuery, salePages } from './sales.js';

export const EXPORT_FORMATS = ['csv', 'json'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

export interface ExportSink {
  /** Resolves once the stream can take more, so a slow disk or pipe slows the download instead of filling memory. */
  write(chunk: string): Promise<void>;
  finish(): Promise<void>;
  abandon(): Promise<void>;
}

async function writeTo(stream: Writable, chunk: string): Promise<void> {
  if (!stream.write(chunk)) await once(stream, 'drain');
}

export function stdoutSink(stream: Writable = process.stdout): ExportSink {
  return { write: (chunk) => writeTo(stream, chunk), finish: async () => undefined, abandon: async () => undefined };
}

export function fileSink(path: string): ExportSink {
  const partial = `${path}.part`;
  const stream = createWriteStream(partial, { flags: 'w', mode: 0o600 });
  const closed = new Promise<void>((resolve, reject) => {
    stream.once('close', resolve);
    stream.once('error', reject);
  });
  // Awaited by finish/abandon and raced by write; this only keeps an early open error from being "unhandled".
  closed.catch(() => undefined);
  return {
    write: (chunk) => Promise.race([writeTo(stream, chunk), closed]),
    async finish() {
      stream.end();
      await closed;
      await rename(partial, path);
    },
    async abandon() {
      stream.destroy();
      await closed.catch(() => undefined);
      await rm(partial, { force: true });
    },
  };
}

/** A Sale field as a CSV cell; a field that is not a scalar (none today) is written as its JSON. */
function cell(value: unknown): CsvValue {
  if (value === null || value === undefined) return value;
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return value;
  return JSON.stringify(value);
}

export const saleCsvLine = (sale: SaleRow): string => csvLine(SALE_EXPORT_COLUMNS.map((column) => cell(sale[column])));

export interface ExportOptions {
  format: ExportFormat;
  /** The UTF-8 byte-order mark spreadsheets need to read accents; for files, not for pipes. */
  byteOrderMark: boolean;
  onProgress?(rowsWritten: number): void;
}

/** Writes every sale `query` selects into `sink`; returns how many were written. */
export async function exportSales(
  client: ApiClient,
  query: SalesQuery,
  sink: ExportSink,
  options: ExportOptions,
): Promise<number> {
  let written = 0;
  try {
    if (options.format === 'csv') {
      await sink.write(`${options.byteOrderMark ? CSV_BOM : ''}${csvLine([...SALE_EXPORT_COLUMNS])}`);
    } else {
      await sink.write('[');
    }
    for await (const page of salePages(client, query)) {
      const text =
        options.format === 'csv'
          ? page.map(saleCsvLine).join('')
          : page.map((sale, index) => `${written + index === 0 ? '\n' : ',\n'}${JSON.stringify(sale)}`).join('');
      await sink.write(text);
      written += page.length;
      options.onProgress?.(written);
    }
    if (options.format === 'json') await sink.write(written === 0 ? ']\n' : '\n]\n');
    await sink.finish();
    return written;
  } catch (error) {
    await sink.abandon();
    throw error;
  }
}
