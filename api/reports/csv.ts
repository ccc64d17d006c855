/**
 * CSV for spreadsheets (RFC 4180): comma separated, CRLF line ends, UTF-8 with a byte-order mark so Excel reads
 * "Gómez" as written. A cell a spreadsheet would run as a formula (leading `=`, `+`, `-`, `@`, tab or carriage
 * return; OWASP "CSV injection") is prefixed with a single quote, which spreadsheets show as text. Numbers we write
 * ourselves (amounts, counts) are not prefixed, so a negative net stays a number.
 */
export const CSV_BOM = '\uFEFF';
const FORMULA_START = /^[=+\-@\t\r]/;
const NEEDS_QUOTES = /[",\r\n]/;

export type CsvValue = string | number | boolean | null | undefined | Date;

export function csvCell(value: CsvValue): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new RangeError(`a CSV cell cannot hold ${value}`);
    return String(value);
  }
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  let text = value instanceof Date ? value.toISOString() : value;
  if (FORMULA_START.test(text)) text = `'${text}`;
  return NEEDS_QUOTES.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

export const csvLine = (values: readonly CsvValue[]): string => `${values.map(csvCell).join(',')}\r\n`;
